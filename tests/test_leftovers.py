"""Runs that end without cleaning up: SIGKILL, ``os._exit``, a start cut short. Nothing the
plugin started outlives its run, and the next run removes what a kill still left and
says so. Each test looks at the process table, the network namespaces, the links, the
firewall tables and the temporary folders before and after."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.browser.session import BrowserOptions, start_browser
from pytest_netgent.plugin.shaping import unavailable
from pytest_netgent.system import leftovers

from .helpers import QUIET, Project, css, element

needs_shaping = pytest.mark.skipif(bool(unavailable("")), reason=unavailable(""))


def owned_by(pid: int) -> dict[int, tuple[str, str]]:
    """The live processes the pytest process ``pid`` started (and their helpers)."""
    return leftovers.owned_processes(lambda mark: mark.startswith(f"{pid}."))


def namespace_holders(inode: str) -> list[int]:
    """The processes in the network namespace ``inode`` (``net:[N]``)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry}/ns/net") == inode:
                    found.append(int(entry))
    return found


def left_of(pid: int, namespace: str = "") -> dict[str, Any]:
    """Everything of the pytest process ``pid`` on this machine: processes, processes in
    its network namespace, its uplink, its firewall chain and table, its folders and its
    ledger."""

    def out(*command: str) -> str:
        return subprocess.run(command, capture_output=True, text=True).stdout

    temp = {tempfile.gettempdir(), "/tmp"}
    return {
        "processes": sorted(name for name, _ in owned_by(pid).values()),
        "namespace": namespace_holders(namespace) if namespace else [],
        "link": bool(re.search(rf" ngh{pid}[@:]", out("ip", "-o", "link"))),
        "chain": f"NETGENT-{pid}" in out("iptables", "-w", "-t", "mangle", "-S"),
        "table": f"netgent_{pid}" in out("nft", "list", "tables"),
        "folders": sorted(str(f) for t in temp for f in Path(t).glob(f"netgent-browser-{pid}-*")),
        "ledger": sorted(str(f) for f in leftovers.LEDGER.glob(f"{pid}.*")),
    }


NOTHING = {
    "processes": [],
    "namespace": [],
    "link": False,
    "chain": False,
    "table": False,
    "folders": [],
    "ledger": [],
}


def wait_for(check: Callable[[], bool], seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def watcher_of(pid: int) -> int:
    """The watcher process of the pytest process ``pid``."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                mine = any(arg.startswith(f"{pid}.".encode()) for arg in args)
                if b"pytest_netgent.system.leftovers" in args and mine:
                    return int(entry)
    raise AssertionError(f"pytest {pid} has no watcher")


def hanging_far_run(project: Project, remote_site: str) -> subprocess.Popen[bytes]:
    """pytest (no xdist: it is its own worker) replaying, under a network condition with
    a delay, a workflow on a site beyond the loopback whose second state never comes:
    Chromium, ChromeDriver and tcpdump run in its namespace, its uplink and the host's
    chain and table for it are up."""
    file = project.workflow(
        "far",
        f"""
        name: far
        start_url: "{remote_site}/big"
        network: "rate=8mbit,delay=20ms"
        timeout: 120
        states:
          - name: Loaded
            triggers: [The done paragraph is shown]
            actions: [Click the done paragraph]
          - name: Never
            triggers: [A heading that never comes is shown]
            end: Never
        """,
    )
    project.states(
        file,
        "far",
        {
            "Loaded": ([element("#done")], [{"type": "click", "params": css("#done")}]),
            "Never": ([element("#never")], []),
        },
    )
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *QUIET, "-p", "no:cacheprovider", "-n", "0",
         "--netgent-capture=pcap", f"--netgent-artifacts={project.path / 'out'}",
         "--netgent-state-timeout=100", str(file)],
        cwd=project.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip


@needs_shaping
@pytest.mark.parametrize("watcher", ["lives", "killed too"])
def test_a_shaped_run_killed_outright_leaves_nothing_behind(
    project: Project, remote_site: str, watcher: str
) -> None:
    """SIGKILL of pytest in the middle of a shaped run: its watcher ends the browser,
    the driver and tcpdump (so the namespace goes, and the uplink with it) and removes
    the host's chain and table and the browser folder. If the watcher is killed too, the
    next session of the project removes them and says what it removed."""
    run = hanging_far_run(project, remote_site)
    pid = run.pid
    try:
        started = wait_for(
            lambda: (
                {"chromedriver", "tcpdump"} <= set(left_of(pid)["processes"])
                and left_of(pid)["chain"]
            ),
            90,
        )
        assert started, (run.poll(), left_of(pid))
        namespace = os.readlink(f"/proc/{pid}/ns/net")
        before = left_of(pid, namespace)
        assert "chromium" in before["processes"], before
        assert before["namespace"] and before["link"] and before["table"], before
        assert before["folders"] and before["ledger"], before
        if watcher == "killed too":
            os.kill(watcher_of(pid), signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        run.wait()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        if run.stdout is not None:
            run.stdout.close()
    if watcher == "lives":
        assert wait_for(lambda: left_of(pid, namespace) == NOTHING), left_of(pid, namespace)
        return
    time.sleep(2)  # nobody is left to clean up: the processes stay
    stayed = left_of(pid, namespace)
    assert stayed["processes"] and stayed["folders"], stayed
    nxt = project.pytester.runpytest_subprocess(*QUIET, "--collect-only", "-q")
    out = nxt.stdout.str()
    said = [line for line in out.splitlines() if f"pytest {pid}:" in line]
    assert said and said[0].startswith("netgent: removed what an ended run left behind"), out
    for what in ("chromedriver", "chromium", "tcpdump", "browser folder"):
        assert what in said[0], said
    # the host's chain and table go with the next shaped link of any run (a concurrent
    # test's worker may have come first): where they stayed, the next session names them
    # (between `stayed` and that session, another xdist worker's shaped link may sweep
    # them first: then they are gone all the same)
    now = left_of(pid, namespace)
    if stayed["chain"]:
        assert f"mangle chain NETGENT-{pid}" in said[0] or not now["chain"], (said, now)
    if stayed["table"]:
        assert f"nft table netgent_{pid}" in said[0] or not now["table"], (said, now)
    assert wait_for(lambda: left_of(pid, namespace) == NOTHING), left_of(pid, namespace)


def test_a_run_that_pytest_timeout_exits_leaves_no_browser(pytester: pytest.Pytester) -> None:
    """pytest-timeout's thread method ends pytest with ``os._exit``: no teardown, no
    atexit. The watcher ends the browser and removes its folder all the same."""
    pytester.makepyfile(
        test_hang="""
        import time
        import pytest

        @pytest.mark.timeout(3, method="thread")
        def test_hang(netgent_browser):
            netgent_browser.driver.get("data:text/html,<p>hi</p>")
            time.sleep(60)
        """
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", *QUIET, "-p", "no:cacheprovider", "test_hang.py"],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    pid = run.pid
    seen: dict[str, Any] = {}
    assert wait_for(lambda: bool(seen.update(left_of(pid)) or seen["processes"]), 60)
    assert "chromedriver" in seen["processes"] and seen["folders"], seen
    out, _ = run.communicate(timeout=120)
    assert b"Timeout" in out, out.decode()[-2000:]
    assert wait_for(lambda: left_of(pid) == NOTHING), left_of(pid)


SLOW_CHROMIUM = """#!/bin/sh
sleep {seconds}
exec {chromium} "$@"
"""


def slow_chromium(folder: Path, seconds: float) -> Path:
    """A Chromium that takes ``seconds`` longer than the real one to start."""
    chromium, _ = BrowserOptions().locate()
    script = folder / "slow-chromium"
    script.write_text(SLOW_CHROMIUM.format(seconds=seconds, chromium=chromium))
    script.chmod(0o755)
    return script


class _Alarm(Exception):
    pass


def _alarm() -> None:
    raise _Alarm


def _ctrl_c_on_a_refused_connection() -> None:
    # where Ctrl-C lands while the start polls a port not yet listening: the refusal
    # being handled becomes the interrupt's context
    try:
        raise ConnectionRefusedError(111, "Connection refused")
    except ConnectionRefusedError:
        raise KeyboardInterrupt  # noqa: B904


@pytest.mark.parametrize(
    ("interrupt", "raised"),
    [(_alarm, _Alarm), (_ctrl_c_on_a_refused_connection, KeyboardInterrupt)],
    ids=["timeout-signal", "ctrl-c-on-a-refused-connection"],
)
def test_a_browser_start_cut_short_leaves_no_driver(
    short_tmp: Path, interrupt: Callable[[], None], raised: type[BaseException]
) -> None:
    """A start interrupted while Chromium is coming up (a timeout plugin's signal,
    Ctrl-C) ends ChromeDriver and what it started, instead of leaving them running until
    the session ends; and it is not taken for a ChromeDriver gone away and started again
    (a Ctrl-C that came while the start handled a refused connection was: the run went
    on with a new browser)."""
    mine = owned_by(os.getpid())

    def alarm(signum: int, frame: Any) -> None:
        interrupt()

    options = BrowserOptions(
        chromium=str(slow_chromium(short_tmp, 30)), user_data_dir=str(short_tmp / "profile")
    )
    seen: dict[int, str] = {}
    done = threading.Event()

    def look() -> None:  # what the start had started when it was cut short
        while not done.wait(0.1):
            for pid, (name, _) in owned_by(os.getpid()).items():
                if pid not in mine:
                    seen[pid] = name

    looker = threading.Thread(target=look)
    looker.start()
    previous = signal.signal(signal.SIGALRM, alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 3.0)
        with pytest.raises(raised):
            start_browser(options)
        time.sleep(0.5)  # a second start, if one were made, shows in the meantime
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        done.set()
        looker.join()
    assert sorted(seen.values()).count("chromedriver") == 1, seen
    assert "slow-chromium" in seen.values(), seen
    left = {p: v for p, v in owned_by(os.getpid()).items() if p not in mine}
    assert left == {}, left


def test_the_browser_start_is_not_charged_to_the_first_item(
    project: Project, short_tmp: Path
) -> None:
    """A browser that takes 4 s to start, and a 3 s pytest-timeout per item: the
    start happens before the item's timer, so the item passes."""
    project.pytester.makepyfile(
        test_quick="""
        def test_quick(netgent_browser):
            netgent_browser.driver.get("data:text/html,<p>hi</p>")
        """
    )
    result = project.run_subprocess(
        "--timeout=3",
        "--timeout-method=signal",
        f"--netgent-chromium={slow_chromium(short_tmp, 4)}",
        "test_quick.py",
    )
    result.assert_outcomes(passed=1)


def test_a_killed_process_whose_parent_never_reaps_it_is_not_waited_for() -> None:
    """A browser's helper killed while its parent lives on (or a container's init that
    never reaps) stays a zombie: it has ended, and ending it must not wait until the
    deadline (a Ctrl-C of a -n 2 record took 11 s)."""
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import subprocess, sys, time\n"
         "child = subprocess.Popen(['sleep', '300'])\n"
         "print(child.pid, flush=True)\n"
         "time.sleep(300)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        table = leftovers._processes()
        started = time.monotonic()
        leftovers._kill(table, [child], deadline=time.monotonic() + 60)
        took = time.monotonic() - started
        state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
        assert state == "Z"  # killed, not reaped by its parent
        assert took < 30, took  # not the 60 s deadline
    finally:
        parent.kill()
        parent.communicate()


@needs_shaping
def test_a_dead_workers_table_and_chain_are_removed_though_its_pid_runs_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker killed outright left its NAT table and mangle chain, named after its pid;
    another process now runs under that pid (here: this test's own). The next worker's
    sweep removes them: only a running owner's ledger keeps a host object."""
    from pytest_netgent.network import link, netns

    # this test runs on the host's network: the host is where it is
    monkeypatch.setattr(netns, "in_host", lambda *command, text="": netns._run(command, text))
    pid = os.getpid()  # runs, but never made the two
    table, chain = f"netgent_{pid}", f"NETGENT-{pid}"
    kept = f"netgent_{pid + 1}"  # listed by a running owner: this process
    subprocess.run(["nft", "add", "table", "ip", table], check=True)
    subprocess.run(["nft", "add", "table", "ip", kept], check=True)
    subprocess.run(["iptables", "-w", "-t", "mangle", "-N", chain], check=True)
    leftovers.claim("nft-table", kept)
    try:
        netns._sweep_host()
        link._sweep_host_chains()
        tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
        rules = subprocess.run(
            ["iptables", "-w", "-t", "mangle", "-S"], capture_output=True, text=True
        ).stdout
        assert f"table ip {table}\n" not in tables
        assert f"-N {chain}\n" not in rules
        assert f"table ip {kept}\n" in tables
    finally:
        for command in (
            ["nft", "delete", "table", "ip", table],
            ["nft", "delete", "table", "ip", kept],
            ["iptables", "-w", "-t", "mangle", "-X", chain],
        ):
            subprocess.run(command, capture_output=True)
        leftovers.release("nft-table", kept)
