"""NetGent's newer action types, each with its semantics, against StreamHub (fixtures/hub.py):
a sign-in with environment values, a profile picker, a player that waits for a play, an
icon button known by its accessible name, named tabs and a stored address."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from fixtures import hub
from pytest_netgent import NetgentBrowser, State, Workflow
from pytest_netgent.errors import NetgentError

from .helpers import action, element, state, text


def workflow(*names: str, end: str = "") -> Workflow:
    """States in priority order; ``end`` (default: the last) ends the workflow."""
    states: list[dict[str, Any]] = [{"name": n} for n in names]
    states[names.index(end or names[-1])]["end"] = "done"
    return Workflow.model_validate(
        {"name": "hub", "start_url": "{base_url}/hub/login", "states": states}
    )


SIGN_IN = [
    state(
        "Email",
        [element("input[type='email']")],
        [
            action(
                "set_env_value",
                env_var="HUB_EMAIL",
                selectors=["input#nowhere", "input[type='email']", "input[name='email']"],
            ),
            action("click_first", selectors=["button#nowhere", "button[data-testid*='continue']"]),
        ],
    ),
    state(
        "Password",
        [element("input[type='password']")],
        [
            # NetGent's web agent writes type_env for a credential, on one element
            action(
                "type_env", env_var="HUB_PASSWORD", by="css selector", selector="[name=password]"
            ),
            action("click_first", selectors=["button[data-testid*='login']"], timeout=5),
        ],
    ),
    state("Profiles", [text("Who's watching?")], [action("click_text_env", env_var="HUB_PROFILE")]),
]

WATCH = [
    state(
        "Back in the first tab", [text("Profile: Sam"), element("#share-link")], end_state="done"
    ),
    state(
        "Watching",
        [text("Profile: Sam"), element("video")],
        [
            action("remember_tab", name="first"),
            action("play_video", selector="video", timeout=10),
            action("click_accessible_name", names=["Add to watchlist", "Save"]),
            action("wait_for_text", text="Added to your watchlist"),
            action("wait_for_element", selector="#spinner", visible=False, timeout=5),
            action("click_first_text", texts=["Share this", "Share"], timeout=3),
            action("store_current_url", name="watch", strip_query=True),
            action("open_stored_url", name="watch", suffix="?profile=Guest", tab_name="second"),
        ],
    ),
    state("Second viewer", [text("Profile: Guest")], [action("switch_tab", name="first")]),
]


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_EMAIL", hub.EMAIL)
    monkeypatch.setenv("HUB_PASSWORD", hub.PASSWORD)
    monkeypatch.setenv("HUB_PROFILE", "Sam")


def test_netgents_newer_actions_sign_in_play_and_open_a_second_viewer(
    netgent_browser: NetgentBrowser, account: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    states = SIGN_IN + WATCH
    spec = workflow("Email", "Password", "Profiles", "Back in the first tab", "Watching",
                    "Second viewer", end="Back in the first tab")  # fmt: skip
    result = netgent_browser.run(spec, states=states)
    assert result.states_visited == [
        "Email", "Password", "Profiles", "Watching", "Second viewer", "Back in the first tab"
    ]  # fmt: skip
    driver = netgent_browser.driver
    assert len(driver.window_handles) == 2
    assert driver.current_window_handle == driver.window_handles[0]  # back in the first
    assert driver.execute_script("return document.querySelector('video').currentTime") > 0
    assert "Added to your watchlist" in driver.find_element("id", "status").text
    driver.switch_to.window(driver.window_handles[1])
    assert driver.current_url.endswith("/hub/watch?profile=Guest")  # the query stripped
    # the environment's values were typed and never shown: not in the timeline, not logged
    shown = json.dumps([vars(e) for e in result.timeline]) + caplog.text
    assert hub.PASSWORD not in shown and hub.EMAIL not in shown
    assert "HUB_PASSWORD" in shown  # the action names its variable


def test_an_unset_environment_value_fails_naming_the_state_and_the_action(
    netgent_browser: NetgentBrowser, account: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HUB_PASSWORD")
    result = netgent_browser.run(
        workflow("Email", "Password", "Profiles"), states=SIGN_IN, check=False
    )
    assert isinstance(result.error, NetgentError)
    message = str(result.error)
    assert "state 'Password', action 1 (type_env" in message
    assert "the environment variable HUB_PASSWORD is not set: export it" in message


def test_a_typed_environment_value_stays_out_of_a_failure_report(
    netgent_browser: NetgentBrowser, account: None
) -> None:
    broken = SIGN_IN[1].model_copy(deep=True)
    broken.actions[1].params["selectors"] = ["button.gone"]
    result = netgent_browser.run(
        workflow("Email", "Password", "Profiles"), states=[SIGN_IN[0], broken, SIGN_IN[2]],
        check=False,
    )  # fmt: skip
    assert result.error is not None
    report = result.error.report() if hasattr(result.error, "report") else str(result.error)
    assert "click_first: none of 'button.gone' is shown" in report
    assert hub.PASSWORD not in report + str(result.error)


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (action("switch_tab", name="meeting"),
         "state 'Email', action 1 (switch_tab name='meeting') failed: switch_tab: no tab "
         "remembered as 'meeting' (remembered: none); a remember_tab action with name "
         "'meeting' must run in that tab before"),
        (action("open_stored_url", name="meeting_url"),
         "state 'Email', action 1 (open_stored_url name='meeting_url') failed: "
         "open_stored_url: no address stored as 'meeting_url' (stored: none); a "
         "store_current_url action with name 'meeting_url' must run before it"),
        (action("click_first_text", texts="Continue with Google", timeout=0.3),
         "click_first_text: no button reads 'Continue with Google'"),
        (action("click_accessible_name", names=["Close dialog"], timeout=0.3),
         "click_accessible_name: no button is named 'Close dialog'"),
        (action("wait_for_text", text="Log in", visible=False, timeout=0.3),
         "wait_for_text: the text 'Log in' is still shown"),
    ],
)  # fmt: skip
def test_a_newer_action_that_cannot_be_done_says_why(
    netgent_browser: NetgentBrowser, broken: dict[str, Any], expected: str
) -> None:
    states = [state("Email", [element("input[type='email']")], [broken])]
    result = netgent_browser.run(workflow("Email"), states=states, check=False)
    assert result.error is not None
    assert expected in str(result.error)


def test_the_changed_markup_is_found_by_the_same_texts_and_names(
    netgent_browser: NetgentBrowser, account: None, changed_url: str
) -> None:
    """aria-labelledby instead of aria-label, a span role=button, profile tiles as links:
    the text and name actions find them all; only the selectors of the sign-in differ."""
    states = [
        SIGN_IN[2],
        state(
            "Watching",
            [text("Profile: Sam")],
            [
                action("click_accessible_name", names="Add to watchlist"),
                action("wait_for_text", text="Added to your watchlist"),
                action("click_first_text", texts=["Share"]),
                action("wait_for_element", selector="#share-link"),
            ],
            end_state="done",
        ),
    ]  # fmt: skip
    spec = Workflow.model_validate({
        "name": "hub", "start_url": f"{changed_url}/hub/profiles",
        "states": [{"name": "Profiles"}, {"name": "Watching", "end": "done"}],
    })  # fmt: skip
    result = netgent_browser.run(spec, states=states)
    assert result.states_visited == ["Profiles", "Watching"]


def test_newer_actions_are_in_the_schema_with_their_parameters() -> None:
    from pytest_netgent.workflow.automaton import parse_automaton

    schema = json.dumps(State.model_json_schema())
    for kind in ("remember_tab", "open_stored_url", "click_accessible_name", "play_video",
                 "collect_webrtc_metrics", "set_env_value", "type_env",
                 "click_text_env"):  # fmt: skip
        assert kind in schema
    with pytest.raises(ValueError, match="did you mean 'click_first_text'"):
        parse_automaton([{"name": "a", "checks": [], "actions": [action("click_first_txt")]}])
    with pytest.raises(ValueError, match="open_stored_url action: unknown parameter 'tab'"):
        parse_automaton([{"name": "a", "checks": [], "actions": [
            action("open_stored_url", name="x", tab="y")]}])  # fmt: skip


def test_convert_describes_the_newer_actions_in_words(tmp_path: Path) -> None:
    from pytest_netgent.cli import main

    source = tmp_path / "hub_result.json"
    states = [s.to_netgent() for s in SIGN_IN + WATCH]
    states[3]["end_state"] = "Back with the first viewer"
    source.write_text(json.dumps(states), encoding="utf-8")
    assert main(["convert", str(source), "-o", str(tmp_path / "out")]) == 0
    written = "\n".join(p.read_text("utf-8") for p in (tmp_path / "out").rglob("*.yaml"))
    for words in ("Type the value of $HUB_EMAIL into the first of 'input#nowhere' or",
                  "Type the value of $HUB_PASSWORD into '[name=password]'",
                  "Click the element reading the value of $HUB_PROFILE",
                  "Click the button named 'Add to watchlist' or 'Save'",
                  "Open the stored URL 'watch'?profile=Guest in a new tab",
                  "Switch to the tab 'first'"):  # fmt: skip
        assert words in written, written


def test_a_model_may_play_a_video_it_points_at() -> None:
    """play_video's selector is CSS by definition: the element's locator comes without
    'by', and an element with no CSS locator is refused."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from pytest_netgent.synthesis import Context
    from pytest_netgent.synthesis.llm import LLMSynthesiser
    from pytest_netgent.synthesis.observation import Observation, ObservedElement
    from pytest_netgent.synthesis.transport import Refused
    from pytest_netgent.workflow.messages import ActionOutput

    synth = LLMSynthesiser(FakeListChatModel(responses=["{}"]))
    video = {
        "mmid": 1,
        "tag": "video",
        "selectors": [{"by": "css selector", "selector": "#player", "stable": True}],
    }
    link = {
        "mmid": 2,
        "tag": "a",
        "selectors": [{"by": "link text", "selector": "Play", "stable": True}],
    }
    page = Observation(
        url="http://127.0.0.1:8000/hub/watch", title="Watch",
        elements=[ObservedElement.model_validate(video), ObservedElement.model_validate(link)],
    )  # fmt: skip
    chosen = ActionOutput(action="play_video", mmid=1, reasoning="start it")
    assert synth._to_action(Context(workflow="w"), page, chosen).params == {"selector": "#player"}
    with pytest.raises(Refused, match="element 2 has no CSS selector"):
        synth._to_action(Context(workflow="w"), page, chosen.model_copy(update={"mmid": 2}))
