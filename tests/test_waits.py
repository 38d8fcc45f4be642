"""Waits as users write them ("Watch for 10 seconds", "Let it play for a minute", "Stay
in the call 30 s"), read by the builtin synthesiser on real pages of the local sites: a
playback wait on a page with a player makes it play first; a wait of no definite amount
is declined, saying what is missing."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from pytest_netgent import NetgentBrowser
from pytest_netgent.browser.actions import Actions
from pytest_netgent.browser.chain import Chain
from pytest_netgent.synthesis import Context, Unresolved
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser
from pytest_netgent.synthesis.observation import Observation, observe
from pytest_netgent.synthesis.waits import wait_actions
from pytest_netgent.workflow.automaton import Action
from pytest_netgent.workflow.spec import StateSpec

from .helpers import Project

PLAYER = "/vod/watch/ocean-deep"
"""StreamBox's player: one ``<video id="player">``, which starts on its own."""


@pytest.fixture
def page_at(netgent_browser: NetgentBrowser, base_url: str) -> Callable[..., Observation]:
    """Open a path of the local sites and observe it, once ``ready`` (a script) holds."""

    def go(path: str, ready: str = "return true") -> Observation:
        driver = netgent_browser.driver
        driver.get(base_url + path)
        until(lambda: driver.execute_script(ready), f"{path}: {ready}")
        return observe(driver)

    return go


def until(holds: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``holds`` until it is true: patient, for a loaded machine."""
    end = time.monotonic() + timeout
    while not (value := holds()):
        assert time.monotonic() < end, f"not within {timeout:g} s: {what}"
        time.sleep(0.1)
    return value


def wait(seconds: float) -> dict[str, Any]:
    return {"type": "wait", "params": {"seconds": seconds}}


def read(text: str, page: Observation) -> list[dict[str, Any]] | None:
    actions = wait_actions(text, page)
    return None if actions is None else [a.model_dump() for a in actions]


PLAYBACK = [
    ("Watch for 10 seconds", 10.0),
    ("Let it play for a minute", 60.0),
    ("Keep watching for half a minute", 30.0),
    ("Listen for 20 seconds", 20.0),
    ("Watch the stream for 1 min", 60.0),
    ("Let the video play 15 seconds", 15.0),
    ("Listen to the podcast for twenty seconds", 20.0),
    ("Continue watching for a minute and a half", 90.0),
    ("Watch 10 seconds of the video.", 10.0),
    ("Keep the video playing for 1 minute 30 seconds", 90.0),
    ("Now let it run for 2.5 s", 2.5),
]
"""Verbs of playback, with a definite amount."""

STAYING = [
    ("Wait 10 seconds", 10.0),  # the builtin's waits, as before
    ("Wait 250 ms", 0.25),
    ("wait 500ms", 0.5),
    ("Wait for 2 minutes", 120.0),
    ("Wait 10", 10.0),
    ("wait for 1.5 min", 90.0),
    ("Stay in the call 30 s", 30.0),
    ("Remain on the page for 2 minutes", 120.0),
    ("Idle for 5s", 5.0),
    ("Stay 30 seconds in the meeting", 30.0),
    ("wait for ten seconds", 10.0),
    ("Wait twenty-five seconds", 25.0),
    ("Remain in the meeting for fifty nine seconds", 59.0),
    ("Wait sixty seconds", 60.0),
    ("Wait a minute", 60.0),
    ("Wait one minute", 60.0),
    ("Wait half a minute", 30.0),
    ("Wait a minute and a half", 90.0),
    ("Wait one and a half minutes", 90.0),
    ("Wait 1.5 minutes", 90.0),
    ("Wait a minute and 30 seconds", 90.0),
    ("Wait another 10 seconds", 10.0),
    ("Wait 10 more seconds", 10.0),
    ("Please wait about a minute!", 60.0),
    ("Hang around for 45 seconds", 45.0),
    ("Sit tight for 20 seconds", 20.0),
    ("Pause for 5 seconds", 5.0),
    ("Let the page settle for 2 seconds", 2.0),
    ("Give it 5 seconds to load", 5.0),
    ("Wait 10 seconds for the page to load", 10.0),
    ("Stay in the 'Design review' call for 30 s", 30.0),
]
"""Verbs of staying, with a definite amount: a plain wait, whatever the page plays."""

VAGUE = [
    ("Wait a few seconds", "'a few seconds' is no definite amount of time: say how long"),
    ("Watch for a while", "'a while' is no definite amount"),
    ("Wait a bit", "'a bit' is no definite amount"),
    ("Wait a couple of seconds", "'a couple of seconds' is no definite amount"),
    ("Stay in the call for several minutes", "'several minutes' is no definite amount"),
    ("Wait 5 to 10 seconds", "'5 to 10 seconds' is no definite amount"),
    ("Wait 5-10 seconds", "'5-10 seconds' is no definite amount"),
    ("Wait a minute or two", "'a minute or two' is no definite amount"),
    ("Wait more than 10 seconds", "'more than 10 seconds' is no definite amount"),
    ("Keep watching until the video ends", "'until the video ends' waits for something"),
    ("Watch the whole video", "'the whole video' waits for something to happen"),
    ("Wait until the page loads", "waits for something to happen, not for a definite"),
    ("Wait for the page to load", "waits for something to happen"),
    ("Wait", "'Wait' does not say how long"),
    ("Stay on the page", "does not say how long"),
    ("Keep watching", "does not say how long"),
    ("Let it play", "does not say how long"),
    ("Wait 3 days", "'3 days' is no definite amount"),
    ("Wait 10 seconds, then click Next", "then 'click Next', which is no part of a wait"),
    (
        "Watch the 'Intro' video for 10 seconds",
        "names what to watch \\(the 'Intro' video\\), which a wait does not open",
    ),
]
"""Waits of no definite amount (or more than a wait): declined, saying what is missing."""

NOT_WAITS = [
    "Watch the 'Intro' video",  # a video to open: a click
    "Watch the video",
    "Play the video",
    "Listen to the podcast",
    "Watch for the 'Saved' message",
    "Stay signed in",  # a checkbox
    "Keep me signed in",
    "Pause the video",
    "Pause",
    "Click the 'Wait' button",
    "Give feedback",
    "View more",
]
"""Words that are no wait: left to the other readings."""


def test_waits_on_a_page_without_media_are_plain_waits(page_at: Any) -> None:
    page = page_at("/wiki/")
    assert not page.media
    for text, seconds in PLAYBACK + STAYING:
        assert read(text, page) == [wait(seconds)], text


def test_a_playback_wait_makes_the_pages_video_play_first(page_at: Any) -> None:
    page = page_at(PLAYER, "return document.querySelector('video') !== null")
    assert [m.tag for m in page.media] == ["video"]
    play = {"type": "play_video", "params": {"selector": "#player"}}
    for text, seconds in PLAYBACK:
        assert read(text, page) == [play, wait(seconds)], text
    for text, seconds in STAYING:  # staying leaves the player as it is
        assert read(text, page) == [wait(seconds)], text


def test_a_wait_of_no_definite_amount_is_declined_saying_what_is_missing(page_at: Any) -> None:
    for page in (page_at("/wiki/"), page_at(PLAYER)):
        for text, reason in VAGUE:
            with pytest.raises(Unresolved, match=reason):
                wait_actions(text, page)


def test_words_that_are_no_wait_are_left_to_the_other_readings(page_at: Any) -> None:
    for page in (page_at("/wiki/"), page_at(PLAYER)):
        for text in NOT_WAITS:
            assert wait_actions(text, page) is None, text


def test_the_builtin_synthesiser_reads_them_and_declines_the_vague_ones(
    page_at: Any, base_url: str
) -> None:
    synth = BuiltinSynthesiser()
    ctx = Context(workflow="w", values={"secs": "12"}, base_url=base_url)
    state = StateSpec(name="S", actions=["x"], end="done")

    def act(page: Observation, text: str) -> list[dict[str, Any]]:
        actions, finished = synth.resolve_instruction(ctx, page, state, text, [])
        assert finished
        return [a.model_dump() for a in actions]

    player = page_at(PLAYER)
    assert act(player, "Watch for 10 seconds") == [
        {"type": "play_video", "params": {"selector": "#player"}},
        wait(10.0),
    ]
    assert act(player, "Stay in the call 30 s") == [wait(30.0)]
    assert act(page_at("/wiki/"), "Let it play for a minute") == [wait(60.0)]
    # a parameter's value is stored as its placeholder, as for "Wait {secs} seconds"
    assert act(player, "Keep watching for {secs} seconds")[1] == {
        "type": "wait",
        "params": {"seconds": "{secs}"},
    }
    with pytest.raises(Unresolved, match="'a few seconds' is no definite amount of time"):
        act(player, "Wait a few seconds")


def test_the_video_in_a_closed_shadow_root_is_played_through_its_chain(
    page_at: Any, netgent_browser: NetgentBrowser
) -> None:
    """/components/player keeps its <video> in a closed shadow root and starts it only on
    a click: the play action reaches it there, plays it, and leaves it playing when it
    plays already."""
    page = page_at("/components/player", "return document.querySelector('ng-player') !== null")
    driver = netgent_browser.driver

    def reading() -> list[Action] | None:  # once the player's video is observed
        found = wait_actions("Watch for 2 seconds", observe(driver))
        return found if found and len(found) == 2 else None

    actions = until(reading, "a play and a wait")
    assert [a.type for a in actions] == ["play_video", "wait"]
    play = actions[0].params
    assert play["selector"].startswith("ng-player >> "), play
    assert page.url.endswith("/components/player")
    (video,) = Chain(driver).find("css selector", play["selector"])

    def state() -> dict[str, Any]:
        return driver.execute_script(
            "const v = arguments[0]; return {paused: v.paused, time: v.currentTime, "
            "ready: v.readyState}",
            video,
        )

    until(lambda: state()["ready"] >= 2, "the player has loaded its media")
    assert state()["paused"]
    engine = Actions(driver, 5.0, lambda url: None)
    engine.run("play_video", {**play, "timeout": 30})
    until(lambda: state()["time"] > 0.5, "the video plays")
    before = state()
    engine.run("play_video", {**play, "timeout": 30})  # it plays already: left be
    until(lambda: state()["time"] > before["time"], "the video plays on")
    assert not state()["paused"]


INJECT = """
for (const id of arguments[0]) {
  const v = document.createElement('video');
  v.id = id; v.muted = true; v.width = 160; v.height = 90;
  document.body.prepend(v);
}
"""

CANVAS_PLAYS = """
const canvas = document.createElement('canvas');
canvas.width = 160; canvas.height = 90;
const g = canvas.getContext('2d');
setInterval(() => { g.fillStyle = '#' + Math.floor(Math.random() * 4095).toString(16);
                    g.fillRect(0, 0, 160, 90); }, 50);
const v = document.getElementById(arguments[0]);
v.srcObject = canvas.captureStream(20);
v.play();
"""


def test_a_page_of_several_videos_is_played_only_when_one_is_meant(
    page_at: Any, netgent_browser: NetgentBrowser
) -> None:
    """Two videos of which none plays: which to play is not guessed; once one plays, a
    playback wait waits (it starts nothing); an <audio> alone is played by its tag."""
    driver = netgent_browser.driver
    page_at("/wiki/")
    driver.execute_script(INJECT, ["left", "right"])
    two = observe(driver)
    assert [m.tag for m in two.media] == ["video", "video"]
    with pytest.raises(Unresolved, match="has 2 media elements and none plays: say which"):
        wait_actions("Watch for 10 seconds", two)
    assert read("Stay for 10 seconds", two) == [wait(10.0)]  # staying plays nothing
    driver.execute_script(CANVAS_PLAYS, "right")
    playing = until(
        lambda: (p := observe(driver)) and any(not m.paused for m in p.media) and p,
        "the right video plays",
    )
    assert read("Watch for 10 seconds", playing) == [wait(10.0)]
    page_at("/wiki/")
    driver.execute_script("document.body.append(document.createElement('audio'))")
    audio = observe(driver)
    assert [m.tag for m in audio.media] == ["audio"]
    assert read("Listen for 20 seconds", audio) == [
        {"type": "play_video", "params": {"selector": "audio"}},
        wait(20.0),
    ]


WATCH = """
name: watch
start_url: "{base_url}/vod/watch/ocean-deep"
states:
  - name: Player
    triggers: [The video is playing]
    actions:
      - Click the 'Pause' button
      - Watch for 3 seconds
    end: Watched
"""

FINAL_VIDEO = """
import json

def pytest_netgent_run_finished(item, result):
    driver = item.funcargs["netgent_browser"].driver
    state = driver.execute_script(
        "const v = document.querySelector('video');"
        "return {url: location.href, paused: v.paused, time: v.currentTime};"
    )
    with open("final.jsonl", "a") as fh:
        fh.write(json.dumps(state) + "\\n")
"""


def test_a_watch_records_a_play_and_a_wait_and_the_video_plays_at_the_end(
    project: Project,
) -> None:
    """The video is paused first: only the recorded play makes it play again."""
    project.workflow("watch", WATCH)
    project.pytester.makeconftest(FINAL_VIDEO)
    patient = ("-o", "netgent_state_timeout=30")  # a player on a loaded machine
    result = project.run("--netgent-record", *patient)
    result.assert_outcomes(passed=1)
    cache = json.loads((project.path / "__netgent__" / "watch" / "watch.json").read_text())
    (player,) = cache["states"]
    assert [a["type"] for a in player["actions"]] == ["click", "play_video", "wait"]
    assert player["actions"][1:] == [
        {"type": "play_video", "params": {"selector": "#player"}},
        wait(3.0),
    ]
    project.run(*patient).assert_outcomes(passed=1)  # replayed from the cache alone
    finals = [json.loads(line) for line in (project.path / "final.jsonl").read_text().splitlines()]
    assert len(finals) == 2
    for final in finals:
        assert final["url"].endswith("/vod/watch/ocean-deep"), final
        assert not final["paused"] and final["time"] > 0, final
