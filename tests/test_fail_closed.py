"""The safety machinery fails closed: a fault in the allowed-hosts guard's handler stops
the navigation it was judging and fails the item; a guard that cannot be installed, or a
secret redaction of log records that cannot, keeps the run from starting. Each is
injected into a real run against the local sites."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

import pytest

from pytest_netgent.browser import guard
from pytest_netgent.system import redaction as secrets

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, away_workflow, url_is

SECRET = "s3cr3t-Fail-Closed"


def _secret_search(project: Project, name: str) -> None:
    """A workflow that types a secret into the wiki's search box and ends on the results."""
    file = project.workflow(
        name,
        f"""
        name: {name}
        start_url: "{{base_url}}/wiki/"
        secrets: {{query: NETGENT_FAIL_CLOSED}}
        states:
          - name: Results
            triggers: [The URL shows a search]
            end: Searched
          - name: Home
            triggers: [The search box is visible]
            actions:
              - Type {{query}} into the search box
              - Press Enter
        """,
    )
    home = SEARCH_STATES["Home"]
    project.states(
        file, name, {"Home": home, "Results": ([url_is("{base_url}/wiki/search?", "prefix")], [])}
    )


def test_a_fault_in_the_guards_handler_stops_the_navigation_and_fails_the_item(
    project: Project, slow_site: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = away_workflow(project, slow_site.url)
    decide = guard.NavigationGuard._decide

    def faulty(self: guard.NavigationGuard, params: dict[str, Any], session: str) -> None:
        if urlsplit(str(params.get("request", {}).get("url", ""))).path == "/landing":
            raise KeyError("frameId")  # a bug in the handler, on the off-host request
        decide(self, params, session)

    monkeypatch.setattr(guard.NavigationGuard, "_decide", faulty)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "navigation blocked in workflow 'away'*",
            f"  reason: the allowed-hosts guard failed on {elsewhere} (KeyError: 'frameId'), "
            "so it stopped the navigation: one it cannot check could leave the allowed "
            "hosts. This is a fault in pytest-netgent; please report it with this message",
        ]
    )
    assert "/landing" not in slow_site.hits  # nothing left for the other host


def test_the_guards_fault_is_one_runs_the_next_item_is_guarded_again(
    project: Project, slow_site: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fault fails its own item; the next item of the same browser runs guarded."""
    away_workflow(project, slow_site.url)
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    calls = []
    decide = guard.NavigationGuard._decide

    def once(self: guard.NavigationGuard, params: dict[str, Any], session: str) -> None:
        calls.append(params)
        if len(calls) == 1:
            raise RuntimeError("injected")
        decide(self, params, session)

    monkeypatch.setattr(guard.NavigationGuard, "_decide", once)
    result = project.run("away.netgent.yaml", "search.netgent.yaml")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*reason: the allowed-hosts guard failed on *(RuntimeError*"])


def test_a_guard_that_cannot_be_installed_keeps_the_run_from_starting(
    project: Project, slow_site: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    away_workflow(project, slow_site.url)

    class Refused:
        def __init__(self, endpoint: str, frame_scripts: Any = ()) -> None:
            raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr("pytest_netgent.browser.pool.NavigationGuard", Refused)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the allowed-hosts guard could not be installed in the browser "
            "(ConnectionRefusedError: [[]Errno 111[]] Connection refused), so the run was "
            "not started*",
        ]
    )
    assert not [hit for hit in slow_site.hits if hit.startswith("/away")]


def test_a_log_record_factory_replaced_after_an_item_keeps_the_next_from_starting(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A conftest (or a library) that sets its own record factory without calling the
    one it replaces would let secrets into log records: the next run does not start."""
    monkeypatch.setenv("NETGENT_FAIL_CLOSED", SECRET)
    for name in ("first", "second"):
        _secret_search(project, name)
    project.pytester.makeconftest(
        """
        import logging
        import pytest

        @pytest.fixture(autouse=True)
        def own_factory():
            yield
            logging.setLogRecordFactory(logging.LogRecord)  # the one it replaced is lost
        """
    )
    saved = logging.getLogRecordFactory()
    try:
        result = project.run("first.netgent.yaml", "second.netgent.yaml", "--log-level=DEBUG")
    finally:
        logging.setLogRecordFactory(saved)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*second*",
            "*the secret redaction of log records could not be installed: a record made now "
            "would show a secret*so the run was not started*",
        ]
    )
    assert SECRET not in result.stdout.str() + result.stderr.str()


def test_a_redaction_that_fails_to_install_keeps_the_run_from_starting(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETGENT_FAIL_CLOSED", SECRET)
    _secret_search(project, "search")
    monkeypatch.setattr(secrets._FACTORY, "attach", lambda logs: None)  # installs nothing
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*secret redaction of log records could not be installed*"])
    assert SECRET not in result.stdout.str()


def test_an_installed_redaction_is_checked_by_a_probe_record() -> None:
    logs = secrets.SecretLogs()
    try:
        logs.add({"password": SECRET})  # installs, then proves a record is cleaned
        record = logging.getLogRecordFactory()(
            "x", logging.INFO, __file__, 1, "%s", (SECRET,), None
        )
        assert record.getMessage() == "{password}"
    finally:
        logs.remove()
