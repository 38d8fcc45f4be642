"""The browser's own logs: Chromium started with its net log and TLS key log, each
item getting the part written during it."""

from __future__ import annotations

import bisect
import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..browser.session import BrowserOptions

from . import FILES, CaptureSettings
from .files import Window, file_size, update_item_file

if TYPE_CHECKING:
    from .item import ItemCapture


@dataclass
class _BrowserLog:
    netlog: Path
    keylog: Path
    items: list[Window] = field(default_factory=list)


class CapturedBrowser:
    """Starts the worker's browser for capture, and hands each item its share of what
    the browser logs for the whole of its life.

    The browser stays up between items, as without capture; between two items its HTTP
    cache, host cache and connections are dropped besides the usual reset, so no item
    reuses another's connection or cached response. Its netlog covers its whole life:
    when it closes, each item gets the events of its own time window.
    """

    def __init__(self, options: BrowserOptions, settings: CaptureSettings, scratch: Path):
        self.options = options
        self.settings = settings
        self.scratch = scratch
        self._count = 0
        self._log: _BrowserLog | None = None
        self._keylog_offset = 0

    def launch(self, options: BrowserOptions | None = None) -> WebDriver:
        """Start a browser as ``options`` say (default: this capture's), with the
        capture flags."""
        from ..browser.session import start_browser

        self._count += 1
        log = _BrowserLog(
            self.scratch / f"netlog-{self._count}.json", self.scratch / f"keys-{self._count}.log"
        )
        flags = ["--enable-net-benchmarking"]
        if self.settings.netlog:
            flags.append(f"--log-net-log={log.netlog}")
        if self.settings.sslkeylog:
            flags.append(f"--ssl-key-log-file={log.keylog}")
        base = options or self.options
        driver = start_browser(dataclasses.replace(base, args=[*base.args, *flags]))
        self._log = log
        self._keylog_offset = 0
        return driver

    def begin(self, capture: ItemCapture) -> None:
        """``capture``'s item starts on the running browser."""
        if self._log is not None:
            capture.window = Window(capture.folder, time.time())
            self._log.items.append(capture.window)
        self._keylog_offset = file_size(self._log.keylog) if self._log else 0

    def end(self, capture: ItemCapture) -> None:
        """``capture``'s item is over: its TLS keys are copied now."""
        if capture.window is not None and capture.window.end is None:
            capture.window.end = time.time()
        if self._log is None or not self.settings.sslkeylog:
            return
        size = file_size(self._log.keylog)
        target = capture.folder / FILES["sslkeylog"]
        with target.open("wb") as out:
            if size > self._keylog_offset:
                with self._log.keylog.open("rb") as keys:
                    keys.seek(self._keylog_offset)
                    out.write(keys.read(size - self._keylog_offset))
        self._keylog_offset = size

    def closed(self) -> None:
        """The browser has quit: give each of its items its part of the netlog."""
        log, self._log = self._log, None
        if log is None or not self.settings.netlog or not log.items:
            return
        now = time.time()
        for window in log.items:
            window.end = window.end or now
        split_netlog(log.netlog, log.items)
        for window in log.items:
            update_item_file(window.folder)


def split_netlog(path: Path, windows: list[Window], open_files: int = 32) -> None:
    """Write into each window's folder the events of the netlog ``path`` that happened
    in that window (the file of a browser that was killed may end early).

    Windows do not overlap; each event finds its window by bisection, and at most
    ``open_files`` item files are open at once, so a worker may run any number of items.
    """
    try:
        source = path.open("r", encoding="utf-8", errors="replace")
    except OSError:
        return
    with source:
        head = source.readline().rstrip().rstrip(",")
        try:
            offset = int(json.loads(head + "}")["constants"]["timeTickOffset"])
        except (ValueError, KeyError, TypeError):
            return  # not a netlog (the browser died before writing one)
        order = sorted(windows, key=lambda w: w.start)
        starts = [w.start for w in order]
        targets = [w.folder / FILES["netlog"] for w in order]
        for target in targets:
            target.write_text(head + ',\n"events": [\n', encoding="utf-8")
        empty = [True] * len(order)
        handles: dict[int, TextIO] = {}
        for line in source:
            text = line.strip().rstrip(",")
            if not text.startswith("{"):
                continue
            try:
                at = (offset + int(json.loads(text)["time"])) / 1000.0
            except (ValueError, KeyError, TypeError):
                continue
            i = bisect.bisect_right(starts, at) - 1
            if i < 0 or at > (order[i].end or at):
                continue  # between two items: nobody's
            if i not in handles:
                if len(handles) >= open_files:
                    handles.pop(next(iter(handles))).close()
                handles[i] = targets[i].open("a", encoding="utf-8")
            redact = order[i].redact
            handles[i].write(("" if empty[i] else ",\n") + (redact(text) if redact else text))
            empty[i] = False
        for out in handles.values():
            out.close()
        for target in targets:
            with target.open("a", encoding="utf-8") as out:
                out.write("\n]}\n")
