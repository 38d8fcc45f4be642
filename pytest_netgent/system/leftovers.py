"""What a run leaves behind when it ends without cleaning up, and what removes it.

A run that ends normally, on Ctrl-C or on SIGTERM removes what it made. One that is
killed outright (SIGKILL, the out-of-memory killer, ``os._exit`` from another plugin)
cannot, so everything the plugin makes says whose it is:

- every process it starts (ChromeDriver and its browser, tcpdump, a scenario's commands)
  carries :data:`OWNER` in its environment; helpers of those processes are found as
  their descendants;
- every browser folder holds an :data:`OWNER_FILE`;
- every object it makes on the host's network (a worker's NAT table, mangle chain and
  uplink) is listed in a ledger file under :data:`LEDGER`.

The owner is a pytest process, told by its pid and start time (a reused pid is another
owner), and the project it ran (its root folder), written ``PID.START@PROJECT``.

Two things remove what belongs to an owner that no longer runs. :func:`watch` starts a
small watcher process beside each process that makes any of it: the kernel wakes the
watcher when its owner ends, however it ends, and the watcher removes what the owner
left. :func:`sweep`, run as each session starts, removes what an owner of the same
project left when its watcher could not (it was killed too) and says what it removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

OWNER = "NETGENT_OWNER"
"""The environment variable that names the owner of every process the plugin starts."""
OWNER_FILE = ".netgent-owner"
"""The file in each browser folder that names its owner."""
LEDGER = Path("/run/netgent")
"""One file per owner listing the objects it made on the host's network."""
FOLDER_PREFIX = "netgent-browser-"
"""How the browser folders the plugin makes in the temporary folder are named."""

_project = ""
_watching: int | None = None
_mark: tuple[int, str] = (0, "")
_ledger_lock = threading.Lock()


def set_project(root: Path | str) -> None:
    """Name the project this process runs (its root folder); a session's sweep removes
    only what runs of its own project left."""
    global _project
    _project = hashlib.sha1(os.fsencode(str(Path(root).resolve()))).hexdigest()[:12]


def _project_key() -> str:
    if not _project:
        set_project(os.getcwd())
    return _project


def _start_time(pid: int) -> str:
    """When process ``pid`` started (psutil's create time, the same at every reading of
    one process), "" if it does not run: a pid with another start is another process."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return ""
        return f"{process.create_time():.3f}"
    except psutil.Error:
        return ""


def owner_mark() -> str:
    """This process's owner name, ``PID.START@PROJECT``: fixed at its first use, so that
    everything this process makes has one owner (a pytester run inside a test names
    another project, not another owner)."""
    global _mark
    pid = os.getpid()
    if _mark[0] != pid:  # first use, or a forked child
        _mark = (pid, f"{pid}.{_start_time(pid)}@{_project_key()}")
    return _mark[1]


def _parse(mark: str) -> tuple[int, str, str] | None:
    found = re.fullmatch(r"(\d+)\.(\d+(?:\.\d+)?|)@([0-9a-f]*)", mark)
    return (int(found[1]), found[2], found[3]) if found else None


def owner_gone(mark: str) -> bool:
    """Whether the owner ``mark`` no longer runs (a malformed mark is nobody's)."""
    parsed = _parse(mark)
    if parsed is None:
        return False
    pid, start, _ = parsed
    now = _start_time(pid)
    return not now or (bool(start) and now != start)


def owned_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with this process's owner mark, for
    a process the plugin starts; a watcher ends that process if this one dies first."""
    watch()
    return {**(os.environ if env is None else env), OWNER: owner_mark()}


def own_folder(base: str, prefix: str = FOLDER_PREFIX) -> Path:
    """Make a folder of this process's own in ``base`` (named ``PREFIX<pid>-XXXXXXXX``),
    marked with its owner, so that it is removed if this process dies."""
    watch()
    folder = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=base))
    (folder / OWNER_FILE).write_text(owner_mark(), encoding="utf-8")
    return folder


# objects on the host's network, as ledger lines: what and how each is removed
_HOST_KINDS = ("nft-table", "mangle-chain", "link")


def claim(kind: str, name: str) -> None:
    """List a host object this process made (``kind`` one of nft-table, mangle-chain,
    link) in its ledger file, so that it is removed if this process dies first."""
    assert kind in _HOST_KINDS, kind
    watch()
    with _ledger_lock, contextlib.suppress(OSError):  # not root: nothing to list
        LEDGER.mkdir(mode=0o700, exist_ok=True)
        with open(LEDGER / owner_mark(), "a", encoding="utf-8") as ledger:
            ledger.write(f"{kind} {name}\n")


def release(kind: str, name: str) -> None:
    """Take a host object this process removed itself off its ledger."""
    path = LEDGER / owner_mark()
    with _ledger_lock, contextlib.suppress(OSError):
        lines = path.read_text(encoding="utf-8").splitlines()
        left = [line for line in lines if line != f"{kind} {name}"]
        if left:
            path.write_text("".join(f"{line}\n" for line in left), encoding="utf-8")
        else:
            path.unlink()


def claimed(kind: str, name: str) -> bool:
    """Whether a running process lists host object ``kind name`` in its ledger. Each
    process lists an object before it makes it, so one that exists and is listed by no
    running process was left by one that died (a process that now has its pid included:
    the owner's start time tells the two apart)."""
    line = f"{kind} {name}"
    with contextlib.suppress(OSError):
        for ledger in LEDGER.iterdir() if LEDGER.is_dir() else ():
            with contextlib.suppress(OSError):
                listed = line in ledger.read_text(encoding="utf-8").splitlines()
                if listed and not owner_gone(ledger.name):
                    return True
    return False


Run = Callable[..., str]
"""Runs a command where the host's network is (``run(*argv)``), its output; OSError on
failure."""


def run_here(*command: str) -> str:
    """Run ``command`` in this process's network namespace."""
    answer = subprocess.run(command, capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        raise OSError(f"{' '.join(command)}: {answer.stderr.strip() or answer.returncode}")
    return answer.stdout


def remove_host_object(kind: str, name: str, run: Run = run_here) -> bool:
    """Remove one host object; whether it was there to remove."""
    try:
        if kind == "nft-table":
            run("nft", "delete", "table", "ip", name)
        elif kind == "link":
            run("ip", "link", "del", name)
        elif kind == "mangle-chain":
            rules = run("iptables", "-w", "-t", "mangle", "-S")
            if f"-N {name}\n" not in rules + "\n":
                return False
            for jump in re.findall(rf"^-A (\S+ .*-j {re.escape(name)})$", rules, re.M):
                run("iptables", "-w", "-t", "mangle", "-D", *shlex.split(jump))
            run("iptables", "-w", "-t", "mangle", "-F", name)
            run("iptables", "-w", "-t", "mangle", "-X", name)
        else:
            return False
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class _Process:
    handle: psutil.Process
    """The process itself: signalled only while it is the one read (psutil checks its
    create time, so a pid reused since is left alone)."""
    parent: int
    name: str
    environ: dict[str, str]
    args: list[str]


def _processes() -> dict[int, _Process]:
    """Every live process but this one (zombies are not live): pid -> its parent, name,
    environment and command line, as psutil reads them (on Linux from ``/proc``; on
    macOS the environment of the user's own processes)."""
    import psutil

    found: dict[int, _Process] = {}
    wanted = ["ppid", "name", "environ", "cmdline", "status"]
    for process in psutil.process_iter(wanted):
        info = process.info
        if process.pid == os.getpid() or info["status"] == psutil.STATUS_ZOMBIE:
            continue
        found[process.pid] = _Process(
            process,
            info["ppid"] or 0,
            info["name"] or "",
            info["environ"] or {},
            info["cmdline"] or [],
        )
    return found


def _with_descendants(
    table: dict[int, _Process], roots: dict[int, str]
) -> dict[int, tuple[str, str]]:
    """``roots`` (pid -> a tag) and every descendant of theirs, tagged as its root:
    pid -> (name, tag)."""
    found = {pid: (table[pid].name, tag) for pid, tag in roots.items()}
    grew = True
    while grew:
        children = {
            pid: (proc.name, found[proc.parent][1])
            for pid, proc in table.items()
            if proc.parent in found and pid not in found
        }
        grew = bool(children)
        found.update(children)
    return found


def marked_processes(
    key: str, wanted: Callable[[str], bool], table: dict[int, _Process] | None = None
) -> dict[int, tuple[str, str]]:
    """The live processes (of ``table``, default: a fresh reading) whose environment
    holds ``key`` with a value ``wanted`` says yes to, and all their descendants (a
    browser's helpers do not inherit its environment): pid -> (name, value)."""
    table = _processes() if table is None else table
    roots = {
        pid: proc.environ[key]
        for pid, proc in table.items()
        if key in proc.environ and wanted(proc.environ[key])
    }
    return _with_descendants(table, roots)


def owned_processes(wanted: Callable[[str], bool]) -> dict[int, tuple[str, str]]:
    """The live processes marked with an owner ``wanted`` says yes to, and all their
    descendants: pid -> (name, owner)."""
    return marked_processes(OWNER, wanted)


def end_marked(key: str, value: str) -> list[int]:
    """Kill every process whose environment holds ``key=value``, and its descendants;
    looks again until none is left (one being killed may still start another). The
    pids it killed."""

    def find() -> tuple[dict[int, _Process], dict[int, tuple[str, str]]]:
        table = _processes()
        return table, marked_processes(key, lambda v: v == value, table)

    return _end_until_none(find)


def end_profile_processes(profile: str) -> list[int]:
    """Kill every process started with ``--user-data-dir=profile`` and its descendants
    (zygotes and renderers do not repeat the flag): a Chromium whose ChromeDriver died
    before it could stop it, or a start cut short; the pids it killed."""
    flag = f"--user-data-dir={profile}"

    def find() -> tuple[dict[int, _Process], dict[int, tuple[str, str]]]:
        table = _processes()
        roots = {pid: "" for pid, proc in table.items() if flag in proc.args}
        return table, _with_descendants(table, roots)

    return _end_until_none(find)


Finder = Callable[[], tuple[dict[int, _Process], dict[int, tuple[str, str]]]]


def _end_until_none(find: Finder) -> list[int]:
    killed: list[int] = []
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        table, found = find()
        if not found:
            break
        _kill(table, found, deadline)
        killed += found
    return sorted(killed)


def _kill(table: dict[int, _Process], pids: Iterable[int], deadline: float = 0.0) -> None:
    """SIGKILL ``pids`` (found in ``table``) and wait (5 s, or until ``deadline``) until
    they have ended: a killed process may still be writing into its folder until then.
    A pid that names another process by now (reused since ``table`` was read) is not
    touched."""
    import psutil

    deadline = deadline or time.monotonic() + 5.0
    handles = [table[pid].handle for pid in pids if pid in table]
    for handle in handles:
        with contextlib.suppress(psutil.Error):
            handle.kill()
    pending = handles
    while pending:
        # reaps this process's own children; a zombie of another's has ended (its parent,
        # or a container's init that never reaps, keeps its entry), so it is not waited for
        _, pending = psutil.wait_procs(pending, timeout=0)
        pending = [handle for handle in pending if not _zombie(handle)]
        if not pending or time.monotonic() > deadline:
            return
        time.sleep(0.02)


def _zombie(handle: psutil.Process) -> bool:
    import psutil

    try:
        return handle.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def _folders(wanted: Callable[[str], bool]) -> list[Path]:
    bases = dict.fromkeys([tempfile.gettempdir(), "/tmp"])
    found = []
    for base in bases:
        with contextlib.suppress(OSError):
            for folder in Path(base).glob("netgent-*"):
                with contextlib.suppress(OSError):
                    if wanted((folder / OWNER_FILE).read_text(encoding="utf-8").strip()):
                        found.append(folder)
    return found


def _remove_folder(folder: Path) -> None:
    deadline = time.monotonic() + 3.0
    while True:  # a helper of a browser just killed may still be closing its files
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def sweep(owner: str = "") -> list[str]:
    """Remove what owners that no longer run left: ``owner``'s only, or else every
    ended owner's of this process's project. One line per owner says what was removed
    (none: nothing was left)."""
    project = _project_key()

    def wanted(mark: str) -> bool:
        if owner:
            return mark == owner
        parsed = _parse(mark)
        return parsed is not None and parsed[2] == project and owner_gone(mark)

    removed: dict[str, list[str]] = {}

    def note(mark: str, what: str) -> None:
        removed.setdefault(mark.split(".")[0], []).append(what)

    table = _processes()
    processes = marked_processes(OWNER, wanted, table)
    _kill(table, processes)
    for mark in sorted({mark for _, mark in processes.values()}):
        names = Counter(name for name, m in processes.values() if m == mark)
        listed = ", ".join(f"{n} {name}" for name, n in sorted(names.items()))
        note(mark, f"{sum(names.values())} processes ({listed})")
    with contextlib.suppress(OSError):
        for ledger in sorted(LEDGER.iterdir()) if LEDGER.is_dir() else ():
            if not wanted(ledger.name):
                continue
            for line in ledger.read_text(encoding="utf-8").splitlines():
                kind, _, name = line.partition(" ")
                if remove_host_object(kind, name):
                    note(ledger.name, f"{kind.replace('-', ' ')} {name}")
            ledger.unlink(missing_ok=True)
    for folder in _folders(wanted):
        mark = (folder / OWNER_FILE).read_text(encoding="utf-8").strip()
        _remove_folder(folder)
        note(mark, f"browser folder {folder}")
    return [f"pytest {pid}: {', '.join(what)}" for pid, what in removed.items()]


def watch() -> None:
    """Start this process's watcher, once: a small process that waits for this one to
    end, however it ends, then removes what it left. Started before this process moves
    to a network namespace of its own, so the watcher stays on the host's network."""
    global _watching
    if _watching == os.getpid() or not sys.platform.startswith("linux"):
        return
    _watching = os.getpid()
    here = str(Path(__file__).resolve().parent.parent)
    # this process's temporary folder is named on the command line, not inherited: the
    # watcher holds no file there, and nothing takes it for one of the browser's
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        os.posix_spawn(
            sys.executable,
            [
                sys.executable,
                "-m",
                "pytest_netgent.system.leftovers",
                owner_mark(),
                tempfile.gettempdir(),
            ],
            env,
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, fd) for fd in (0, 1, 2)],
            setsid=True,  # out of the terminal's reach: Ctrl-C ends pytest, not this
        )
    except OSError:
        _watching = None
    finally:
        os.close(devnull)


def _wait_for(pid: int, start: str) -> None:
    """Return once process ``pid`` (started at ``start``) has ended."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:  # ended already, or a kernel without pidfds
        handle = -1
    if handle >= 0 and _start_time(pid) == start:  # the handle is on the owner itself
        select.select([handle], [], [])
        os.close(handle)
        return
    while _start_time(pid) == start:
        time.sleep(0.5)


def main(argv: list[str]) -> int:
    """The watcher: ``python -m pytest_netgent.system.leftovers OWNER TEMP`` (``TEMP``: the
    owner's temporary folder)."""
    os.chdir("/")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parsed = _parse(argv[1]) if len(argv) == 3 else None
    if parsed is None:
        print(
            "usage: python -m pytest_netgent.system.leftovers PID.START@PROJECT TEMP",
            file=sys.stderr,
        )
        return 2
    tempfile.tempdir = argv[2]
    _wait_for(parsed[0], parsed[1])
    global _project
    _project = parsed[2]
    sweep(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
