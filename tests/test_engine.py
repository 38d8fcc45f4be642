"""The engine and the action registry, through the netgent_browser fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_netgent import CacheError, NetgentBrowser, ReplayError, State, Workflow
from pytest_netgent.browser.page import evaluate
from pytest_netgent.workflow.automaton import Action, Check

from .helpers import QUIET, Project, action, css, element, state, url_is

EXAMPLES = Path(__file__).parent.parent / "example_suites"


def workflow(*names: str, start: str = "{base_url}/wiki/", **extra: Any) -> Workflow:
    """A workflow whose last state ends it."""
    states = [{"name": n} for n in names]
    states[-1]["end"] = "done"
    return Workflow.model_validate({"name": "t", "start_url": start, "states": states, **extra})


ARTICLE = "{base_url}/wiki/article/quic"


def test_run_a_file_from_python(netgent_browser: NetgentBrowser) -> None:
    result = netgent_browser.run(EXAMPLES / "wiki" / "browse.netgent.yaml", "read-featured")
    assert result.passed
    assert result.end_state == "Article read"
    assert result.final_url.endswith("/wiki/article/quic")
    assert result.states_visited == ["Home page", "Reading"]
    events = [e.event for e in result.timeline]
    assert events[0] == "start" and events[-1] == "end"
    assert all(
        a.elapsed <= b.elapsed for a, b in zip(result.timeline, result.timeline[1:], strict=False)
    )
    # the driver is exposed for the test's own checks
    heading = netgent_browser.driver.find_element("css selector", "h1#firstHeading")
    assert heading.text == "QUIC"


def test_one_round_trip_per_tick_with_20_states(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    driver.get(base_url + "/wiki/")
    states = [
        {
            "checks": [
                {"type": "element", "params": css(f"#missing-{i}")},
                {"type": "url", "params": {"url": base_url + "/x", "match": "prefix"}},
            ]
        }
        for i in range(19)
    ] + [{"checks": [{"type": "element", "params": css("#search-input")}]}]
    calls: list[str] = []
    original = driver.execute

    def counting(command: str, params: Any = None) -> Any:
        calls.append(command)
        return original(command, params)

    driver.execute = counting  # type: ignore[method-assign]
    try:
        tick = evaluate(driver, states, None, 500)
    finally:
        driver.execute = original  # type: ignore[method-assign]
    assert tick.matched == [19]
    assert len(tick.results) == 20
    assert len(calls) == 1, calls


def test_tick_waits_in_page_for_a_late_element(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    driver.get(base_url + "/wiki/search?q=quic")  # results arrive ~150 ms later by fetch
    states = [{"checks": [{"type": "element", "params": css("#results li.result")}]}]
    tick = evaluate(driver, states, None, 3000)
    assert tick.matched == [0]


def test_checks_of_every_kind(netgent_browser: NetgentBrowser, base_url: str) -> None:
    driver = netgent_browser.driver
    driver.get(base_url + "/wiki/article/quic?utm_source=mail&x=1")
    checks = {
        "url exact ignoring some params": {
            "type": "url",
            "params": {"url": base_url + "/wiki/article/quic?x=1", "ignore_query": ["utm_source"]},
        },
        "url exact ignoring all params": {
            "type": "url",
            "params": {"url": base_url + "/wiki/article/quic", "ignore_query": True},
        },
        "url prefix": {"type": "url", "params": {"url": base_url + "/wiki/", "match": "prefix"}},
        "url pattern": {"type": "url", "params": {"url": r"/article/[a-z]+\?", "match": "pattern"}},
        "title contains": {"type": "title", "params": {"title": "QUIC"}},
        "title exact": {"type": "title", "params": {"title": "QUIC - NetWiki", "match": "exact"}},
        "text": {"type": "text", "params": {"text": "head-of-line blocking"}},
        "hidden element present": element("#cite-box", visible=False),
        "xpath": {"type": "element", "params": {"by": "xpath", "selector": "//h1[text()='QUIC']"}},
        "link text": {
            "type": "element",
            "params": {"by": "link text", "selector": "Printable version"},
        },
        "name": {"type": "element", "params": {"by": "name", "selector": "lang"}},
        "script": {
            "type": "script",
            "params": {"script": "document.querySelectorAll('p').length > 5"},
        },
    }
    failing = {
        "url exact with params": url_is(base_url + "/wiki/article/quic"),
        "hidden element must be visible": element("#cite-box"),
        "text absent": {"type": "text", "params": {"text": "no such words"}},
        "script error": {"type": "script", "params": {"script": "window.nope.deeper"}},
    }
    states = [{"checks": [c]} for c in [*checks.values(), *failing.values()]]
    tick = evaluate(driver, states, None, 0)
    results = dict(zip([*checks, *failing], tick.results, strict=True))
    for name in checks:
        assert results[name] == [(True, "")], name
    assert results["hidden element must be visible"] == [(False, "present but not visible")]
    assert results["url exact with params"][0][0] is False
    assert results["text absent"][0][0] is False
    assert results["script error"][0][0] is False
    assert "deeper" in results["script error"][0][1]


def test_every_action_on_a_real_page(netgent_browser: NetgentBrowser, base_url: str) -> None:
    def hidden(selector: str) -> dict[str, Any]:
        return {
            "type": "script",
            "params": {"script": f"document.querySelector('{selector}').hidden"},
        }

    home = "{base_url}/wiki/?from=print"
    spec = workflow("Article", "Language set", "Cite shown", "Printable", "Back")
    states = [
        state(
            "Article",
            [url_is(ARTICLE), element("#firstHeading"), hidden("#lang-note")],
            [
                action("scroll", direction="down", times=2, amount=200),
                action("scroll_to", **css("#article-end")),
                action("select", **css("#lang"), text="Deutsch"),
            ],
        ),
        state(
            "Language set",
            [{"type": "text", "params": {"text": "Language: Deutsch"}}, hidden("#cite-box")],
            [action("hover", **css("#cite"))],
        ),
        state(
            "Cite shown",
            [element("#cite-box")],
            [action("click", **css("#print-link")), action("switch_tab")],
        ),
        state(
            "Printable",
            [{"type": "title", "params": {"title": "(printable)"}}],
            [
                action("switch_tab", index=0),
                action("navigate", url=home),
                action("navigate", url="{base_url}/wiki/article/webrtc"),
                action("go_back"),
                action("wait", seconds=0.05),
            ],
        ),
        state("Back", [url_is(home)], [], end_state="done"),
    ]
    result = netgent_browser.run(spec.model_copy(update={"start_url": ARTICLE}), states=states)
    assert result.states_visited == ["Article", "Language set", "Cite shown", "Printable", "Back"]
    driver = netgent_browser.driver
    assert len(driver.window_handles) == 2
    assert driver.current_window_handle == driver.window_handles[0]
    urls = [e.url for e in result.timeline if e.event == "url"]
    assert urls[-3:] == [
        base_url + "/wiki/?from=print",
        base_url + "/wiki/article/webrtc",
        base_url + "/wiki/?from=print",
    ]


def test_press_key_and_type_into_focused_element(netgent_browser: NetgentBrowser) -> None:
    spec = workflow("Home", "Results")
    states = [
        state(
            "Home",
            [url_is("{base_url}/wiki/")],
            [
                action("click", **css("#search-input")),
                action("type", text="webrtc"),
                action("press_key", key="Enter"),
            ],
        ),
        state(
            "Results",
            [
                {"type": "url", "params": {"url": "q=webrtc", "match": "contains"}},
                element("#results li.result"),
            ],
            end_state="done",
        ),
    ]
    assert netgent_browser.run(spec, states=states).passed


def test_unknown_key_is_reported(netgent_browser: NetgentBrowser) -> None:
    spec = workflow("Home", "Never")
    states = [
        state("Home", [url_is("{base_url}/wiki/")], [action("press_key", key="Hyper")]),
        state("Never", [element("#never")]),
    ]
    # the states' own fault, found before the run: never UI drift
    with pytest.raises(
        CacheError, match=r"press_key: unknown key 'Hyper'; use a single character"
    ) as caught:
        netgent_browser.run(spec, states=states)
    assert "correct that state where it is made" in caught.value.report()


def test_state_does_not_refire_on_unchanged_page(netgent_browser: NetgentBrowser) -> None:
    spec = workflow("Home", "Never", state_timeout=1)
    states = [
        state("Home", [url_is("{base_url}/wiki/")], [action("scroll", times=1)]),
        state("Never", [element("#never")]),
    ]
    result = netgent_browser.run(spec, states=states, check=False)
    assert result.states_visited == ["Home"]
    assert isinstance(result.error, ReplayError)
    assert "no state matched the page within 1s" in result.error.reason
    home = result.error.context.candidates[0] if result.error.context else None
    assert home is not None and home.matched  # it matches, but may not fire again


def test_states_taking_turns_on_an_unchanged_page_fail_at_once(
    netgent_browser: NetgentBrowser,
) -> None:
    # two states whose checks both hold on the page their actions leave unchanged: the
    # run fails on the second turn, naming them, not after the state timeout as UI drift
    spec = workflow("Home", "Also home", "Never", state_timeout=60)
    home = [url_is("{base_url}/wiki/"), element("#search-input")]
    states = [
        state("Home", home, [action("scroll", times=1)]),
        state("Also home", home, [action("scroll", times=1)]),
        state("Never", [element("#never")], end_state="done"),
    ]
    result = netgent_browser.run(spec, states=states, check=False)
    assert result.states_visited == ["Home", "Also home"]
    error = result.error
    assert isinstance(error, ReplayError)
    assert error.cause == "no progress"
    assert "state 'Home' does not advance the page: it ran 2 times on" in error.reason
    assert "in turn with 'Also home'" in error.reason
    assert str(error).startswith("no progress in workflow 't'")
    # a state with repeat left may run again there; past it, the same failure
    states[0] = state("Home", home, [action("scroll", times=1)], repeat=1)
    result = netgent_browser.run(spec, states=states, check=False)
    assert result.states_visited == ["Home", "Home", "Also home"]
    assert isinstance(result.error, ReplayError)
    assert "'Home' does not advance the page: it ran 3 times" in result.error.reason


def test_key_chords(netgent_browser: NetgentBrowser) -> None:
    spec = workflow("Home", "Results")
    states = [
        state(
            "Home",
            [url_is("{base_url}/wiki/")],
            [
                action("type", text="webrtc", **css("#search-input")),
                action("press_key", key="Ctrl+A"),  # select it all, then type over it
                action("type", text="quic", clear=False, **css("#search-input")),
                action("press_key", key="Shift+q", **css("#search-input")),  # 'Q'
                action("press_key", key="Enter"),
            ],
        ),
        state(
            "Results",
            [{"type": "url", "params": {"url": "q=quicQ", "match": "contains"}}],
            end_state="done",
        ),
    ]
    assert netgent_browser.run(spec, states=states).passed
    states[0] = state("Home", [url_is("{base_url}/wiki/")], [action("press_key", key="Hyper+A")])
    with pytest.raises(CacheError, match=r"unknown modifier 'Hyper' in 'Hyper\+A'; use one of"):
        netgent_browser.run(spec, states=states)


def test_repeat_fires_again_on_unchanged_page(netgent_browser: NetgentBrowser) -> None:
    spec = workflow("Home", "Never", state_timeout=1)
    states = [
        state("Home", [url_is("{base_url}/wiki/")], [action("scroll", times=1)], repeat=2),
        state("Never", [element("#never")]),
    ]
    result = netgent_browser.run(spec, states=states, check=False)
    assert result.states_visited == ["Home", "Home", "Home"]


def test_repeat_resets_on_new_page(netgent_browser: NetgentBrowser) -> None:
    # a like on an article: the state runs once per page, and the page is new each time
    spec = workflow("Article", "Never", state_timeout=1, max_steps=3)
    states = [
        state(
            "Article",
            [element("#firstHeading")],
            [action("navigate", url="{base_url}/wiki/article/quic")],
        ),
        state("Never", [element("#never")]),
    ]
    result = netgent_browser.run(
        spec.model_copy(update={"start_url": ARTICLE}), states=states, check=False
    )
    assert result.states_visited == ["Article"] * 3
    assert isinstance(result.error, ReplayError)
    assert result.error.reason.startswith("max_steps (3) reached without an end state")


def test_ambiguity_is_an_error_when_multiple_states_are_not_allowed(
    netgent_browser: NetgentBrowser,
) -> None:
    spec = workflow("A", "B", allow_multiple_states=False)
    states = [
        state("A", [element("#search-input")]),
        state("B", [element("header")], end_state="done"),
    ]
    with pytest.raises(ReplayError, match=r"several states match the page \('A', 'B'\)"):
        netgent_browser.run(spec, states=states)
    # by default the first declared state wins; it may not fire again, so B follows
    assert netgent_browser.run(
        spec.model_copy(update={"allow_multiple_states": True}), states=states
    ).states_visited == ["A", "B"]


def test_workflow_timeout(netgent_browser: NetgentBrowser) -> None:
    spec = workflow("Home", "Never", timeout=0.6, state_timeout=5)
    states = [
        state("Home", [url_is("{base_url}/wiki/")], [action("wait", seconds=10)]),
        state("Never", [element("#never")]),
    ]
    result = netgent_browser.run(spec, states=states, check=False)
    assert isinstance(result.error, ReplayError)
    assert result.error.reason.startswith("workflow timeout: no end state within 0.6s")
    assert result.duration < 9  # the 10 s wait was cut short (a loaded machine only adds)


def test_params_override_vars(netgent_browser: NetgentBrowser) -> None:
    result = netgent_browser.run(
        EXAMPLES / "wiki" / "search.netgent.yaml", "wiki-search", params={"query": "QUIC"}
    )
    assert result.final_url.endswith("/wiki/article/quic")


# Each pair of tests runs in one inner session, one after the other on its one browser
# (xdist's loadgroup cannot be relied on to keep them together: pytest 9.2 broke it).
RESET_PAIRS = """
import pytest

SESSIONS = {}


def test_reset_between_tests_part_one(netgent_browser, base_url):
    driver = netgent_browser.driver
    driver.get(base_url + "/wiki/")
    driver.execute_script("localStorage.setItem('k', 'v'); document.cookie = 'c=1; path=/';")
    driver.switch_to.new_window("tab")
    driver.get(base_url + "/wiki/article/quic")
    netgent_browser.origins.add(base_url)


def test_reset_between_tests_part_two(netgent_browser, base_url):
    driver = netgent_browser.driver
    assert len(driver.window_handles) == 1
    assert driver.current_url in ("data:,", "about:blank")  # a blank page, as when fresh
    driver.get(base_url + "/wiki/")
    assert driver.execute_script("return localStorage.getItem('k')") is None
    assert driver.get_cookies() == []


def test_reset_after_closing_the_drivers_window_part_one(netgent_browser, base_url):
    driver = netgent_browser.driver
    first = driver.current_window_handle
    driver.switch_to.new_window("tab")
    driver.get(base_url + "/shop/")
    driver.execute_script("localStorage.setItem('cart', 'full'); document.cookie = 'c=1; path=/';")
    driver.switch_to.window(first)
    driver.close()  # the driver is left on a window that is gone; the shop tab stays open
    SESSIONS["closed-window"] = driver.session_id


def test_reset_after_closing_the_drivers_window_part_two(netgent_browser, base_url):
    driver = netgent_browser.driver
    assert driver.session_id == SESSIONS.get("closed-window")  # reset, not replaced
    assert len(driver.window_handles) == 1
    assert driver.current_url in ("data:,", "about:blank")
    driver.get(base_url + "/shop/")  # the origin of the tab left open was cleared too
    assert driver.execute_script("return localStorage.getItem('cart')") is None
    assert driver.get_cookies() == []
"""


def test_the_browser_is_reset_between_tests(pytester: pytest.Pytester, base_url: str) -> None:
    """Tabs, storage and cookies of one test never reach the next, also when the test
    closed the driver's own window (the session is reset, not replaced)."""
    pytester.makepyfile(test_pairs=RESET_PAIRS)
    pytester.makeconftest(
        f"""
        import pytest

        @pytest.fixture(scope="session")
        def base_url():
            return {base_url!r}
        """
    )
    result = pytester.runpytest_subprocess(*QUIET, "-p", "no:randomly", "-v")
    result.assert_outcomes(passed=4)


SAMPLED = Workflow.model_validate(
    {
        "name": "sample",
        "start_url": "{base_url}/vod/title/ocean-deep",
        "states": [
            {"name": "Title", "triggers": ["title page"]},
            {"name": "Player", "triggers": ["player"], "end": "Watched"},
        ],
    }
)
"""Sampling starts on a video's title page and goes on in the player it opens."""


def sampled_states(to_player: Action, *after_stop: Action) -> list[State]:
    """The states of :data:`SAMPLED`: the title page starts sampling and goes to the
    player with ``to_player``; the player plays 3 s and stops sampling."""
    return [
        State(
            name="Title",
            checks=[Check(type="element", params=css("#play-link"))],
            actions=[Action(type="start_video_sampling", params={"interval": 0.25}), to_player],
        ),
        State(
            name="Player",
            checks=[Check(type="element", params=css("#player"))],
            actions=[
                Action(type="wait", params={"seconds": 3}),
                Action(type="stop_video_sampling", params={}),
                *after_stop,
            ],
            end_state="Watched",
        ),
    ]


def test_video_sampling_follows_playback_across_a_page_change(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    # sampling starts on the title page and goes on in the player page it opens
    workflow = SAMPLED
    states = sampled_states(
        Action(type="click", params=css("#play-link")),
        Action(type="wait", params={"seconds": 0.6}),
    )
    result = netgent_browser.run(workflow, states=states)
    assert result.passed
    played = [s for s in result.qoe if s["state"] == "Player"]
    assert len(played) >= 8, result.qoe
    assert played[-1]["playback_time"] - played[0]["playback_time"] > 1.5
    assert played[-1]["width"] > 0 and played[-1]["decoded_frames"] > 0
    assert all(s["page"].endswith("/vod/watch/ocean-deep") for s in played)
    # nothing sampled after stop_video_sampling
    stop = next(e for e in result.timeline if e.action.startswith("stop_video_sampling"))
    assert max(s["elapsed"] for s in result.qoe) <= stop.elapsed + 0.1
    bad = Action(type="start_video_sampling", params={"interval": 0})
    states[0] = states[0].model_copy(update={"actions": [bad]})
    failed = netgent_browser.run(workflow, states=states, check=False)
    assert "interval must be a number of seconds above 0" in str(failed.error)


def test_video_sampling_follows_the_run_into_a_tab_it_opens(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    """Sampling starts on the title page; the player opens in a new tab (NetGent's
    ``go_to_url`` with ``new_tab``): its video is sampled there, and stopping takes the
    last samples of every tab sampled."""
    watch = {"url": "{base_url}/vod/watch/ocean-deep", "new_tab": True}
    result = netgent_browser.run(
        SAMPLED, states=sampled_states(Action(type="go_to_url", params=watch))
    )
    assert result.passed, result.error
    assert len(netgent_browser.driver.window_handles) == 2
    played = [s for s in result.qoe if s["state"] == "Player"]
    assert len(played) >= 8, result.qoe
    assert played[-1]["playback_time"] - played[0]["playback_time"] > 1.5
    assert all(s["page"].endswith("/vod/watch/ocean-deep") for s in played)
    driver = netgent_browser.driver
    for handle in reversed(driver.window_handles):  # the run's tab (the newest) first
        driver.switch_to.window(handle)
        driver.get(base_url + "/vod/")
        assert driver.execute_script("return window.__netgentQoe === undefined"), handle


def test_a_state_declared_first_with_a_check_timeout_is_waited_for_before_later_ones(
    project: Project, slow_site: Any
) -> None:
    """NetGent tries its states in order, each check waiting up to its timeout: a state
    declared later does not fire while an earlier state's check timeout has not run out
    on the page (here its list comes from an API 0.6 s after the page has loaded)."""
    path = project.workflow(
        "held",
        f"""
        name: held
        start_url: "{slow_site.url}/app?seconds=0.6"
        states:
          - name: Items
            triggers: [The items are listed]
            end: Items listed
          - name: Heading
            triggers: [The heading is shown]
            end: Heading only
        """,
    )
    items = element("#items li", timeout=2)
    project.raw_states(
        path,
        "held",
        [{"name": "Items", "checks": [items], "end_state": "Items listed"},
         {"name": "Heading", "checks": [element("h1")], "end_state": "Heading only"}],
    )  # fmt: skip
    result = project.run("-rA")
    result.assert_outcomes(passed=1)
    timeline = result.stdout.str().split("Captured netgent timeline")[-1]
    assert "state    Items" in timeline and "Heading" not in timeline, timeline
