"""Checks that say what users say: a role and a name, a state, a value, a text within an
element, a count, media playing and advancing, and the negation of any check, evaluated
by the engine in the page (one round trip, shadow roots and frames included), and held
to what a person sees on the widgets page and the player."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.browser.page import evaluate
from pytest_netgent.workflow.automaton import Automaton, Check, parse_automaton

from .helpers import until

ROOT = Path(__file__).resolve().parent.parent


def holds(driver: Any, *checks: dict[str, Any], wait_ms: int = 0) -> list[tuple[bool, str]]:
    """Each check's result on the page now, validated as a cache file would be."""
    typed = [Check.model_validate(c).model_dump() for c in checks]
    tick = evaluate(driver, [{"checks": [c]} for c in typed], None, wait_ms)
    assert tick.ok, tick.error
    return [row[0] for row in tick.results]


def role(role: str, **params: Any) -> dict[str, Any]:
    return {"type": "role", "params": {"role": role, **params}}


@pytest.fixture
def widgets(netgent_browser: Any, base_url: str) -> Any:
    driver = netgent_browser.driver
    driver.get(base_url + "/widgets/")
    until(driver, "return !!document.querySelector('[role=combobox]')", 10)
    return driver


def test_roles_names_states_and_values_are_checked_as_users_perceive_them(widgets: Any) -> None:
    cases = [
        (role("heading", name="Settings"), True),
        (role("heading", name="settings"), False),  # exact: its case too
        (role("heading", name="sett", match="contains"), True),
        (role("tab", name="General", state="selected"), True),
        (role("tab", name="Privacy", state="selected"), False),
        (role("tab", count=2), True),  # the aria-hidden copy of the tab bar is not there
        (role("checkbox", name="Newsletter", state="checked"), True),
        (role("checkbox", name="Newsletter", state="unchecked"), False),
        (role("slider", name="Volume", value=7), True),
        (role("slider", name="Volume", value="7.0"), True),  # numbers by value
        (role("combobox", name="City", value="Rome"), True),
        (role("combobox", name="Country", state="collapsed"), True),
        (role("option", name="France"), False),  # drawn only while its list is open
        (role("button", name="Delete account", state="disabled"), True),
        (role("button", name="More options", state=["collapsed", "enabled"]), True),
        (role("textbox", name="Display name", value="Ada"), True),
        (role("textbox", name="Bio", value="Hello"), True),  # a contenteditable editor's text
        (role("textbox", name="Password", value="(filled)"), True),  # never its secret
        (role("table", name="Devices", text="Laptop"), True),
        (role("row", at_least=3, within="Devices"), True),
        (role("cell", name="Phone", within="Devices"), True),
        (role("button", name="Reset"), False),  # hidden until "More options" is pressed
        (role("dialog"), False),
    ]
    results = holds(widgets, *(c for c, _ in cases))
    for (check, expected), (ok, why) in zip(cases, results, strict=True):
        assert ok is expected, (check, why)


def test_any_check_negated_holds_where_it_does_not_and_an_error_is_never_a_pass(
    widgets: Any,
) -> None:
    results = holds(
        widgets,
        {**role("button", name="Reset"), "params": {"role": "button", "name": "Reset",
                                                    "negate": True}},
        {"type": "text", "params": {"text": "Saved 2 minutes ago", "negate": True}},
        {"type": "url", "params": {"url": "/wiki/", "match": "contains", "negate": True}},
        {"type": "element", "params": {"by": "css selector", "selector": "tr", "count": 3}},
        {"type": "element", "params": {"by": "css selector", "selector": "td",
                                       "text": "Yesterday", "negate": True}},
        {"type": "url", "params": {"url": "(unclosed", "match": "pattern", "negate": True}},
    )  # fmt: skip
    assert [ok for ok, _ in results] == [True, False, True, True, False, False]
    assert "must not" in results[1][1]
    assert "regular expression" in results[5][1].lower() or "invalid" in results[5][1].lower()


def test_a_state_that_changes_is_seen_by_the_same_checks(widgets: Any) -> None:
    widgets.find_element("css selector", "#more-button").click()
    widgets.find_element("css selector", "[role=combobox]").click()
    results = holds(
        widgets,
        role("button", name="More options", state="expanded"),
        role("button", name="Reset"),
        role("option", name="Norway"),
        role("combobox", name="Country", state=["expanded", "focused"]),
        wait_ms=2000,
    )
    assert all(ok for ok, _ in results), results


def test_a_video_is_checked_playing_advancing_and_at_a_height(
    netgent_browser: Any, base_url: str
) -> None:
    driver = netgent_browser.driver
    driver.get(base_url + "/vod/watch/ocean-deep")
    until(driver, "return !!document.querySelector('video')", 10)
    driver.find_element("css selector", "#play").click()
    playing = {"type": "media", "params": {"state": "playing", "min_height": 100}}
    tick = evaluate(driver, [{"checks": [Check.model_validate(playing).model_dump()]}], None, 8000)
    assert tick.matched == [0], tick.results
    advancing = Check.model_validate({"type": "media", "params": {"advanced": 1.5}}).model_dump()
    first = evaluate(driver, [{"checks": [advancing]}], None, 0)
    assert first.matched == [] and "advance" in first.results[0][0][1]
    later = evaluate(driver, [{"checks": [advancing]}], None, 6000)
    assert later.matched == [0], later.results
    driver.find_element("css selector", "#pause").click()
    results = holds(
        driver,
        {"type": "media", "params": {"state": "paused", "selector": "video#player"}},
        {"type": "media", "params": {"state": "playing", "negate": True}},
        {"type": "media", "params": {"min_height": 5000}},
        wait_ms=3000,
    )
    assert [ok for ok, _ in results] == [True, True, False], results
    assert "px high" in results[2][1]


def test_a_cache_file_is_written_at_the_lowest_format_that_holds_it() -> None:
    plain = {"states": [{"name": "A", "checks": [{"type": "text", "params": {"text": "x"}}]}]}
    assert '"format": 1' in parse_automaton(plain).to_json()
    newer = {"states": [{"name": "A", "checks": [role("button", name="Go")]}]}
    written = parse_automaton(newer).to_json()
    assert '"format": 2' in written
    assert Automaton.model_validate_json(written).states[0].checks[0].type == "role"
    with pytest.raises(ValueError, match="newer pytest-netgent"):
        parse_automaton({**newer, "format": 3})


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"role": "buton"}, "did you mean 'button'"),
        ({"role": "button", "state": "open"}, "state: Input should be"),
        ({"role": "slider", "value": [1]}, "value"),
        ({"role": "button", "nth": 2}, "unknown parameter 'nth'"),
    ],
)
def test_a_wrong_role_check_names_its_field_and_what_it_takes(
    params: dict[str, Any], said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        parse_automaton({"states": [{"name": "S", "checks": [{"type": "role", "params": params}]}]})


def test_the_cache_schema_takes_every_committed_file_and_every_type_s_example() -> None:
    from jsonschema import Draft202012Validator

    from pytest_netgent.workflow.vocabulary import CHECK_EXAMPLES

    validator = Draft202012Validator(Automaton.model_json_schema())
    files = sorted(ROOT.glob("*/**/__netgent__/**/*.json"))
    assert len(files) >= 20
    for path in files:
        errors = [e.message for e in validator.iter_errors(json.loads(path.read_text()))]
        assert not errors, (path, errors[:3])
    for type_, params in CHECK_EXAMPLES.items():
        doc = {"states": [{"name": "S", "checks": [{"type": type_, "params": params}]}]}
        assert not list(validator.iter_errors(doc)), type_
        parse_automaton(doc)  # and the package reads it
    wrong = {"states": [{"name": "S", "checks": [{"type": "role", "params": {"name": "Go"}}]}]}
    assert list(validator.iter_errors(wrong))  # a role check names its role


SETTINGS = """
name: settings
start_url: "{base_url}/widgets/"
states:
  - name: Settings
    triggers:
      - The 'Delete account' button is disabled
      - The Volume slider is at 7
      - The Newsletter checkbox is checked
      - The 'More options' button is collapsed
    actions: [Click the 'More options' button]
  - name: More shown
    triggers: [The 'More options' button is expanded, The Display name field is not empty]
    end: More options shown
"""


def test_the_builtin_reads_states_and_values_as_users_say_them(
    project: Any, netgent_browser: Any, changed_url: str
) -> None:
    """Sentences about an element's state or value become role checks of the page model:
    they hold where the page shows that state, replay without synthesis, and a state the
    page does not show is not this page (the recording stops there, nothing written).
    Found by role and name, the states replay on the page's cosmetic variant too (every id
    and class renamed, the roles and names kept)."""
    from pytest_netgent.synthesis.builtin import BuiltinSynthesiser

    path = project.workflow("settings", SETTINGS)
    result = netgent_browser.run(path, record="all", synthesiser=BuiltinSynthesiser())
    assert result.passed, result.error
    cache = json.loads((path.parent / "__netgent__" / "settings" / "settings.json").read_text())
    first = cache["states"][0]["checks"]
    assert {"type": "role", "params": {"role": "button", "name": "Delete account",
                                       "state": "disabled"}} in first  # fmt: skip
    assert {"type": "role", "params": {"role": "slider", "name": "Volume", "value": "7"}} in first
    assert cache["format"] == 2
    replayed = netgent_browser.run(path)
    assert replayed.passed and replayed.states_visited == ["Settings", "More shown"]
    cosmetic = netgent_browser.run(path, base_url=changed_url)
    assert cosmetic.passed, cosmetic.error
    wrong = SETTINGS.replace("is at 7", "is at 3")
    path = project.workflow("settings", wrong)
    failed = netgent_browser.run(path, record="all", synthesiser=BuiltinSynthesiser(),
                                 check=False)  # fmt: skip
    assert not failed.passed


def test_a_huge_page_is_read_or_refused_by_name_never_waited_on(widgets: Any) -> None:
    def grow(count: int) -> None:
        widgets.execute_script(
            "const box = document.createElement('div');"
            "for (let i = 0; i < arguments[0]; i++) {"
            "  const p = document.createElement('p'); p.textContent = 'row ' + i; box.append(p);"
            "}"
            "const b = document.createElement('button'); b.textContent = 'Load more';"
            "box.append(b); document.body.append(box);",
            count,
        )

    grow(10_000)
    assert holds(widgets, role("button", name="Load more"))[0][0]
    grow(15_000)
    ok, why = holds(widgets, role("button", name="Load more"))[0]
    assert not ok and "more than 20000 elements" in why
