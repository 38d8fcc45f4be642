"""Workflow items replayed by pytest in real headless Chromium against the local sites."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, css, element, url_is


def test_replay_passes(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    result = project.run("-v")
    result.stdout.fnmatch_lines(["search.netgent.yaml::search PASSED*"])
    result.assert_outcomes(passed=1)


def test_drift_fails_with_report(project: Project, changed_url: str) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    result = project.run(base_url=changed_url)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "UI drift in workflow 'search' (search.netgent.yaml:1)",
            "  reason: no state matched the page within 3s*",
            "  step: 0",
            "  last state reached: (none)",
            f"  page: {changed_url}/wiki/",
            "  title: 'Main page - NetPedia'",
            "  candidate states:",
            "    Home: no match",
            "      [[]pass[]] url exact '{base_url}/wiki/'",
            "      [[]FAIL[]] element css selector='#search-input' [[]not found[]]",
            "    Results: no match",
            "    Article: no match",
            "  screenshot: *failure-step0.png",
            "  heal with: pytest --netgent-record=missing search.netgent.yaml::search",
        ]
    )
    shots = list((project.path / "netgent-artifacts").rglob("failure-step0.png"))
    assert len(shots) == 1 and shots[0].stat().st_size > 1000


def test_the_printed_heal_command_works_as_printed(project: Project, changed_url: str) -> None:
    """The heal line of a drift report, pasted as it is: it records the item it names
    (before, pytest read the node id as the value of --netgent-record)."""
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    project.workflow("other", SEARCH_WORKFLOW.replace("name: search", "name: other"))
    result = project.run("--netgent-state-timeout=2", base_url=changed_url)
    result.assert_outcomes(failed=2)
    heal = next(line for line in result.outlines if "heal with: " in line)
    command = shlex.split(heal.split("heal with: ", 1)[1])
    assert command[0] == "pytest"
    healed = project.run(*command[1:], base_url=changed_url)
    healed.assert_outcomes(passed=1)  # that item alone, recorded against the changed UI
    project.run(base_url=changed_url).assert_outcomes(passed=1, failed=1)


def test_action_that_finds_nothing_reports_state_and_action(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    states = dict(SEARCH_STATES)
    states["Results"] = (
        SEARCH_STATES["Results"][0],
        [{"type": "click", "params": css("#no-such-link")}],
    )
    project.states(file, "search", states)
    result = project.run("-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  reason: state 'Results', action 1 (click css selector='#no-such-link') failed: "
            "click: no clickable element matches css selector '#no-such-link' on "
            f"{project.base_url}/wiki/search?q=QUIC (title 'Search: QUIC - NetWiki') after "
            "waiting 1s",
            "  last state reached: Results",
            "    Results: MATCH",
        ]
    )


def test_missing_states_ask_to_record(project: Project) -> None:
    project.workflow("search", SEARCH_WORKFLOW)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "__netgent__/search/search.json: no cached states for this workflow",
            "  fix: run pytest --netgent-record=missing search.netgent.yaml::search to "
            "synthesise the missing and stale states",
        ]
    )


def test_edited_state_is_stale(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    file.write_text(file.read_text().replace("Click the first result", "Click the second result"))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["__netgent__/search/search.json: states edited since recorded (stale): 'Results'"]
    )


def test_editing_end_or_repeat_keeps_states_fresh(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    file.write_text(file.read_text().replace("end: Article opened", "end: Reached the article"))
    result = project.run()
    result.assert_outcomes(passed=1)


def test_corrupt_cache_fails_its_item_and_is_not_overwritten(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    cache = project.states(file, "search", SEARCH_STATES)
    broken = cache.read_text()[:-40] + "\n<<<<<<< HEAD\n"
    cache.write_text(broken)
    other = project.workflow("other", SEARCH_WORKFLOW.replace("name: search", "name: other"))
    project.states(other, "other", SEARCH_STATES)
    result = project.run()
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(
        [
            "__netgent__/search/search.json: corrupt cached states: * at line * column *",
            "  fix: fix the JSON by hand (e.g. resolve a merge conflict) or delete the file and "
            "re-record it; it is never overwritten while unreadable",
        ]
    )
    assert cache.read_text() == broken


def test_invalid_cached_action_names_state_and_field(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.raw_states(
        file,
        "search",
        {"states": [{"name": "Home", "checks": [], "actions": [{"type": "teleport"}]}]},
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "__netgent__/search/search.json: invalid cached states: state 'Home': action 1 "
            "(teleport): unknown action type 'teleport' (action types: navigate, click, *"
        ]
    )


def test_netgent_state_repository_is_used_as_it_is(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    # NetGent's own format: a bare list, 'end_state', terminate actions, x/y kept.
    project.raw_states(
        file,
        "search",
        [
            {
                "name": "Home",
                "checks": [
                    {"type": "url", "params": {"url": "{base_url}/wiki/"}},
                    {"type": "element", "params": css("#search-input")},
                ],
                "actions": [
                    {"type": "click", "params": {**css("#search-input"), "x": 300, "y": 30}},
                    {"type": "type", "params": {**css("#search-input"), "text": "QUIC"}},
                    {"type": "press_key", "params": {"key": "Enter"}},
                    {"type": "terminate", "params": {"reason": "done"}},
                ],
                "end_state": None,
            },
            {
                "name": "Results",
                "checks": [{"type": "element", "params": css("#results li a")}],
                "actions": [{"type": "click", "params": css("#results li a")}],
                "end_state": "",
            },
            {
                "name": "Article",
                "checks": [{"type": "element", "params": {"by": "id", "selector": "firstHeading"}}],
                "actions": [],
                "end_state": "Reached",
            },
        ],
    )
    result = project.run()
    result.assert_outcomes(passed=1)


def test_parametrize_ids_and_values(project: Project) -> None:
    file = project.workflow(
        "search",
        SEARCH_WORKFLOW.replace("vars: {query: QUIC}", "parametrize:\n  query: [QUIC, WebRTC]"),
    )
    project.states(file, "search", SEARCH_STATES)
    project.pytester.makeconftest(
        """
        import json
        def pytest_netgent_run_finished(item, result):
            with open("finished.jsonl", "a") as fh:
                fh.write(json.dumps({"id": item.nodeid, "url": result.final_url}) + "\\n")
        """
    )
    result = project.run("-v")
    result.stdout.fnmatch_lines(
        [
            "search.netgent.yaml::search[[]QUIC[]] PASSED*",
            "search.netgent.yaml::search[[]WebRTC[]] PASSED*",
        ]
    )
    rows = [json.loads(x) for x in (project.path / "finished.jsonl").read_text().splitlines()]
    urls = {r["id"].split("::")[1]: r["url"] for r in rows}
    assert urls["search[QUIC]"].endswith("/wiki/article/quic")
    assert urls["search[WebRTC]"].endswith("/wiki/article/webrtc")


def test_marks_skip_xfail_and_selection(project: Project) -> None:
    project.pytester.makeini(
        "[pytest]\nnetgent_state_timeout = 3\nmarkers =\n    smoke: quick ones\n"
    )
    for name, marks in {
        "skipped": "marks: [{skip: site is down}]",
        "expected": "marks: [{xfail: {reason: known drift, strict: true}}]",
        "quick": "marks: [smoke]",
    }.items():
        file = project.workflow(
            name, SEARCH_WORKFLOW.replace("name: search", f"name: {name}\n{marks}")
        )
        states = dict(SEARCH_STATES)
        if name == "expected":
            states["Article"] = ([element("#not-on-the-page")], [])
        project.states(file, name, states)
    result = project.run("-rsx", "-o", "netgent_state_timeout=1")
    result.assert_outcomes(passed=1, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(["SKIPPED * site is down", "XFAIL *expected* - known drift"])
    result = project.run("-m", "smoke")
    result.assert_outcomes(passed=1)
    result = project.run("-m", "netgent", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["3 tests collected*"])


def test_xdist_spreads_items_over_two_workers(project: Project) -> None:
    file = project.workflow(
        "search",
        SEARCH_WORKFLOW.replace(
            "vars: {query: QUIC}", "parametrize:\n  query: [QUIC, WebRTC, HLS, TCP]"
        ),
    )
    project.states(file, "search", SEARCH_STATES)
    project.pytester.makeconftest(
        """
        import os
        def pytest_netgent_run_finished(item, result):
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            with open(f"ran-{worker}-{os.getpid()}.txt", "a") as fh:
                fh.write(item.nodeid + "\\n")
        """
    )
    result = project.run_subprocess("-n", "2", "--dist", "load")
    result.assert_outcomes(passed=4)
    files = sorted(p.name for p in project.path.glob("ran-gw*.txt"))
    assert {f.split("-")[1] for f in files} == {"gw0", "gw1"}, files


def test_secret_is_typed_but_never_reported(project: Project, changed_url: str) -> None:
    file = project.workflow(
        "login",
        """
        name: login
        start_url: "{base_url}/wiki/login"
        secrets: {password: NETGENT_TEST_PASSWORD}
        states:
          - name: Login
            triggers: [The login form is shown]
            actions:
              - Type researcher into Username
              - Type {password} into Password
              - Click Log in
          - name: Account
            triggers: [The welcome heading is shown]
            end: Logged in
        """,
    )
    login_actions = [
        {"type": "type", "params": {**css("[name=username]"), "text": "researcher"}},
        {"type": "type", "params": {**css("[name=password]"), "text": "{password}"}},
        {"type": "click", "params": css("main form button[type=submit]")},
    ]
    project.states(
        file,
        "login",
        {
            "Login": ([element("input[name=password]")], login_actions),
            "Account": ([url_is("{base_url}/wiki/account"), element("#welcome")], []),
        },
    )
    os.environ["NETGENT_TEST_PASSWORD"] = "netgent-pass"
    try:
        passed = project.run()
        passed.assert_outcomes(passed=1)
        # the changed site accepts the login but its welcome heading has no #welcome
        failed = project.run("-rA", base_url=changed_url)
        failed.assert_outcomes(failed=1)
    finally:
        del os.environ["NETGENT_TEST_PASSWORD"]
    text = failed.stdout.str()
    assert "type css selector='[name=password]' text='{password}'" in text
    assert "netgent-pass" not in text
    for path in project.path.rglob("*"):
        if path.is_file() and path.suffix != ".png":
            assert b"netgent-pass" not in path.read_bytes(), path
    missing = project.run()
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(
        [
            "login.netgent.yaml:3: secret 'password' from $NETGENT_TEST_PASSWORD is not set: "
            "export the environment variable before running pytest*"
        ]
    )


def test_navigation_outside_allowed_hosts_fails(project: Project) -> None:
    file = project.workflow(
        "escape",
        """
        name: escape
        start_url: "{base_url}/wiki/"
        states:
          - name: Home
            triggers: [Home is shown]
            actions: [Go to another site]
          - name: Elsewhere
            triggers: [Never]
            end: Left
        """,
    )
    project.states(
        file,
        "escape",
        {
            "Home": (
                [element("#search-input")],
                [{"type": "navigate", "params": {"url": "http://localhost:9/elsewhere"}}],
            ),
            "Elsewhere": ([element("body")], []),
        },
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  reason: navigation to http://localhost:9/elsewhere is outside allowed_hosts "
            "['127.0.0.1']: add the host to the workflow's 'allowed_hosts' if this is expected"
        ]
    )


def test_base_url_missing_is_a_clear_error(pytester: pytest.Pytester) -> None:
    from .helpers import QUIET

    project = Project(pytester, "")
    file = project.workflow("home", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*home.netgent.yaml:1: workflow 'search' uses {base_url}*"])


def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester) -> None:
    from .helpers import QUIET

    result = pytester.runpytest(*QUIET, "--netgent-state-timeout=soon")
    result.stderr.fnmatch_lines(
        [
            "ERROR: --netgent-state-timeout expects a number of seconds greater than 0, got "
            "'soon': e.g. --netgent-state-timeout=10"
        ]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = pytester.runpytest(*QUIET, "--netgent-base-url=127.0.0.1:8000")
    result.stderr.fnmatch_lines(["ERROR: --netgent-base-url expects an http:// or https:// URL*"])


def test_missing_chromium_names_the_fix(project: Project, tmp_path: Path) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    result = project.run(f"--netgent-chromium={tmp_path / 'nope'}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"Chromium not found at {tmp_path / 'nope'} (--netgent-chromium or ini "
            "netgent_chromium): install it with 'apt-get install -y chromium chromium-driver', "
            "or give the path of an installed one"
        ]
    )


@pytest.mark.uc
def test_uc_mode_replays_without_download_attempts(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    project.pytester.makeconftest(
        """
        import pytest

        @pytest.fixture(autouse=True)
        def _record_driver_kind(request, netgent_browser):
            yield
            request.config._netgent_driver_kind = type(netgent_browser.driver).__module__

        def pytest_unconfigure(config):
            print("driver module:", getattr(config, "_netgent_driver_kind", "?"))
        """
    )
    import seleniumbase

    drivers = Path(seleniumbase.__file__).parent / "drivers"
    before = {p.name: p.stat().st_mtime for p in drivers.iterdir()}
    result = project.run("--netgent-uc", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["driver module: seleniumbase.undetected*"])
    output = result.stdout.str() + result.stderr.str()
    assert "Exception managing chrome" not in output
    assert "googlechromelabs" not in output
    # nothing written into the installed package (its drivers folder)
    assert {p.name: p.stat().st_mtime for p in drivers.iterdir()} == before
    # nor SeleniumBase's downloads folder into the project
    assert not (project.path / "downloaded_files").exists()


def test_browser_args_reach_chromium(project: Project) -> None:
    project.pytester.makepyfile(
        test_agent="""
        def test_agent(netgent_browser):
            agent = netgent_browser.driver.execute_script("return navigator.userAgent")
            assert agent == "netgent-test-agent"
        """
    )
    result = project.run("--netgent-browser-arg=--user-agent=netgent-test-agent")
    result.assert_outcomes(passed=1)
