"""A live status line per running item at the bottom of the terminal: pytest runs in a
pseudo-terminal, and what it writes is played into a VT100 emulator (pyte), so the tests
see the screen a user sees, while the run goes and once it has ended."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyte
import pytest

from pytest_netgent.plugin.status import status_lines

from .helpers import QUIET, SEARCH_STATES, SEARCH_WORKFLOW, Project

ROWS, COLS = 30, 140
WAITING = {
    **SEARCH_STATES,
    "Home": (
        SEARCH_STATES["Home"][0],
        [{"type": "wait", "params": {"seconds": 2.0}}, *SEARCH_STATES["Home"][1]],
    ),
}


@dataclass
class Screen:
    """What a terminal showed: every line seen at its bottom rows while pytest ran, and
    its rows once pytest had ended."""

    seen: set[str] = field(default_factory=set)
    final: list[str] = field(default_factory=list)
    raw: bytes = b""
    status: int = 0


def run_in_terminal(project: Project, *args: str, bottom: int = 2) -> Screen:
    """pytest in ``project`` with a pseudo-terminal of ROWS x COLS as its output."""
    main, side = os.openpty()
    fcntl.ioctl(side, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    env = {**os.environ, "TERM": "xterm", "COLUMNS": str(COLS), "LINES": str(ROWS)}
    command = [sys.executable, "-m", "pytest", *QUIET, f"--netgent-base-url={project.base_url}"]
    proc = subprocess.Popen(
        [*command, "-p", "no:cacheprovider", *args],
        cwd=project.path,
        stdin=side,
        stdout=side,
        stderr=side,
        env=env,
        start_new_session=True,
    )
    os.close(side)
    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    result = Screen()
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other side closed: pytest has ended
                break
            if not chunk:
                break
            result.raw += chunk
            stream.feed(chunk)
            result.seen.update(line.rstrip() for line in screen.display[-bottom:])
    finally:
        os.close(main)
        result.status = proc.wait(timeout=30)
    result.final = [line.rstrip() for line in screen.display]
    return result


def _no_times(lines: list[str]) -> list[str]:
    return [re.sub(r"in [0-9.]+s( \([0-9:]+\))?", "in Ts", line) for line in lines]


def test_a_run_in_a_terminal_shows_its_item_live_and_leaves_pytests_output_as_it_was(
    project: Project,
) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", WAITING)
    live = run_in_terminal(project, "-v", bottom=1)
    assert live.status == 0, live.raw.decode(errors="replace")
    showing = [line for line in live.seen if "search.netgent.yaml::search" in line]
    assert any(re.search(r"^\s*\d+\.\d s\s+search.*'Home': wait", line) for line in showing), (
        sorted(live.seen)
    )
    assert b"\x1b[1;29r" in live.raw  # one row kept for the one running item
    assert b"\x1b[r" in live.raw  # and given back
    # once pytest has ended, the screen is pytest's alone: as without the line
    off = run_in_terminal(project, "-v", "--netgent-live=off")
    assert b"\x1b[1;" not in off.raw and b"\x1b7" not in off.raw
    assert _no_times(live.final) == _no_times(off.final)
    assert any("1 passed" in line for line in live.final)


def test_each_xdist_worker_has_its_line_with_the_bytes_its_item_captured(
    project: Project, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(short_tmp))  # its own: other tests' runs are not seen
    for name in ("one", "two"):
        file = project.workflow(name, SEARCH_WORKFLOW.replace("name: search", f"name: {name}"))
        project.states(file, name, WAITING)
    live = run_in_terminal(project, "-n", "2", "--netgent-capture=pcap", bottom=2)
    assert live.status == 0, live.raw.decode(errors="replace")
    for worker in ("gw0", "gw1"):
        lines = [line for line in live.seen if line.startswith(worker)]
        assert any(
            re.search(r"\d+\.\d s\s+\d+(\.\d)? (B|kB|MB)\s+(one|two)\.netgent", line)
            for line in lines
        ), sorted(live.seen)
    assert b"\x1b[1;28r" in live.raw  # two rows: one per worker
    assert not any(line.startswith(("gw0 ", "gw1 ")) for line in live.final)
    assert any("2 passed" in line for line in live.final)
    assert not list(short_tmp.glob("netgent-status-*"))


def test_output_that_is_not_a_terminal_is_left_as_pytest_writes_it(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    result = project.run_subprocess("-n", "2")
    result.assert_outcomes(passed=1)
    assert "\x1b" not in result.stdout.str()


def test_a_bad_ini_value_is_a_usage_error_naming_it(project: Project) -> None:
    project.pytester.makeini("[pytest]\nnetgent_live = sometimes\n")
    result = project.run()
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*ini netgent_live expects auto, off or a port*sometimes*"])


def test_more_workers_than_lines_shows_the_busy_ones_cut_to_the_width(tmp_path: Path) -> None:
    now = time.time()
    busy = {"item": "suite/a.netgent.yaml::" + "x" * 200, "started": now - 3.0, "doing": "wait"}
    for name, status in (("gw0", {}), ("gw1", busy), ("gw10", {}), ("gw2", busy)):
        (tmp_path / f"{name}.json").write_text(json.dumps(status), encoding="utf-8")
    lines = status_lines(tmp_path, 3, 60, now)
    assert [line.split()[0] for line in lines] == ["gw0", "gw1", "gw2"]
    assert lines[0] == "gw0   idle"
    assert lines[1].startswith("gw1      3.0 s            suite/a.netgent.yaml::xxx")
    assert all(len(line) == 59 for line in lines[1:])
    assert status_lines(tmp_path, 5, 60, now)[-1] == ""  # a row to spare stays blank
