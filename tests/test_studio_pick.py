"""``netgent studio``: a person answers what record declined, by pointing at the page.

A record of the wiki's login declines "Click 'Log in'" (a link and a button both say
it): the run leaves pick.json and pick.png in the item's artifacts folder and names the
command that opens them. Headless Chromium opens the studio and sees what a user would:
the page with its elements boxed and the candidates highlighted; clicking the button's
box and "Use this element" records the item with it, replays it, and writes the cache,
which plain pytest then replays. A pick that does not work leaves the cache untouched.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import pytest

from pytest_netgent.cli import main as netgent
from pytest_netgent.studio.pick_server import serve
from pytest_netgent.synthesis.picks import (
    LEGACY,
    PickError,
    Step,
    guess,
    picks_path,
    read_step,
)

from .helpers import Project, css, headless_chromium, until, url_is

pytestmark = pytest.mark.xdist_group("studio")

LOGIN = """
name: login
start_url: "{base_url}/wiki/login"
states:
  - name: Form
    triggers: ["The page says 'Username'"]
    actions:
      - Type 'researcher' into the Username field
      - Type 'netgent-pass' into the Password field
      - Click 'Log in'
  - name: Welcome
    triggers: ["The page says 'Welcome, researcher'"]
    end: Logged in
"""


def declined(project: Project) -> tuple[Path, Path]:
    """Record the login, which declines its third instruction: the step file and the
    cache file (not written)."""
    project.workflow("login", LOGIN)
    result = project.run("--netgent-record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*'Log in' is ambiguous*", "*pick the element by hand: "
                                 "netgent studio *pick.json"])  # fmt: skip
    (step_file,) = project.path.rglob("pick.json")
    cache = project.path / "__netgent__" / "login" / "login.json"
    assert not cache.exists()
    return step_file, cache


def test_a_declined_instruction_leaves_its_step(project: Project) -> None:
    step_file, _cache = declined(project)
    step = read_step(step_file)
    assert (step.state, step.number, step.instruction) == ("Form", 3, "Click 'Log in'")
    assert (step.action, step.text) == ("click", "")
    assert step.picture and (step_file.parent / "pick.png").read_bytes()[:4] == b"\x89PNG"
    named = {c.mmid: step.elements[[e.mmid for e in step.elements].index(c.mmid)]
             for c in step.candidates}  # fmt: skip
    tags = sorted(e.tag for e in named.values())
    assert "a" in tags and "button" in tags  # the link and the button, both scored
    assert all(e.box is not None for e in named.values())
    # what to record again, not how: the studio makes the command itself
    assert (step.workflow_file, step.item) == ("login.netgent.yaml", "login")
    assert step.base_url == project.base_url
    assert not LEGACY & json.loads(step_file.read_text()).keys()
    assert step.viewport[0] > 0


def test_a_passing_replay_forgets_an_earlier_step(project: Project) -> None:
    step_file, _cache = declined(project)
    project.run().assert_outcomes(failed=1)  # nothing cached yet: the step still asks
    assert step_file.exists() and (step_file.parent / "pick.png").exists()
    kept = step_file.read_bytes(), (step_file.parent / "pick.png").read_bytes()
    project.workflow("login", LOGIN.replace("Click 'Log in'", "Click the 'Log in' button"))
    project.run("--netgent-record").assert_outcomes(passed=1)
    assert not step_file.exists()
    # a step left from before the cache was mended (by hand, or on another machine)
    step_file.write_bytes(kept[0])
    (step_file.parent / "pick.png").write_bytes(kept[1])
    project.run().assert_outcomes(passed=1)
    assert not step_file.exists() and not (step_file.parent / "pick.png").exists()


def test_pick_in_the_studio_writes_a_state_that_replays(project: Project) -> None:
    step_file, cache = declined(project)
    with serve(step_file) as studio, headless_chromium() as chrome:
        chrome.get(studio.url)
        until(chrome, "return document.querySelectorAll('#page .box').length > 3", 240)
        boxes = chrome.execute_script(
            "return [...document.querySelectorAll('#page .box.candidate')].map(b => b.title)"
        )
        assert len(boxes) >= 2 and any("<button>" in t for t in boxes), boxes
        assert chrome.execute_script("return document.getElementById('shot').naturalWidth") > 0
        assert "Click 'Log in'" in chrome.find_element("id", "instruction").text
        chrome.execute_script(
            "[...document.querySelectorAll('#page .box.candidate')]"
            ".find(b => b.title.includes('<button>')).click()"
        )
        assert "<button>" in chrome.find_element("id", "chosen").text
        chrome.find_element("id", "use").click()
        message = until(
            chrome,
            "const r = document.getElementById('result');"
            "return /ok|failed/.test(r.className) && r.textContent",
            240,
        )
        assert chrome.find_element("id", "result").get_attribute("class") == "ok", message
    doc = json.loads(cache.read_text())
    form = next(s for s in doc["states"] if s["name"] == "Form")
    click = form["actions"][-1]
    assert (click["type"], click["params"]["selector"]) == ("click", "#login-button")
    # the element's other locators, stored for healing
    assert {"by": "css selector", "selector": "#login-form button"} in (
        click["params"]["alternatives"]
    )
    assert not picks_path(cache).exists()  # the cache holds the pick now
    assert not step_file.exists()  # the step is answered
    project.run().assert_outcomes(passed=1)  # plain replay, no synthesis


def test_a_pick_that_does_not_work_writes_nothing(project: Project) -> None:
    step_file, cache = declined(project)
    step = read_step(step_file)
    # the chosen element is gone by the time the item records again
    heading = next(e for e in step.elements if e.tag == "button")
    heading.selectors = [s.model_copy(update={"selector": "#gone"}) for s in heading.selectors]
    step_file.write_text(step.model_dump_json())
    with serve(step_file, timeout=300) as studio:
        answer = post(studio.url + "pick", {"mmid": heading.mmid, "action": "click"})
    assert answer["ok"] is False
    assert "not kept" in answer["message"] and "is not on" in answer["message"]
    assert not cache.exists() and not picks_path(cache).exists()


def test_a_picked_action_the_page_refuses_is_tried_once(project: Project) -> None:
    step_file, cache = declined(project)
    button = next(e for e in read_step(step_file).elements if e.tag == "button")
    with serve(step_file, timeout=300) as studio:
        answer = post(
            studio.url + "pick", {"mmid": button.mmid, "action": "press_key", "text": "Blue"}
        )
    assert answer["ok"] is False
    message = answer["message"]
    assert "the action picked in the studio failed" in message and "unknown key 'Blue'" in message
    assert message.count("press_key css selector='#login-button' key='Blue'\n") <= 2
    assert not cache.exists() and not picks_path(cache).exists()


def post(url: str, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return dict(json.loads(response.read()))


def test_bad_picks_and_foreign_requests(project: Project, tmp_path: Path) -> None:
    step_file, cache = declined(project)
    with serve(step_file) as studio:
        assert post(studio.url + "pick", {"mmid": 99999})["message"] == (
            "element 99999 is not one of the step's elements"
        )
        button = next(e for e in studio.step.elements if e.tag == "button")
        typed = post(studio.url + "pick", {"mmid": button.mmid, "action": "type"})
        assert typed["message"] == "type needs a text (text)"
        assert post(studio.url + "pick", {"nothing": 1})["message"].startswith("not a pick")
        with pytest.raises(HTTPError) as foreign:
            post(studio.url + "pick", {"mmid": button.mmid}, Origin="http://evil.example")
        assert foreign.value.code == 403
        rebinding = urllib.request.Request(studio.url + "step.json", headers={"Host": "x.test"})
        with pytest.raises(HTTPError) as host:
            urllib.request.urlopen(rebinding, timeout=10)
        assert host.value.code == 403
        with pytest.raises(PickError, match=r"port \d+ is in use: give another with --port N"):
            serve(step_file, port=studio.port)
    assert not cache.exists() and not picks_path(cache).exists()
    cut = tmp_path / "pick.json"
    cut.write_text(step_file.read_text()[:200])
    with pytest.raises(PickError, match=r"pick.json: not a step file .*record the item again"):
        read_step(cut)
    assert netgent(["studio", str(cut)]) == 2
    assert netgent(["studio", str(tmp_path / "none.json")]) == 2


def test_secret_runs_leave_no_picture_and_no_value(project: Project, monkeypatch: Any) -> None:
    monkeypatch.setenv("NETGENT_STUDIO_PASS", "netgent-pass")
    project.workflow(
        "login",
        LOGIN.replace("'netgent-pass'", "'{password}'").replace(
            "states:", "secrets: {password: NETGENT_STUDIO_PASS}\nstates:"
        ),
    )
    project.run("--netgent-record").assert_outcomes(failed=1)
    (step_file,) = project.path.rglob("pick.json")
    assert "netgent-pass" not in step_file.read_text()
    assert not read_step(step_file).picture
    assert not (step_file.parent / "pick.png").exists()
    shutil.rmtree(step_file.parent)


@pytest.mark.parametrize(
    ("instruction", "expected"),
    [
        ("Type 'QUIC' into the search box", ("type", "QUIC")),
        ('Select "Deutsch" from the Language menu', ("select", "Deutsch")),
        ("Hover over the cite link", ("hover", "")),
        ("Press Enter", ("press_key", "Enter")),
        ("Press the blue button", ("click", "")),
        ("Press page down in the editor", ("press_key", "PageDown")),
        ("Scroll to the footer", ("scroll_to", "")),
        ("Open the first result", ("click", "")),
    ],
)
def test_the_studio_guesses_the_action(instruction: str, expected: tuple[str, str]) -> None:
    assert guess(instruction) == expected


def test_step_files_from_a_newer_release_are_refused(tmp_path: Path) -> None:
    newer = Step(workflow="w", state="s", number=1, instruction="i", reason="r", picks="p")
    path = tmp_path / "pick.json"
    path.write_text(newer.model_dump_json().replace('"version":1', '"version":9'))
    with pytest.raises(PickError, match="newer pytest-netgent"):
        read_step(path)


def test_the_step_file_shows_no_secret_the_page_showed(tmp_path: Path) -> None:
    from pytest_netgent.synthesis import Unresolved
    from pytest_netgent.synthesis.observation import Observation, ObservedElement, Selector
    from pytest_netgent.synthesis.picks import Declined
    from pytest_netgent.system.redaction import Redactor

    shown = ObservedElement(
        mmid=1, tag="a", text="Signed in as s3cret-user",
        selectors=[Selector(by="css selector", selector="a[title='s3cret-user']")],
    )  # fmt: skip
    page = Observation(url="http://127.0.0.1/?u=s3cret-user", title="t", elements=[shown])
    error = Unresolved("'s3cret-user' is ambiguous", [(90.0, 1)])
    step = Declined("S", 1, "Click the account", error, page).step(
        "w",
        (800, 600),
        picture=False,
        workflow_file="w.netgent.yaml",
        item="w",
        base_url="",
        redact=Redactor({"user": "s3cret-user"}),
    )
    text = step.model_dump_json()
    assert "s3cret" not in text and "{user}" in text
    assert step.candidates[0].mmid == 1 and step.elements[0].text == "Signed in as {user}"


UNSEEN = """
name: featured
start_url: "{base_url}/wiki/"
state_timeout: 2
states:
  - name: Home
    triggers: [The URL is the wiki home page, "'Featured' is shown"]
    actions: [Click the 'QUIC' link]
  - name: Article
    triggers: ["The page says 'Read the QUIC specification'"]
    end: Article opened
"""


def test_a_page_no_state_recognised_is_named_by_a_picked_element(project: Project) -> None:
    project.workflow("featured", UNSEEN)
    project.run("--netgent-record").assert_outcomes(failed=1)
    (step_file,) = project.path.rglob("pick.json")
    step = read_step(step_file)
    assert (step.kind, step.states) == ("triggers", ["Home", "Article"])
    cache = project.path / "__netgent__" / "featured" / "featured.json"
    with serve(step_file) as studio, headless_chromium() as chrome:
        chrome.get(studio.url)
        until(chrome, "return document.querySelectorAll('#page .box').length > 3", 240)
        assert "No state was recognised" in chrome.find_element("id", "asked").text
        assert chrome.find_element("id", "doing").is_displayed() is False
        chrome.execute_script("document.getElementById('which').value = 'Article'")
        chrome.execute_script(
            "[...document.querySelectorAll('#page .box')]"
            ".find(b => b.title.includes('Printable version')).click()"
        )
        chrome.find_element("id", "use").click()
        message = until(
            chrome,
            "const r = document.getElementById('result');"
            "return /ok|failed/.test(r.className) && r.textContent",
            240,
        )
        assert chrome.find_element("id", "result").get_attribute("class") == "ok", message
    article = next(s for s in json.loads(cache.read_text())["states"] if s["name"] == "Article")
    assert {"type": "element", "params": {"by": "css selector", "selector": "#print-link"}} in (
        article["checks"]
    )
    project.run().assert_outcomes(passed=1)


SUBMIT = 'form[action="/wiki/login"] button'
"""The login form's button on both variants of the wiki."""


def test_a_drifted_action_heals_from_its_alternatives_without_synthesis(
    project: Project, changed_url: str
) -> None:
    """The changed wiki renames every id of its login form; its fields' names and the
    form's action stay: the alternatives stored with the actions heal the state (one that
    names several elements passed over), nothing is synthesised, and the healed cache
    replays on the changed site."""
    file = project.workflow(
        "login",
        LOGIN.replace("Click 'Log in'", "Click the submit button").replace(
            "The page says 'Welcome, researcher'", "The page says 'researcher'"
        ),
    )

    def alt(selector: str, *others: str) -> dict[str, Any]:
        return {**css(selector), "alternatives": [css(o) for o in others]}

    cache = project.states(
        file,
        "login",
        {
            "Form": (
                [url_is("/wiki/login", "contains")],
                [
                    # "form input" names both fields now: passed over for one that names one
                    {"type": "type", "params": {**alt("#username", "form input",
                                                      'input[name="username"]'),
                                                "text": "researcher"}},
                    {"type": "type", "params": {**alt("#password", 'input[name="password"]'),
                                                "text": "netgent-pass"}},
                    {"type": "click", "params": alt("#login-button", SUBMIT)},
                ],
            ),
            "Welcome": ([{"type": "text", "params": {"text": "researcher"}}], []),
        },
    )  # fmt: skip
    project.run().assert_outcomes(passed=1)
    project.run(base_url=changed_url).assert_outcomes(failed=1)  # drift, as replay says
    healed = project.run("--netgent-record", base_url=changed_url)
    healed.assert_outcomes(passed=1)
    healed.stdout.fnmatch_lines(
        ["*healed 'Form'*", "0 states synthesised, 1 healed, 1 files written; steps resolved: "
         "0 by builtin, 0 by the LLM*"]
    )  # fmt: skip
    form = json.loads(cache.read_text())["states"][0]
    assert [a["params"]["selector"] for a in form["actions"]] == [
        'input[name="username"]', 'input[name="password"]', SUBMIT
    ]  # fmt: skip
    assert form["actions"][0]["params"]["alternatives"] == [css("#username"), css("form input")]
    project.run(base_url=changed_url).assert_outcomes(passed=1)


def test_alternatives_are_other_locators_or_the_action_is_refused() -> None:
    from pytest_netgent.workflow.automaton import Action

    good = Action(type="click", params={**css("#a"), "alternatives": [css("a.b")]})
    assert good.describe() == "click css selector='#a'"  # replay's own locator alone
    with pytest.raises(ValueError, match=r"each of 'alternatives' is \{by, selector\}"):
        Action(type="click", params={**css("#a"), "alternatives": ["a.b"]})
    with pytest.raises(ValueError, match=r"each of 'alternatives' is \{by, selector\}"):
        Action(type="type", params={**css("#a"), "text": "x", "alternatives": [
            {"by": "css", "selector": "a"}]})  # fmt: skip
