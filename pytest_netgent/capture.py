"""Traffic capture: per item a folder with its pcap, HAR, netlog, state timeline and video
quality samples, and per session a manifest and nPrintML labels.

``--netgent-capture=pcap,har,netlog`` (any subset) turns it on; ``--netgent-artifacts``
says where. Every item gets a fresh browser, so its traffic starts from a cold cache and
no connection outlives it into the next item's capture. Files per item::

    <artifacts>/<item>/capture.pcap    tcpdump on the worker's own loopback (pcap)
    <artifacts>/<item>/capture.har     HAR 1.2 from the DevTools network events (har)
    <artifacts>/<item>/netlog.json     Chromium's --log-net-log (netlog)
    <artifacts>/<item>/sslkeys.log     TLS keys for the pcap (--netgent-sslkeylog)
    <artifacts>/<item>/timeline.json   states, actions and URLs with wall and monotonic times
    <artifacts>/<item>/qoe.jsonl       video quality samples (start_video_sampling)
    <artifacts>/<item>/item.json       item id, workflow, category, parameters, outcome, files

At the end of the session (on the xdist controller) ``manifest.csv`` lists every item and
``labels.csv`` maps each passing item's pcap to its category, as nPrintML reads them.
"""

from __future__ import annotations

import bisect
import contextlib
import csv
import dataclasses
import heapq
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .errors import NetgentError

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from .browser.session import BrowserOptions
    from .engine import RunResult

MODES = ("pcap", "har", "netlog")
"""What ``--netgent-capture`` can capture."""

FILES = {
    "pcap": "capture.pcap",
    "har": "capture.har",
    "netlog": "netlog.json",
    "sslkeylog": "sslkeys.log",
    "qoe": "qoe.jsonl",
    "timeline": "timeline.json",
}
"""The file of each kind of capture in an item's folder."""

MANIFEST_FIELDS = (
    "item",
    "workflow",
    "category",
    "parameters",
    "outcome",
    "start",
    "end",
    "worker",
    "folder",
    *(f"{kind}{suffix}" for kind in FILES for suffix in ("", "_bytes")),
    "pcap_dropped",
)


class CaptureError(NetgentError):
    """A capture could not be started or finished; the message says why and what to do."""


def parse_modes(text: str, option: str = "--netgent-capture") -> frozenset[str]:
    """``pcap,har,netlog`` (any subset, any order) as a set; ValueError names the culprit
    and the ``option`` it came from."""
    modes = [m.strip().lower() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        what = f"unknown mode {unknown[0]!r}" if unknown else "no mode given"
        raise ValueError(
            f"{option}: {what}; give one or more of {', '.join(MODES)} separated by commas, "
            "e.g. --netgent-capture=pcap,har"
        )
    return frozenset(modes)


@dataclass
class CaptureSettings:
    """What to capture, and where."""

    modes: frozenset[str] = frozenset()
    root: Path = Path("netgent-artifacts")
    sslkeylog: bool = False
    pcap_off: str = ""
    """Why packet capture does not run here ("" when it does)."""
    netlog_off: str = ""
    """Why the netlog is not written here ("" when it is)."""
    uplink_off: str = ""
    """Why the workers' namespaces do not reach beyond this machine ("" when they do)."""

    @property
    def on(self) -> bool:
        """Whether any capture was asked for."""
        return bool(self.modes)

    @property
    def pcap(self) -> bool:
        """Whether packets are captured."""
        return "pcap" in self.modes and not self.pcap_off

    @property
    def netlog(self) -> bool:
        """Whether the browser's netlog is written."""
        return "netlog" in self.modes and not self.netlog_off

    def summary(self) -> str:
        """One line for the session header: what runs, and why anything asked for does not."""
        off = {"pcap": self.pcap_off, "netlog": self.netlog_off}
        kept = [m for m in MODES if m in self.modes and not off.get(m)]
        line = f"netgent capture: {', '.join(kept) or 'timelines only'} -> {self.root}"
        notes = [f"{m} off: {off[m]}" for m in MODES if m in self.modes and off.get(m)]
        if notes:
            line += f" ({'; '.join(notes)}; {', '.join(kept) or 'timelines'} still run)"
        elif self.pcap and self.uplink_off:
            line += f" (pcap: {self.uplink_off})"
        return line


def folder_name(nodeid: str, secrets: Iterable[str] = ()) -> str:
    """A file-system-safe folder name for an item, with no secret value in it."""
    for value in secrets:
        if value:
            nodeid = nodeid.replace(value, "secret")
    safe = re.sub(r"[^A-Za-z0-9_.=\[\]-]+", "_", nodeid).strip("_.")
    return safe[:200] or "item"


class Tcpdump:
    """tcpdump on each of ``interfaces`` (one process each), merged into one Ethernet
    pcap in time order when stopped."""

    def __init__(
        self, path: Path, exclude_ports: Iterable[int] = (), interfaces: Iterable[str] = ("lo",)
    ):
        self.path = path
        self.exclude_ports = sorted({p for p in exclude_ports if p})
        self.interfaces: list[str] = []
        self._pending = list(interfaces)
        self._procs: list[tuple[str, Path, subprocess.Popen[bytes]]] = []
        self.dropped = 0
        """Packets the kernel dropped before tcpdump could read them (known once stopped)."""

    def start(self, timeout: float = 10.0) -> None:
        """Start capturing; returns once every tcpdump listens."""
        self.add(self._pending, timeout)

    def add(self, interfaces: Iterable[str], timeout: float = 10.0) -> None:
        """Capture on ``interfaces`` too, from now on (e.g. an uplink that came up)."""
        tcpdump = shutil.which("tcpdump") or "tcpdump"
        filter_ = []
        if self.exclude_ports:
            # WebDriver and DevTools commands between the test and its browser
            ports = " or ".join(f"tcp port {p}" for p in self.exclude_ports)
            filter_ = ["not", "(", *ports.split(), ")"]
        started = []
        for interface in interfaces:
            if interface in self.interfaces:
                continue
            self.interfaces.append(interface)
            part = self.path.with_name(f"{self.path.name}.{interface}.part")
            command = [
                tcpdump,
                "-i",
                interface,
                "-w",
                str(part),
                "-U",  # each packet written as it comes: the file is whole when stopped
                "--immediate-mode",
                "-s",
                "0",
                "-B",
                "8192",  # KiB: room for bursts (video segments) on a busy machine
                "-n",
                "-Z",
                "root",  # keep writing as root: the artifacts folder is ours
                *filter_,
            ]
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            assert proc.stderr is not None
            os.set_blocking(proc.stderr.fileno(), False)
            self._procs.append((interface, part, proc))
            started.append((interface, proc))
        deadline = time.monotonic() + timeout
        for interface, proc in started:
            assert proc.stderr is not None
            seen = b""
            while b"listening on" not in seen:
                if proc.poll() is not None:
                    why = (seen + (proc.stderr.read() or b"")).decode(errors="replace")
                    lines = why.strip().splitlines()
                    self.stop()
                    raise CaptureError(
                        f"--netgent-capture=pcap: tcpdump did not start on {interface}: "
                        f"{lines[-1] if lines else f'exit status {proc.returncode}'}; run "
                        "as root (or with CAP_NET_RAW), or leave pcap out of --netgent-capture"
                    )
                if time.monotonic() > deadline:
                    self.stop()
                    raise CaptureError(
                        f"--netgent-capture=pcap: tcpdump did not start listening on "
                        f"{interface} within {timeout:g}s (is the machine overloaded?)"
                    )
                chunk = proc.stderr.read(4096)
                if chunk:
                    seen += chunk
                else:
                    time.sleep(0.005)

    def stop(self) -> None:
        """Stop capturing; the pcap holds every packet seen up to now."""
        procs, self._procs = self._procs, []
        if not procs:
            return
        time.sleep(0.02)  # packets still in the kernel's buffer reach the files
        for _, _, proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
        for _, _, proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stderr is not None:
                with contextlib.suppress(OSError, TypeError):
                    text = (proc.stderr.read() or b"").decode(errors="replace")
                    if m := re.search(r"(\d+) packets? dropped by kernel", text):
                        self.dropped += int(m[1])
                proc.stderr.close()
        parts = [part for _, part, _ in procs]
        if len(parts) == 1:
            with contextlib.suppress(FileNotFoundError):
                os.replace(parts[0], self.path)
            return
        merge_pcaps(parts, self.path)
        for part in parts:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()


def _pcap_records(path: Path) -> Iterator[tuple[float, bytes, bytes]]:
    """``(time, record header, packet)`` of each packet of a classic pcap file."""
    with path.open("rb") as f:
        header = f.read(24)
        if len(header) < 24:
            return
        magic = header[:4]
        order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        scale = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
        while len(record := f.read(16)) == 16:
            seconds, fraction, captured, _ = struct.unpack(order + "IIII", record)
            data = f.read(captured)
            if len(data) < captured:
                return  # cut short
            yield seconds + fraction * scale, record, data


def merge_pcaps(parts: list[Path], target: Path) -> None:
    """Merge pcap files of one link type (tcpdump's, same byte order) in time order."""
    existing = [p for p in parts if p.is_file() and p.stat().st_size >= 24]
    if not existing:
        target.write_bytes(b"")
        return
    with existing[0].open("rb") as first:
        header = first.read(24)
    streams = [_pcap_records(p) for p in existing]
    with target.open("wb") as out:
        out.write(header)
        for _, record, data in heapq.merge(*streams, key=lambda r: r[0]):
            out.write(record)
            out.write(data)


def browser_ports(driver: WebDriver) -> list[int]:
    """The WebDriver and DevTools ports between this test and its browser."""
    ports = []
    with contextlib.suppress(Exception):
        address = driver.capabilities.get("goog:chromeOptions", {}).get("debuggerAddress", "")
        ports.append(int(str(address).rsplit(":", 1)[1]))
    service = getattr(driver, "service", None)
    with contextlib.suppress(Exception):
        ports.append(int(service.port))  # type: ignore[union-attr]
    return ports


CLEAR_NETWORK_STATE = """
const b = window.chrome && window.chrome.benchmarking;
if (!b) return false;
b.clearCache(); b.clearHostResolverCache(); b.clearPredictorCache(); b.closeConnections();
return true;
"""
"""Empties the HTTP cache, host and predictor caches and closes every connection (Chromium
with ``--enable-net-benchmarking``), so that the next item starts cold."""


@dataclass
class _Window:
    folder: Path
    start: float
    end: float | None = None
    redact: Callable[[str], str] | None = None
    """Takes the item's secrets out of its share of the netlog (URLs, form bodies)."""


@dataclass
class _BrowserLog:
    netlog: Path
    keylog: Path
    items: list[_Window] = field(default_factory=list)


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
        from .browser.session import start_browser

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
            capture.window = _Window(capture.folder, time.time())
            self._log.items.append(capture.window)
        self._keylog_offset = _size(self._log.keylog) if self._log else 0

    def end(self, capture: ItemCapture) -> None:
        """``capture``'s item is over: its TLS keys are copied now."""
        if capture.window is not None and capture.window.end is None:
            capture.window.end = time.time()
        if self._log is None or not self.settings.sslkeylog:
            return
        size = _size(self._log.keylog)
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
            _update_item_file(window.folder)


def split_netlog(path: Path, windows: list[_Window], open_files: int = 32) -> None:
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


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _update_item_file(folder: Path) -> None:
    """Bring ``item.json``'s file list up to date with the folder."""
    path = folder / "item.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    document.update(_files_of(folder, folder))
    _write_json(path, document)


def _files_of(folder: Path, root: Path) -> dict[str, str]:
    out = {}
    for kind, name in FILES.items():
        path = folder / name
        exists = path.is_file()
        out[kind] = _relative(path, root) if exists else ""
        out[f"{kind}_bytes"] = str(path.stat().st_size) if exists else ""
    return out


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class ItemCapture:
    """The captures of one item: started before its browser runs, finished after."""

    settings: CaptureSettings
    nodeid: str
    folder: Path
    worker: str = "main"
    workflow: str = ""
    category: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    started: float = 0.0
    ended: float = 0.0
    outcome: str = ""
    window: _Window | None = None
    pcap_dropped: int = 0
    """Packets the kernel dropped from the pcap (its traffic is incomplete when above 0)."""
    _tcpdump: Tcpdump | None = None
    _captured_packets: bool = False

    def prepare(self) -> None:
        """Make the item's folder, without the files of an earlier run of the item."""
        if self.folder.exists():
            for old in (*FILES.values(), "item.json"):
                with contextlib.suppress(FileNotFoundError):
                    (self.folder / old).unlink()
        self.folder.mkdir(parents=True, exist_ok=True)

    def start(self, driver: WebDriver) -> None:
        """Start the packet capture (the browser runs already, its WebDriver and DevTools
        traffic left out); network events logged before now are dropped."""
        self.started = time.time()
        if "har" in self.settings.modes:
            self.har_events(driver)
        if self.settings.pcap:
            from .netns import interfaces

            self._captured_packets = True
            tcpdump = Tcpdump(self.folder / FILES["pcap"], browser_ports(driver), interfaces())
            tcpdump.start()
            self._tcpdump = tcpdump

    def har_events(self, driver: WebDriver) -> list[dict[str, Any]]:
        """The network events the browser logged (read once, before it closes)."""
        if "har" not in self.settings.modes:
            return []
        from .browser.session import browser_log
        from .har import network_events

        try:
            return network_events(browser_log(driver, "performance"))
        except Exception as exc:  # the browser died with the item: no events to read
            raise CaptureError(
                f"--netgent-capture=har: {self.nodeid}: could not read the browser's network "
                f"events ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}); "
                "leave har out of --netgent-capture for a browser that cannot log them"
            ) from None

    def follow_interfaces(self) -> None:
        """Capture on interfaces that came up since the start (the namespace's uplink)."""
        if self._tcpdump is not None:
            from .netns import interfaces

            self._tcpdump.add(interfaces())

    def stop(self) -> None:
        """Stop the packet capture once the item's connections have closed (at most a
        second after the browser dropped them), so their last packets are the item's."""
        if self._tcpdump is not None:
            from .netns import isolated, settle

            tcpdump, self._tcpdump = self._tcpdump, None
            if isolated():
                settle(tcpdump.exclude_ports)
            tcpdump.stop()
            self.pcap_dropped = tcpdump.dropped
        self.ended = time.time()

    def write(
        self,
        runs: list[RunResult],
        events: list[dict[str, Any]],
        secrets: Mapping[str, str],
    ) -> None:
        """Write the timeline, the HAR, the video samples and ``item.json``."""
        from .har import build_har
        from .secrets import Redactor

        redact = Redactor(secrets)
        if self.window is not None:
            self.window.redact = redact  # the netlog is split when the browser closes
        if "har" in self.settings.modes:
            har = build_har(events, title=self.nodeid, redact=redact)
            _write_json(self.folder / FILES["har"], har)
        _write_json(self.folder / FILES["timeline"], timeline_document(self.nodeid, runs))
        samples = [s for run in runs for s in run.qoe]
        if samples:
            path = self.folder / FILES["qoe"]
            with path.open("w", encoding="utf-8") as out:
                for sample in samples:
                    out.write(json.dumps(sample, separators=(",", ":")) + "\n")
        self.parameters = {k: redact(str(v)) for k, v in self.parameters.items()}
        self.save()

    def row(self, root: Path) -> dict[str, str]:
        """This item's row of ``manifest.csv`` (paths relative to ``root``)."""
        row = {
            "item": self.nodeid,
            "workflow": self.workflow,
            "category": self.category,
            "parameters": json.dumps(self.parameters, sort_keys=True) if self.parameters else "",
            "outcome": self.outcome,
            "start": _iso(self.started) if self.started else "",
            "end": _iso(self.ended) if self.ended else "",
            "worker": self.worker,
            "folder": _relative(self.folder, root),
            "pcap_dropped": str(self.pcap_dropped) if self._captured_packets else "",
        }
        row.update(_files_of(self.folder, root))
        return row

    def save(self) -> None:
        """Write ``item.json`` (again, once the outcome is known)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        document: dict[str, Any] = {**self.row(self.folder), "parameters": self.parameters}
        del document["folder"]
        _write_json(self.folder / "item.json", document)


def timeline_document(nodeid: str, runs: list[RunResult]) -> dict[str, Any]:
    """``timeline.json``: each run's events with wall-clock (ISO and epoch seconds) and
    monotonic (seconds since the run started) times."""
    out = []
    for run in runs:
        events = []
        for e in run.timeline:
            at = datetime.fromisoformat(e.at)
            event: dict[str, Any] = {
                "event": e.event,
                "time": e.at,
                "epoch": round(at.timestamp(), 3),
                "monotonic": e.elapsed,
            }
            for key in ("state", "action", "url", "detail"):
                if value := getattr(e, key):
                    event[key] = value
            events.append(event)
        out.append(
            {
                "workflow": run.workflow,
                "passed": run.passed,
                "end_state": run.end_state,
                "started": run.started_at,
                "duration": round(run.duration, 3),
                "error": _reason(run.error),
                "events": events,
            }
        )
    return {"item": nodeid, "runs": out}


def _reason(error: BaseException | None) -> str:
    if error is None:
        return ""
    reason = getattr(error, "reason", "") or str(error)
    return str(reason).strip().splitlines()[0] if str(reason).strip() else type(error).__name__


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _write_json(path: Path, data: Any) -> None:
    temporary = path.with_name(path.name + ".part")
    temporary.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def write_manifest(root: Path, rows: list[dict[str, str]]) -> tuple[Path, Path]:
    """Write ``manifest.csv`` (every item) and ``labels.csv`` (``Item,Label``: each passing
    item's pcap, relative to ``root``, and its category) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: (r.get("start", ""), r.get("item", "")))
    for row in rows:  # files written after the row left its worker (the netlog)
        if row.get("folder"):
            row.update(_files_of(root / row["folder"], root))
    manifest = root / "manifest.csv"
    with manifest.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=MANIFEST_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    labels = root / "labels.csv"
    with labels.open("w", newline="", encoding="utf-8") as out:
        pairs = csv.writer(out)
        pairs.writerow(["Item", "Label"])
        for row in rows:
            if row.get("outcome") == "passed" and row.get("pcap") and row.get("category"):
                pairs.writerow([row["pcap"], row["category"]])
    return manifest, labels
