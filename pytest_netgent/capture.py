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

import contextlib
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import NetgentError

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

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
)


class CaptureError(NetgentError):
    """A capture could not be started or finished; the message says why and what to do."""


def parse_modes(text: str) -> frozenset[str]:
    """``pcap,har,netlog`` (any subset, any order) as a set; ValueError names the culprit."""
    modes = [m.strip().lower() for m in text.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        what = f"unknown mode {unknown[0]!r}" if unknown else "no mode given"
        raise ValueError(
            f"--netgent-capture: {what}; give one or more of {', '.join(MODES)} separated "
            "by commas, e.g. --netgent-capture=pcap,har"
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

    @property
    def on(self) -> bool:
        """Whether any capture was asked for."""
        return bool(self.modes)

    @property
    def pcap(self) -> bool:
        """Whether packets are captured."""
        return "pcap" in self.modes and not self.pcap_off

    def summary(self) -> str:
        """One line for the session header."""
        kept = [m for m in MODES if m in self.modes and (m != "pcap" or self.pcap)]
        line = f"netgent capture: {', '.join(kept) or 'timeline only'} -> {self.root}"
        if "pcap" in self.modes and self.pcap_off:
            line += f" (pcap off: {self.pcap_off}; {', '.join(kept) or 'timelines'} still run)"
        return line


def folder_name(nodeid: str, secrets: Iterable[str] = ()) -> str:
    """A file-system-safe folder name for an item, with no secret value in it."""
    for value in secrets:
        if value:
            nodeid = nodeid.replace(value, "secret")
    safe = re.sub(r"[^A-Za-z0-9_.=\[\]-]+", "_", nodeid).strip("_.")
    return safe[:200] or "item"


class Tcpdump:
    """One tcpdump writing the packets of the loopback interface to a pcap file."""

    def __init__(self, path: Path, exclude_ports: Iterable[int] = (), interface: str = "lo"):
        self.path = path
        self.exclude_ports = sorted({p for p in exclude_ports if p})
        self.interface = interface
        self._proc: subprocess.Popen[bytes] | None = None
        self.summary = ""

    def start(self, timeout: float = 10.0) -> None:
        """Start capturing; returns once tcpdump listens."""
        tcpdump = shutil.which("tcpdump") or "tcpdump"
        command = [
            tcpdump,
            "-i",
            self.interface,
            "-w",
            str(self.path),
            "-U",  # each packet written as it comes: the file is whole when stopped
            "--immediate-mode",
            "-s",
            "0",
            "-n",
            "-Z",
            "root",  # keep writing as root: the artifacts folder is ours
        ]
        if self.exclude_ports:
            # WebDriver and DevTools commands between the test and its browser
            command += [
                "not",
                "(",
                *" or ".join(f"tcp port {p}" for p in self.exclude_ports).split(),
                ")",
            ]
        self._proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        assert self._proc.stderr is not None
        os.set_blocking(self._proc.stderr.fileno(), False)
        seen = b""
        deadline = time.monotonic() + timeout
        while b"listening on" not in seen:
            if self._proc.poll() is not None:
                rest = self._proc.stderr.read() or b""
                why = (seen + rest).decode(errors="replace").strip().splitlines()
                raise CaptureError(
                    f"tcpdump did not start on {self.interface}: "
                    f"{why[-1] if why else f'exit status {self._proc.returncode}'}"
                )
            if time.monotonic() > deadline:
                self.stop()
                raise CaptureError(f"tcpdump did not start listening within {timeout:g}s")
            chunk = self._proc.stderr.read(4096)
            if chunk:
                seen += chunk
            else:
                time.sleep(0.005)

    def stop(self) -> None:
        """Stop capturing; the pcap holds every packet seen up to now."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        time.sleep(0.05)  # packets still in the kernel's buffer reach the file
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            with contextlib.suppress(OSError, TypeError):
                text = (proc.stderr.read() or b"").decode(errors="replace")
                self.summary = " ".join(line for line in text.splitlines() if "packets" in line)
            proc.stderr.close()


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
    files: dict[str, Path] = field(default_factory=dict)
    _tcpdump: Tcpdump | None = None

    def prepare(self) -> list[str]:
        """Make the item's folder empty and return the browser flags of its captures."""
        if self.folder.exists():
            for old in FILES.values():
                with contextlib.suppress(FileNotFoundError):
                    (self.folder / old).unlink()
        self.folder.mkdir(parents=True, exist_ok=True)
        flags = []
        if "netlog" in self.settings.modes:
            flags.append(f"--log-net-log={self.folder / FILES['netlog']}")
        if self.settings.sslkeylog:
            flags.append(f"--ssl-key-log-file={self.folder / FILES['sslkeylog']}")
        return flags

    def start(self, driver: WebDriver) -> None:
        """Start the packet capture (the browser runs already)."""
        self.started = time.time()
        if self.settings.pcap:
            tcpdump = Tcpdump(self.folder / FILES["pcap"], browser_ports(driver))
            tcpdump.start()
            self._tcpdump = tcpdump

    def har_events(self, driver: WebDriver) -> list[dict[str, Any]]:
        """The network events the browser logged (read once, before it closes)."""
        if "har" not in self.settings.modes:
            return []
        from .har import network_events

        try:
            log = driver.get_log("performance")  # type: ignore[attr-defined]
            return network_events(log)
        except Exception as exc:  # the browser died with the item: no events to read
            raise CaptureError(
                f"{self.nodeid}: could not read the browser's network events for the HAR "
                f"({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r})"
            ) from None

    def stop(self) -> None:
        """Stop the packet capture (after the browser closed its connections)."""
        if self._tcpdump is not None:
            tcpdump, self._tcpdump = self._tcpdump, None
            tcpdump.stop()
        self.ended = time.time()

    def write(
        self,
        runs: list[RunResult],
        events: list[dict[str, Any]],
        secrets: Mapping[str, str],
    ) -> None:
        """Write the timeline, the HAR, the video samples and ``item.json``."""
        from .engine import Redactor
        from .har import build_har

        redact = Redactor(secrets)
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
        self.files = {
            kind: self.folder / name
            for kind, name in FILES.items()
            if (self.folder / name).is_file()
        }
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
        }
        for kind in FILES:
            path = self.files.get(kind)
            row[kind] = _relative(path, root) if path else ""
            row[f"{kind}_bytes"] = str(path.stat().st_size) if path and path.exists() else ""
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
                "error": str(run.error).splitlines()[0] if run.error is not None else "",
                "events": events,
            }
        )
    return {"item": nodeid, "runs": out}


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
