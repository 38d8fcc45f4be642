"""Ctrl-C under load: how soon a parallel run ends after SIGINT, and what it leaves.

    python bench/interrupt.py [--rounds N] [--at 2,6,12] [--burners N] [--quick]

The wiki's example suite replays with ``-n 2 --count 3`` beside ``--burners`` processes
that keep the machine's cores busy (a CI runner shared with other jobs); ``--at`` seconds
after the start the whole process group gets SIGINT, as a terminal's Ctrl-C sends it (at
2 s the workers are starting their browsers, at 6 s the first items run, at 12 s items
end and others start). Each run must end within ``--bound`` seconds with pytest's
interrupted status (2; or -2, ended by the signal, while pytest still loads its plugins)
and leave nothing: no process of its own (found by the TMPDIR each
run is given, which every browser, driver and helper inherits), no file in that TMPDIR
(profiles, sockets, scratch folders) and no network namespace it made. ``--quick`` (CI):
one run, SIGINT at 6 s; ``--capture``: every item captured (tcpdump in a network namespace
of each worker's own, HAR).

Last line: ``interrupt: N/M runs ended within B s and left nothing; slowest S s``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUIET += ["-p", "no:cacheprovider", "-p", "no:randomly", "-q"]
BURN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"


def burners(count: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that each keep a core busy for at most ``seconds``."""
    code = BURN.format(seconds=seconds)
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


def namespaces() -> set[str]:
    """The network namespaces there are now (``ip netns list``)."""
    if shutil.which("ip") is None:
        return set()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}


def running_in(tmp: Path) -> list[str]:
    """The processes still running with ``tmp`` as their TMPDIR or on their command line."""
    mine = str(tmp).encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            seen = Path(f"/proc/{entry}/cmdline").read_bytes()
            seen += b"\0" + Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (b"TMPDIR=" + mine in seen or mine in seen.split(b"\0")[0]):
            args = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            found.append(f"{entry} {args.decode(errors='replace')[:100]}")
    return found


def left_files(tmp: Path) -> list[str]:
    """What is left in the run's TMPDIR, but pytest's own base folder (``pytest-of-USER``,
    which pytest keeps for the last three runs by design)."""
    return sorted(p.name for p in tmp.iterdir() if not p.name.startswith("pytest-of-"))


def one_run(at: float, bound: float, extra: list[str]) -> tuple[bool, float, str]:
    """Start the run, SIGINT its group ``at`` seconds in: ``(clean, seconds to end, what
    was wrong)``."""
    tmp = Path(tempfile.mkdtemp(prefix="ngi", dir="/tmp"))
    before = namespaces()
    command = [sys.executable, "-m", "pytest", *QUIET, "example_suites/wiki", "-n", "2"]
    artifacts = Path(tempfile.mkdtemp(prefix="ngi-artifacts-"))  # what a capture writes
    command += ["--count", "3", f"--netgent-artifacts={artifacts}", *extra]
    run = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    wrong = []
    try:
        time.sleep(at)
        if run.poll() is not None:
            return False, 0.0, f"the run had ended before the SIGINT (exit {run.returncode})"
        os.killpg(run.pid, signal.SIGINT)
        sent = time.monotonic()
        try:
            out, _ = run.communicate(timeout=bound)
            took = time.monotonic() - sent
        except subprocess.TimeoutExpired:
            took = time.monotonic() - sent
            still = subprocess.run(["ps", "-o", "pid,stat,etime,args", "-g", str(run.pid)],
                                   capture_output=True, text=True, check=False).stdout  # fmt: skip
            wrong.append(f"still running {bound:.0f} s after SIGINT:\n{still}")
            out = b""
        # -2: ended by the SIGINT itself, as any Python program is while pytest still
        # loads its plugins (before the session, and this plugin, start)
        if run.returncode not in (None, int(pytest_interrupted()), -signal.SIGINT):
            tail = out.decode(errors="replace").strip().splitlines()[-3:]
            wrong.append(f"exit {run.returncode}, not 2 (interrupted): {' | '.join(tail)}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    deadline = time.monotonic() + 3  # what a browser's own helpers end on their own
    while (running_in(tmp) or left_files(tmp)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left := running_in(tmp):
        wrong.append("processes left: " + "; ".join(left))
    if files := left_files(tmp):
        wrong.append("files left in TMPDIR: " + ", ".join(files))
    if made := namespaces() - before:
        wrong.append("network namespaces left: " + ", ".join(sorted(made)))
    for pid in running_in(tmp):  # never leave a stray process to the next run
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid.split()[0]), signal.SIGKILL)
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(artifacts, ignore_errors=True)
    return not wrong, took, "; ".join(wrong)


def pytest_interrupted() -> int:
    """pytest's exit status of an interrupted run."""
    import pytest

    return int(pytest.ExitCode.INTERRUPTED)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="runs at each --at (default 2)")
    parser.add_argument("--at", default="2,6,12", help="seconds from start to SIGINT")
    parser.add_argument("--burners", type=int, default=2, help="busy processes beside the run")
    parser.add_argument("--bound", type=float, default=20.0, help="seconds a run may take to end")
    parser.add_argument(
        "--capture", action="store_true", help="capture every item (tcpdump, a namespace)"
    )
    parser.add_argument("--quick", action="store_true", help="one run, SIGINT at 6 s (CI)")
    args = parser.parse_args()
    delays = [6.0] if args.quick else [float(s) for s in args.at.split(",")]
    rounds = 1 if args.quick else args.rounds
    runs = [at for _ in range(rounds) for at in delays]
    extra = ["--netgent-capture=pcap,har"] if args.capture else []
    load = burners(args.burners, seconds=len(runs) * (max(delays) + args.bound + 30))
    clean, slowest = 0, 0.0
    try:
        for n, at in enumerate(runs, 1):
            ok, took, wrong = one_run(at, args.bound, extra)
            clean += ok
            slowest = max(slowest, took)
            verdict = "clean" if ok else f"WRONG: {wrong}"
            print(f"run {n}: SIGINT at {at:.0f} s, ended {took:.1f} s later, {verdict}", flush=True)
    finally:
        for burner in load:
            burner.kill()
            burner.wait()
    print(
        f"interrupt: {clean}/{len(runs)} runs ended within {args.bound:.0f} s and left "
        f"nothing; slowest {slowest:.1f} s"
    )
    return 0 if clean == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
