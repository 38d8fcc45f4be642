"""A long run shows what it does as it does it: every timeline event is logged on the
``pytest_netgent.run`` logger, so ``--log-cli-level=INFO`` follows a run live, and each
item's report carries its log under ``-n`` (xdist's workers send logs with reports)."""

from __future__ import annotations

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project

EXPECTED = [
    "*INFO*pytest_netgent.run*search [[]0.0 s[]] started",
    "*search [[]*s[]] start_url: navigate 'http://127.0.0.1:*/wiki/'",
    "*search [[]*s[]] state 'Home'",
    "*search [[]*s[]] 'Home': type css selector='#search-input' text='{query}'",
    "*search [[]*s[]] 'Home': press_key key='Enter'",
    "*search [[]*s[]] at http://127.0.0.1:*/wiki/search?q=QUIC",
    "*search [[]*s[]] state 'Results'",
    "*search [[]*s[]] ended in state 'Article': Article opened",
]


def test_live_logging_follows_each_state_and_action(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    result = project.run("--log-cli-level=INFO")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*live log call*", *EXPECTED])


def test_each_items_log_comes_with_its_report_under_xdist(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    result = project.run("-n", "2", "-rA", "--log-level=INFO")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*Captured log call*", *EXPECTED])
