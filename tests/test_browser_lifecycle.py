"""A worker's browser from its start to its stop: it starts under a long temporary folder,
a ChromeDriver that goes away as it starts is tried again and then named, and a driver
that dies or a run stopped by a signal leaves no browser or profile behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import (
    QUIET,
    SEARCH_STATES,
    SEARCH_WORKFLOW,
    Project,
    kill_conftest,
    leftovers,
)

WAITS = """
name: {name}
start_url: "{{base_url}}/wiki/"
states:
  - name: Home
    triggers: [The search box is visible]
    actions: [Wait {seconds} seconds]
    end: waited
"""


SEARCH_BOX = {"by": "css selector", "selector": "#search-input"}


def waiting_workflow(project: Project, name: str, seconds: int) -> None:
    path = project.workflow(name, WAITS.format(name=name, seconds=seconds))
    project.raw_states(
        path,
        name,
        [{"name": "Home", "checks": [{"type": "element", "params": SEARCH_BOX}],
          "actions": [{"type": "wait", "params": {"seconds": seconds}}], "end_state": "waited"}],
    )  # fmt: skip


@pytest.mark.usefixtures("cpu_burners")  # a stop must hold on a busy machine
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["killed", "ctrl-c"])
def test_a_driver_that_dies_leaves_no_browser_behind(
    project: Project, short_tmp: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals
) -> None:
    tmp = short_tmp
    monkeypatch.setenv("TMPDIR", str(tmp))
    waiting_workflow(project, "victim", 4)
    waiting_workflow(project, "wrap-up", 1)  # collected after the victim
    project.pytester.makeconftest(kill_conftest("driver", stop))
    result = project.run_subprocess("-p", "no:randomly")
    result.stdout.fnmatch_lines(["*the browser crashed or stopped answering at step 1*"])
    if stop == signal.SIGKILL:  # the next item starts a new browser
        result.assert_outcomes(passed=1, failed=1)
    else:
        # a Ctrl-C reaches the whole process group: should pytest itself miss it, the
        # driver ended by it still stops the run before another browser starts
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*KeyboardInterrupt: the browser's ChromeDriver was stopped by SIGINT (Ctrl-C)*"]
        )
    assert leftovers(tmp) == ([], [])


def browsers_started(tmp: Path) -> set[bytes]:
    """The profiles in ``tmp`` a browser runs on (a profile folder is made before its
    browser starts)."""
    found = set()
    for pid in leftovers(tmp)[1]:
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            found.update(a for a in args if a.startswith(b"--user-data-dir="))
    return found


@pytest.mark.parametrize(
    ("stop", "workers"),
    [(signal.SIGINT, 2), (signal.SIGTERM, 2), (signal.SIGTERM, 0)],
    ids=["ctrl-c", "sigterm", "sigterm-one-process"],
)
@pytest.mark.usefixtures("cpu_burners")  # a stop must hold on a busy machine
def test_a_stopped_run_leaves_no_browser_or_profile(
    project: Project, short_tmp: Path, stop: signal.Signals, workers: int
) -> None:
    tmp = short_tmp
    for n in range(4):
        waiting_workflow(project, f"long{n}", 30)
    command = [sys.executable, "-m", "pytest", *QUIET, "-n", str(workers), "-p", "no:randomly",
               f"--netgent-base-url={project.base_url}"]  # fmt: skip
    browsers = max(workers, 1)
    run = subprocess.Popen(
        command,
        cwd=project.path,
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(browsers_started(tmp)) < browsers and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(browsers_started(tmp)) == browsers, "every browser started"
        time.sleep(4)  # the items are inside their wait
        os.killpg(run.pid, stop)  # what a terminal's Ctrl-C (or a CI job's timeout) does
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            still = subprocess.run(["ps", "-o", "pid,stat,etime,args", "-g", str(run.pid)],
                                   capture_output=True, text=True, check=False).stdout  # fmt: skip
            pytest.fail(f"the run did not end within 60 s of {stop.name}; still running:\n{still}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    # SIGTERM too: the run ends as pytest's own Ctrl-C ends it, its workers and their
    # browsers with it
    assert run.returncode == pytest.ExitCode.INTERRUPTED
    time.sleep(1)  # what the browser's own helpers end on their own
    assert leftovers(tmp) == ([], [])


@pytest.mark.parametrize("length", [30, 40, 90])
def test_a_long_temporary_folder_still_starts_the_browser(
    project: Project, monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    """Chromium's socket under TMPDIR must fit 107 bytes: a TMPDIR of 27-40 characters
    failed every item with "check that chromium and chromium-driver are the same
    version". Both the plugin's own profiles and a user's (--netgent-user-data-dir)."""
    import tempfile as tmp

    root = Path(tmp.mkdtemp(prefix="ng-", dir="/tmp"))
    folder = root / ("x" * (length - len(str(root)) - 1))
    folder.mkdir()
    profile = root / "p"
    profile.mkdir()
    try:
        monkeypatch.setenv("TMPDIR", str(folder))
        path = project.workflow("search", SEARCH_WORKFLOW)
        project.states(path, "search", SEARCH_STATES)
        project.run_subprocess().assert_outcomes(passed=1)
        project.run_subprocess(f"--netgent-user-data-dir={profile}").assert_outcomes(passed=1)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_socket_path_too_long_is_named_as_the_cause() -> None:
    from pytest_netgent.browser.tempdir import socket_room

    assert socket_room("/tmp") > 0
    assert socket_room("/tmp/" + "x" * 56) == 0  # 61 characters: the longest that fits
    assert socket_room("/tmp/" + "x" * 57) < 0


VANISHING_DRIVER = """
import socket, sys
port = int(next(a for a in sys.argv if a.startswith("--port=")).split("=")[1])
with open(sys.argv[0] + ".starts", "a") as log:
    log.write("start\\n")
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen()
server.accept()[0].close()  # it answers that it listens...
server.accept()[0].close()  # ...then its process goes away, the new session unanswered
"""


def test_a_chromedriver_that_goes_away_as_it_starts_is_tried_again_then_named(
    tmp_path: Path,
) -> None:
    """A ChromeDriver whose process goes away once it has listened (a loaded machine,
    something ending its processes) fails the start with an error naming it and what to
    check, never a transport's traceback (older Selenium let that out: then the start is
    tried once more with a new ChromeDriver)."""
    from pytest_netgent.browser.session import BrowserOptions, start_browser
    from pytest_netgent.errors import BrowserError

    fake = tmp_path / "chromedriver"
    fake.write_text(f"#!{sys.executable}\n{VANISHING_DRIVER}", encoding="utf-8")
    fake.chmod(0o755)
    with pytest.raises(BrowserError) as failed:
        start_browser(BrowserOptions(chromedriver=str(fake)))
    said = str(failed.value)
    assert str(fake) in said and ("stopped answering" in said or "did not start" in said), said
    starts = (tmp_path / "chromedriver.starts").read_text().count("start")
    assert starts == (2 if "stopped answering" in said else 1), (starts, said)
