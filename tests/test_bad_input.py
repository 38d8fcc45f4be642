"""Bad input fails its own item, saying what is wrong and how to fix it: a mark whose
arguments pytest would refuse, a cached state no page can make work, a network condition
too slow for the page, a scenario member ended by a bound nobody set. Never a traceback,
never the session, never the cache file, and never "UI drift" with a heal command that
heals nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.browser.page import Tick
from pytest_netgent.replay import diagnosis
from pytest_netgent.scenario.spec import Scenario

from .helpers import Project, element
from .test_network import needs_shaping


def passing(project: Project) -> None:
    """A workflow that passes (its start state holds on the blank page), to show that
    the session goes on beside the bad item."""
    path = project.workflow("good", "name: good\nstates:\n  - {name: Start, end: done}\n")
    start = {"type": "url", "params": {"url": "chrome://new-tab-page/"}}
    project.raw_states(
        path, "good", [{"name": "Start", "checks": [start], "actions": [], "end_state": "done"}]
    )


def no_traceback(result: pytest.RunResult) -> None:
    text = result.stdout.str()
    assert "Traceback" not in text and "INTERNALERROR" not in text, text


# --------------------------------------------------------------------------- marks

BAD_MARKS = {
    # it was a 60-line traceback from pytest's skip without the file
    "{skip: 5}": "mark 'skip': reason: Input should be a valid string, got 5; write it like "
    "{skip: 'why it is skipped'}",
    "{skip: [a, b]}": "mark 'skip' ('a', 'b'): too many positional arguments; write it like "
    "{skip: 'why it is skipped'}",
    "{skip: {bogus: 1}}": "mark 'skip' (bogus=1): got an unexpected keyword argument 'bogus'; "
    "write it like {skip: 'why it is skipped'}",
    "{xfail: 5}": "mark 'xfail': conditions: Input should be a valid boolean, got 5; write it "
    "like {xfail: {reason: 'why', strict: true}}",
    "{skipif: [true]}": "mark 'skipif' with a condition needs a 'reason' too; write it like "
    "{skipif: {condition: true, reason: 'why'}}",
    "{xfail: {reason: r, raises: ValueError}}": "mark 'xfail' (reason='r', raises='ValueError'"
    "): got an unexpected keyword argument 'raises'; write it like {xfail: {reason: 'why', "
    "strict: true}}",
    # pytest-timeout's: these stopped the whole session with an INTERNALERROR
    "{timeout: {a: 1}}": "mark 'timeout' (a=1): got an unexpected keyword argument 'a'; write "
    "it like {timeout: 30} or {timeout: {timeout: 30, method: thread}}",
    "{timeout: '30'}": "mark 'timeout' (reason='30'): got an unexpected keyword argument "
    "'reason'; write it like {timeout: 30} or {timeout: {timeout: 30, method: thread}}",
    "timeout": "mark 'timeout' needs an argument; write it like {timeout: 30} or {timeout: "
    "{timeout: 30, method: thread}}",
    "{skip: true}": "mark 'skip' takes a reason string, a number, a list or a map of "
    "arguments, got True",
}


@pytest.mark.parametrize("mark", sorted(BAD_MARKS))
def test_a_mark_pytest_would_refuse_names_file_line_and_fix(project: Project, mark: str) -> None:
    marks = f"marks:\n  - {{xfail: {{reason: r}}}}\n  - {mark}\n"  # the second one's line
    project.workflow("marked", "name: marked\nstates:\n  - {name: A, end: d}\n" + marks)
    passing(project)
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"marked.netgent.yaml:6: marks: {BAD_MARKS[mark]}"])
    no_traceback(result)


def test_marks_that_fit_still_apply_and_an_unknown_one_is_named(project: Project) -> None:
    project.workflow(
        "fits",
        "name: fits\nmarks: [{timeout: 2.5}, {filterwarnings: ['ignore::UserWarning']}, "
        "{xfail: {condition: true, reason: known, strict: true}}]\n"
        "states:\n  - {name: A, end: d}\n",
    )
    project.workflow("odd", "name: odd\nmarks: [{nosuchmark: 1}]\nstates:\n  - {name: A, end: d}\n")
    result = project.run("-p", "no:randomly", "--strict-markers")
    result.assert_outcomes(xfailed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["odd.netgent.yaml:2: marks: unknown mark 'nosuchmark': register it under 'markers' *"]
    )
    no_traceback(result)


def test_a_scenario_mark_is_checked_the_same_way(project: Project) -> None:
    project.workflow(
        "mixed", "name: mixed\nmarks: [{skip: 5}]\nscenario:\n  - {name: a, run: 'true'}\n"
    )
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["mixed.netgent.yaml:2: marks: mark 'skip': reason: *"])


# --------------------------------------------------------------------------- cached states

TWO_STATES = """
name: c
start_url: "{base_url}/wiki/"
states:
  - {name: Start, triggers: [The home page is shown], actions: [Do something]}
  - {name: Next, triggers: [Something else is shown], end: done}
"""

HOME = {"type": "url", "params": {"url": "/wiki/", "match": "contains"}}
NOWHERE = {"type": "url", "params": {"url": "/nowhere"}}


def cached(
    project: Project, *, check: dict[str, Any] = NOWHERE, action: dict[str, Any] | None = None
) -> Path:
    """The states of TWO_STATES: ``action`` in the first (found on the wiki's home page),
    ``check`` in the second."""
    path = project.workflow("c", TWO_STATES)
    first = {"name": "Start", "checks": [HOME], "actions": [action] if action else []}
    return project.raw_states(
        path, "c", [first, {"name": "Next", "checks": [check], "end_state": "done"}]
    )


def failed_on_the_cache(project: Project, cache: Path, message: str, fix: str) -> None:
    """The item fails naming the cache file, what is wrong and the fix; the rest of the
    session runs, the file is left as it was, and no UI drift or heal is reported."""
    passing(project)
    before = cache.read_bytes()
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"__netgent__/c/c.json: invalid cached states: {message}", fix])
    text = result.stdout.str()
    assert "UI drift" not in text and "heal with" not in text, text
    no_traceback(result)
    assert cache.read_bytes() == before


RE_RECORD = (
    "  fix: correct it in the file by hand, or delete that state from the file and record "
    "it again: pytest --netgent-record=missing c.netgent.yaml::c"
)
REPAIR = "  fix: fix the file by hand or delete it and re-record it"


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (
            {"type": "url", "params": {"url": 5}},
            "state 'Next': check 1 (url): url check: url: Input should be a valid string, got 5",
        ),
        (
            {"type": "element", "params": {"by": "id", "selector": "x", "visible": "no"}},
            "state 'Next': check 1 (element): element check: visible: Input should be a valid "
            "boolean, got 'no'",
        ),
        (
            {"type": "title", "params": {"title": "x", "match": "regex"}},
            "state 'Next': check 1 (title): title check: match: Input should be 'exact', "
            "'prefix', 'contains' or 'pattern', got 'regex'",
        ),
    ],
    ids=["url-number", "visible-text", "unknown-match"],
)
def test_a_cached_check_of_the_wrong_type_is_the_cache_files_fault(
    project: Project, check: dict[str, Any], message: str
) -> None:
    """Found when the file is read (it was UI drift: the check could never hold)."""
    failed_on_the_cache(project, cached(project, check=check), message, REPAIR)


@pytest.mark.parametrize(
    ("check", "action", "message"),
    [
        (
            element("//div[@"),
            None,
            "state 'Next': check 1 (element): the browser cannot parse its selector '//div[@' "
            "(by css selector): *'//div[@' is not a valid selector.",
        ),
        (
            {"type": "element", "params": {"by": "xpath", "selector": "//div[@"}},
            None,
            "state 'Next': check 1 (element): the browser cannot parse its selector '//div[@' "
            "(by xpath): *The string '//div[@' is not a valid XPath expression.",
        ),
        (
            element("ng-app >> div[[["),
            None,
            "state 'Next': check 1 (element): the browser cannot parse its selector 'ng-app >> "
            "div[[[' (by css selector): *'div[[[' is not a valid selector.",
        ),
        (
            {"type": "url", "params": {"url": "(", "match": "pattern"}},
            None,
            "state 'Next': check 1 (url): the browser cannot parse its pattern '(': Invalid "
            "regular expression: /(/: Unterminated group",
        ),
        (
            {"type": "script", "params": {"script": "1 +* 2"}},
            None,
            "state 'Next': check 1 (script): the browser cannot parse its script: Unexpected "
            "token '*'",
        ),
        (
            NOWHERE,
            {"type": "click", "params": {"by": "xpath", "selector": "//a[", "alternatives": []}},
            "state 'Start': action 1 (click): the browser cannot parse its selector '//a[' (by "
            "xpath): *",
        ),
        (
            NOWHERE,
            {"type": "press_key", "params": {"key": "NotAKey"}},
            "state 'Start': action 1 (press_key): press_key: unknown key 'NotAKey'; use a "
            "single character, one of *",
        ),
    ],
    ids=["css", "xpath", "chained", "pattern", "script", "action-xpath", "key"],
)
def test_a_cached_state_no_page_can_satisfy_fails_before_the_run(
    project: Project, check: dict[str, Any], action: dict[str, Any] | None, message: str
) -> None:
    """Asked of the browser before the first step (these were UI drift at the state
    timeout, or a WebDriver traceback for an action's selector)."""
    cache = cached(project, check=check, action=action)
    failed_on_the_cache(project, cache, message, RE_RECORD)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (
            {"type": "click", "params": {"by": "xpath", "selector": "//div[@"}},
            "state 'Start', action 1 (click xpath='//div[@') failed: click: the browser cannot "
            "parse its selector: invalid selector: *'//div[@' is not a valid XPath expression.",
        ),
        (
            {"type": "type", "params": {"by": "css selector", "selector": "a[[", "text": "x"}},
            "state 'Start', action 1 (type css selector='a[[' text='x') failed: type: the "
            "browser cannot parse its selector: invalid selector: *",
        ),
        (
            {"type": "press_key", "params": {"key": "NotAKey"}},
            "state 'Start', action 1 (press_key key='NotAKey') failed: press_key: unknown key "
            "'NotAKey'; *",
        ),
    ],
    ids=["xpath", "css", "key"],
)
def test_a_selector_the_browser_rejects_during_the_run_is_the_cache_files_fault(
    project: Project, monkeypatch: pytest.MonkeyPatch, action: dict[str, Any], message: str
) -> None:
    """What the look before the run cannot see (it is skipped here) fails at the action
    the same way: selenium's InvalidSelectorException was a traceback, an unknown key UI
    drift."""
    monkeypatch.setattr("pytest_netgent.replay.runner.vet", lambda *args: None)
    failed_on_the_cache(project, cached(project, action=action), message, RE_RECORD)


# --------------------------------------------------------------------------- network condition

SLOW_LINK = "rate=8kbit,delay=2000ms"

TOO_SLOW = (
    "  reason: the page did not load within the timeout under the network condition {net}: "
    "{what} (a shaped link too slow for this page, not a UI change: raise 'state_timeout' (or "
    "the workflow's 'timeout') for this condition, or choose a faster one; no re-recording "
    "heals this); no state matched the page within 3s"
)


def shaped(project: Project, net: str) -> pytest.RunResult:
    result = project.run_subprocess("-n", "0", f"--netgent-network={net}")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "UI drift" not in text and "heal with" not in text, text
    return result


@needs_shaping
def test_an_api_too_slow_under_the_condition_is_the_links_doing(project: Project) -> None:
    """The results page loaded; its search API had not answered when the state timed out.
    Under the condition that is the link, not a slow server (as it was reported)."""
    file = project.workflow(
        "results",
        "name: results\nstart_url: '{base_url}/wiki/search?q=QUIC'\ntimeout: 60\n"
        "states:\n  - {name: Results, triggers: [A result is shown], end: shown}\n",
    )
    project.states(file, "results", {"Results": ([element("#results li.result a")], [])})
    result = shaped(project, SLOW_LINK)
    result.stdout.fnmatch_lines(
        [
            "network condition in workflow 'results' (results.netgent.yaml:1)",
            TOO_SLOW.format(net="rate=8kbit,delay=2000ms", what="GET */wiki/api/search?q=QUIC *"),
        ]
    )


@needs_shaping
def test_an_answer_still_arriving_under_the_condition_is_the_links_doing(
    project: Project,
) -> None:
    """The page asked for a megabyte (its script, here the check's); its headers came, its
    body was still on the 8 kbit/s link when the state timed out: it was UI drift."""
    file = project.workflow(
        "arriving",
        "name: arriving\nstart_url: '{base_url}/wiki/'\ntimeout: 60\n"
        "states:\n  - {name: Loaded, triggers: [The file has come], end: loaded}\n",
    )
    fetch = "(window.__big = window.__big || fetch('/files/1MB').then((r) => r.text()), false)"
    check = {"type": "script", "params": {"script": fetch}}
    project.states(file, "arriving", {"Loaded": ([check], [])})
    result = shaped(project, "rate=8kbit,delay=10ms")
    result.stdout.fnmatch_lines(
        [
            "network condition in workflow 'arriving' (arriving.netgent.yaml:1)",
            TOO_SLOW.format(net="rate=8kbit,delay=10ms", what="GET */files/1MB still arriving *"),
        ]
    )


def tick(**page: Any) -> Tick:
    """The wiki's results page as a state timeout saw it, changed by ``page``."""
    return Tick(**{"href": "http://wiki/search", "ready": "complete", "pending": [], **page})


TIMED_OUT = "no state matched the page within 3s" + diagnosis.MAY_HAVE_CHANGED


@pytest.mark.parametrize(
    ("page", "cause", "what"),
    [
        ({}, "UI drift", ""),  # loaded, nothing on its way: the page does not match
        ({"pending": [("GET", "http://wiki/api", 400)]}, "UI drift", ""),  # barely sent
        ({"pending": [("GET", "http://wiki/api", 3000)]}, "network condition", "unanswered"),
        ({"arriving": [("GET", "http://wiki/api", 3000)]}, "network condition", "arriving"),
        ({"ready": "interactive"}, "network condition", "readyState 'interactive'"),
        ({"leaving": 2500}, "network condition", "the next page had not come 2.5s after"),
        ({"href": "data:,"}, "network condition", "it was still loading"),
    ],
    ids=["loaded", "just-sent", "unanswered", "arriving", "document", "leaving", "blank"],
)
def test_what_was_still_on_its_way_under_a_condition_names_the_link(
    page: dict[str, Any], cause: str, what: str
) -> None:
    found, reason = diagnosis.page_fault(tick(**page), "http://wiki/search", TIMED_OUT, "3g")
    assert found == cause
    if cause == "UI drift":
        assert reason == TIMED_OUT
    else:
        head = "the page did not load within the timeout under the network condition 3g: "
        assert reason.startswith(head)
        assert what in reason and reason.endswith("; no state matched the page within 3s")


def test_without_a_condition_only_a_request_waiting_for_its_server_is_not_drift() -> None:
    for page in ({"arriving": [("GET", "http://wiki/api", 3000)]}, {"leaving": 2500}):
        assert diagnosis.page_fault(tick(**page), "x", TIMED_OUT)[0] == "UI drift"
    slow = tick(pending=[("GET", "http://wiki/api", 3000)])
    cause, reason = diagnosis.page_fault(slow, "x", TIMED_OUT)
    assert cause == "timeout" and "UI may have changed" not in reason


# --------------------------------------------------------------------------- scenarios


def test_a_member_ended_by_the_default_bound_is_told_which_and_how_to_set_one(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sleep 600`` in a scenario with neither duration nor timeout ran into the 600 s
    default, which the report did not name as a default (here 2 s, to be quick)."""
    monkeypatch.setattr("pytest_netgent.scenario.spec.DEFAULT_TIMEOUT", 2.0)
    project.workflow(
        "idle",
        "name: idle\nscenario:\n  - {name: quick, run: 'true'}\n  - {run: sleep 600}\n",
    )
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*--- member 'sleep' (command) failed:",
            "  still running at the scenario's limit (2s: the default of a scenario with "
            "neither 'timeout' nor 'duration'), and ended then: its command 'sleep 600' had "
            "not exited; give the member a 'stop' (seconds after the scenario's start; a "
            "command ended by its stop has not failed), or the scenario a longer 'timeout'",
        ]
    )


def test_every_bound_of_a_scenario_is_named_where_it_comes_from() -> None:
    def scenario(**bounds: float) -> Scenario:
        return Scenario.model_validate({"scenario": [{"run": "true"}], **bounds})

    assert (scenario(timeout=5).limit, scenario(timeout=5).limit_source) == (5, "its 'timeout'")
    timed = scenario(duration=10)
    assert timed.limit == 70
    assert timed.limit_source == "its 'duration' of 10s and a minute, as it has no 'timeout'"
    assert scenario().limit_source == (
        "the default of a scenario with neither 'timeout' nor 'duration'"
    )
