"""A live status line per running item, at the bottom of the terminal.

Each process that runs items (pytest without ``-n``, or each xdist worker) keeps what its
running item is doing in a small file of a session folder: the item, when it started, the
last event of its timeline and its pcap. The terminal's process reads those files a few
times a second and draws one line per worker below pytest's own output, which scrolls
above them in a scroll region (DECSTBM, as apt draws its progress bar)::

    gw0   12.4 s   1.3 MB  suites/search.netgent.yaml::search[QUIC]  state 'Results'
    gw1    3.0 s           suites/video.netgent.yaml::watch  'Player': click ...

The lines are drawn only when pytest writes to a terminal (and ``--netgent-live`` is not
``off``); otherwise nothing is written, so logs and CI output stay as pytest makes them.
The lines are written to the terminal itself (a copy of its descriptor taken before any
item runs), each frame in one ``write``, which a terminal never interleaves with
pytest's own writes; they are cleared, and the scroll region reset, before pytest's
summary. Values come from the timeline, already redacted: no secret is written.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..system import atomic, progress

if TYPE_CHECKING:
    from ..browser.screencast import LiveStream
    from ..studio.live import LiveServer

WORKER_KEY = "netgent_status"
"""The ``workerinput`` key naming the session's status folder for xdist workers."""
STREAM_KEY = "netgent_live_stream"
"""The ``workerinput`` key telling xdist workers to stream their browsers' frames."""
INTERVAL = 0.25
"""Seconds between two frames."""
MAX_LINES = 8
"""At most this many lines (more workers: the busiest are shown)."""


class Feed:
    """What the item running in this process is doing, in a file the board reads."""

    def __init__(self, folder: Path, worker: str) -> None:
        self.path = folder / f"{worker}.json"
        self._lock = threading.Lock()
        self._now: dict[str, Any] = {}

    def start(self, nodeid: str) -> None:
        with self._lock:
            self._now = {"item": nodeid, "started": time.time()}
            self._write()

    def item(self) -> str:
        """The node id of the item running in this process ("" between items)."""
        return str(self._now.get("item", ""))

    def update(self, fields: dict[str, str]) -> None:
        with self._lock:
            if self._now:  # events outside an item (a pool warming up) have no line
                self._now.update(fields)
                self._write()

    def finish(self) -> None:
        with self._lock:
            self._now = {}
            self._write()

    def _write(self) -> None:
        _replace_json(self.path, self._now)


def _replace_json(path: Path, value: dict[str, Any]) -> None:
    """Write ``value`` to ``path`` whole (a reader sees the old file or the new one)."""
    with contextlib.suppress(OSError):  # a status line is never worth an item
        atomic.write_text(path, json.dumps(value))


def _size(path: str) -> str:
    """The bytes captured so far into the pcap ``path``: its per-interface parts while
    tcpdump writes them, the merged file after."""
    pcap = Path(path)
    size = 0.0
    for part in (pcap, *pcap.parent.glob(f"{glob.escape(pcap.name)}.*.part")):
        with contextlib.suppress(OSError):
            size += part.stat().st_size
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""  # pragma: no cover


def _natural(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def status_lines(folder: Path, rows: int, cols: int, now: float) -> list[str]:
    """The ``rows`` lines of the workers' status files in ``folder``, each at most
    ``cols - 1`` characters (a full line would wrap on some terminals)."""
    statuses: dict[str, dict[str, Any]] = {}
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            statuses[path.stem] = json.loads(path.read_text(encoding="utf-8"))
    names = sorted(statuses, key=_natural)
    if len(names) > rows:  # the busiest first, idle workers last
        names = sorted(names, key=lambda n: (not statuses[n].get("item"), _natural(n)))[:rows]
        names.sort(key=_natural)
    label = any(name != "main" for name in names)
    lines = []
    for name in names:
        status = statuses[name]
        head = f"{name:<5} " if label else ""
        if not status.get("item"):
            lines.append(f"{head}idle"[: cols - 1])
            continue
        elapsed = max(0.0, now - float(status.get("started", now)))
        size = _size(status["pcap"]) if status.get("pcap") else ""
        text = f"{head}{elapsed:6.1f} s  {size:>8}  {status['item']}  {status.get('doing', '')}"
        lines.append(text.rstrip()[: cols - 1])
    return lines + [""] * (rows - len(lines))


class Board:
    """The status lines at the bottom of the terminal, redrawn by a thread of their own."""

    def __init__(self, folder: Path, fd: int, rows: int) -> None:
        self.folder = folder
        self.fd = fd
        self.rows = rows
        self._size = os.get_terminal_size(fd)
        self._stop = threading.Event()
        self._opened = False
        self._thread = threading.Thread(target=self._run, name="netgent-status", daemon=True)

    def open(self, column: int) -> None:
        """Make room below the cursor (at ``column`` of its line) and start drawing."""
        n, height = self.rows, self._size.lines
        self._write(
            "\n" * n + f"\x1b[{n}A\x1b[{column % self._size.columns + 1}G"  # room, back
            f"\x1b7\x1b[1;{height - n}r\x1b8"  # the scroll region keeps the cursor
        )
        self._opened = True
        self._thread.start()

    def close(self) -> None:
        """Stop drawing, clear the lines and give the terminal back its whole height."""
        self._stop.set()
        if not self._opened:
            return
        self._opened = False
        self._thread.join()
        height = self._size.lines
        clear = "".join(f"\x1b[{height - i};1H\x1b[2K" for i in range(self.rows))
        self._write(f"\x1b7{clear}\x1b[r\x1b8")

    def draw(self) -> None:
        size = os.get_terminal_size(self.fd)
        if size != self._size:  # resized: the region follows the new height
            self._size = size
            self._write(f"\x1b7\x1b[1;{max(1, size.lines - self.rows)}r\x1b8")
        lines = status_lines(self.folder, self.rows, size.columns, time.time())
        top = size.lines - self.rows + 1
        frame = "".join(f"\x1b[{top + i};1H\x1b[2K{line}" for i, line in enumerate(lines))
        self._write(f"\x1b7{frame}\x1b8")

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL):
            try:
                self.draw()
            except OSError:  # the terminal went away: nothing more to draw on
                return

    def _write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        while data:
            data = data[os.write(self.fd, data) :]


def live_stream(config: pytest.Config, member: str = "") -> LiveStream | None:
    """A live stream for a browser of this process (see :meth:`StatusPlugin.stream`)."""
    plugin = config.pluginmanager.get_plugin("netgent-status")
    return plugin.stream(member) if isinstance(plugin, StatusPlugin) else None


class StatusPlugin:
    """Decides whether the lines are drawn, hands the folder to xdist's workers, keeps
    this process's feed and draws the board (in the terminal's process)."""

    def __init__(self, config: pytest.Config, live: str) -> None:
        self.config = config
        self.live = live
        """``--netgent-live``: ``auto``, ``off`` or a port (the live page's)."""
        self.folder: Path | None = None
        self.board: Board | None = None
        self.feed: Feed | None = None
        self.server: LiveServer | None = None
        """The live page (``--netgent-live PORT``), in the reporting process."""
        self.streaming = False
        """Whether this process's browsers stream their frames to the live page."""
        self._terminal = -1
        self._reporter: Any = None
        self._name = "main"
        worker = getattr(config, "workerinput", None)
        if worker is not None and worker.get(WORKER_KEY):
            self._name = worker.get("workerid", "gw")
            self.streaming = bool(worker.get(STREAM_KEY))
            self._start_feed(Path(worker[WORKER_KEY]), self._name)
        elif worker is None and live.isdigit() and not config.option.collectonly:
            self._serve(int(live))

    def _serve(self, port: int) -> None:
        """Serve the live page on ``port``: a taken port is a usage error, now."""
        from ..studio.live import LiveError, LiveServer
        from ..system import leftovers

        self.folder = leftovers.own_folder(tempfile.gettempdir(), prefix="netgent-status-")
        try:
            self.server = LiveServer(self.folder, port)
        except LiveError as exc:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
            raise pytest.UsageError(str(exc)) from None

    def stream(self, member: str = "") -> LiveStream | None:
        """A new live stream for a browser of this process (``member``: a scenario
        member's), or ``None`` when no live page is served."""
        if not self.streaming or self.feed is None:
            return None
        from ..browser.screencast import LiveStream

        name = f"{self._name}.{member}" if member else self._name
        return LiveStream(self.feed.path.parent / "live", name, self.feed.item)

    def _start_feed(self, folder: Path, name: str) -> None:
        self.feed = Feed(folder, name)
        progress.connect(self.feed.update)

    def _wanted(self) -> int:
        """How many lines to draw (0: none), in the terminal's process."""
        config = self.config
        if getattr(config, "workerinput", None) is not None or config.option.collectonly:
            return 0
        if config.getoption("usepdb", False) or config.getoption("trace", False):
            return 0  # a debugger's prompt is the user's: nothing is drawn around it
        if self.live == "off":
            return 0
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or not reporter.isatty or os.environ.get("TERM") == "dumb":
            return 0
        try:
            height = os.get_terminal_size(reporter._tw._file.fileno()).lines
        except (AttributeError, OSError, ValueError):
            return 0
        from .settings import runs_items

        workers = 1 if runs_items(config) else len(getattr(config.option, "tx", None) or [1])
        lines = min(workers, MAX_LINES, height // 3)
        return lines if lines > 0 else 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        from .settings import runs_items

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if self.server is not None and reporter is not None:  # -q too: the page is wanted
            reporter.write_line(f"netgent live: {self.server.url}")
        lines = self._wanted()
        if lines:
            from ..system import leftovers

            if self.folder is None:
                self.folder = leftovers.own_folder(tempfile.gettempdir(), prefix="netgent-status-")
            self._reporter = self.config.pluginmanager.get_plugin("terminalreporter")
            self._terminal = os.dup(self._reporter._tw._file.fileno())  # the terminal's
            self.board = Board(self.folder, self._terminal, lines)
        if self.folder is not None and self.feed is None and runs_items(self.config):
            self.streaming = self.server is not None
            self._start_feed(self.folder, "main")

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.folder is not None:
            node.workerinput[WORKER_KEY] = str(self.folder)
            node.workerinput[STREAM_KEY] = self.server is not None

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """A worker that went down is shown so on the live page (its last frame stays)."""
        if self.server is not None and self.folder is not None and error:
            name = getattr(node, "gateway", None) and node.gateway.id
            why = str(error).strip().splitlines()[-1:] or ["it crashed"]
            if name:
                _replace_json(self.folder / f"{name}.json", {"down": why[0][:300]})

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        board = self.board
        if board is not None:  # (under xdist, what the workers collect is not known yet)
            self._reporter._tw.flush()
            board.open(self._reporter._tw.width_of_current_line)
        try:
            return (yield)
        finally:
            self._close()

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self.feed is not None:
            self.feed.start(nodeid)

    def pytest_runtest_logfinish(self) -> None:
        if self.feed is not None:
            self.feed.finish()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self._close()

    def pytest_unconfigure(self) -> None:
        self._close()
        if self.feed is not None:
            progress.connect(None)
            self.feed = None

    def _close(self) -> None:
        board, self.board = self.board, None
        if board is not None:
            with contextlib.suppress(OSError):
                board.close()
        if self._terminal >= 0:
            os.close(self._terminal)
            self._terminal = -1
        server, self.server = self.server, None
        if server is not None:
            server.close()
        if self.folder is not None and getattr(self.config, "workerinput", None) is None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
