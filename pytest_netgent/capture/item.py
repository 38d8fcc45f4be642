"""One item's captures: its folder, the captures' lifecycle, its state timeline and
video quality samples, and ``item.json``."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..replay.run import RunResult
    from ..system.redaction import Secret
    from .traffic import Traffic

from ..browser.session import browser_ports
from ..measure import summaries
from ..system import progress
from . import FILES, CaptureError, CaptureSettings
from .files import Window, files_of, iso_time, relative_to, write_json
from .pcap import Tcpdump

TRAFFIC_FIELDS = ("bytes_down", "bytes_up", "flows", "rtp_streams")
"""The item's traffic in figures (from its pcap): bytes received and sent by the
browser's side, flows, RTP streams (see :mod:`.traffic`)."""

HAR_ANSWERS_S = 1.0
"""How long an item's end waits for the answers of requests it sent (as the pcap waits
for the item's connections to close)."""
RECENT_S = 2.0
"""Requests sent this long before the item's end are waited for; older ones are not."""
ANSWER_POLL_S = 0.05


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
    metadata: dict[str, Any] = field(default_factory=dict)
    """The workflow's ``metadata`` (where it came from: a NetGent registry's id, name,
    version)."""
    measured: str = ""
    """One line per measurement step the item ran (``ping 127.0.0.1: 3/3 replies...``)."""
    environment: dict[str, str] = field(default_factory=dict)
    """What shaped the traffic beside the network: the browser's facts
    (:mod:`..browser.environment`) and the machine's (:mod:`..system.machine`)."""
    started: float = 0.0
    ended: float = 0.0
    outcome: str = ""
    window: Window | None = None
    network: dict[str, Any] = field(default_factory=dict)
    """The item's network condition (:meth:`~pytest_netgent.network.Condition.record`)."""
    kind: str = ""
    """``scenario``, or a scenario member's ``browser`` or ``command`` ("" for an item)."""
    scenario: str = ""
    """The scenario item a member belongs to."""
    labelled: float | None = None
    """A scenario's share of pcap packets that lie in flows labelled by member."""
    pcap_dropped: int = 0
    """Packets the kernel dropped from the pcap (its traffic is incomplete when above 0)."""
    pcap_open_at_end: int = 0
    """TCP connections still open a second after the item ended, when its pcap stopped
    (their last packets are not in it; 0 when every flow closed inside the item)."""
    traffic: dict[str, str] = field(default_factory=dict)
    """The item's traffic in figures, for its manifest row (:data:`TRAFFIC_FIELDS`); the
    whole summary is its ``traffic.json``."""
    _tcpdump: Tcpdump | None = None
    _captured_packets: bool = False

    def prepare(self) -> None:
        """Make the item's folder, without the files of an earlier run of the item."""
        if self.folder.exists():
            for old in (*FILES.values(), "item.json"):
                with contextlib.suppress(FileNotFoundError):
                    (self.folder / old).unlink()
        self.folder.mkdir(parents=True, exist_ok=True)

    def start(
        self, driver: WebDriver | None, exclude_ports: Iterable[int] = (), buffer_kib: int = 8192
    ) -> None:
        """Start the packet capture (the browser runs already, its WebDriver and DevTools
        traffic left out, and ``exclude_ports``; ``buffer_kib`` of kernel buffer for
        bursts); network events logged before now are dropped."""
        self.started = time.time()
        if "har" in self.settings.modes and driver is not None:
            self.har_events(driver)
        if self.settings.pcap:
            from ..network.netns import interfaces

            self._captured_packets = True
            ports = [*exclude_ports, *(browser_ports(driver) if driver is not None else [])]
            tcpdump = Tcpdump(self.folder / FILES["pcap"], ports, interfaces(), buffer_kib)
            tcpdump.start()
            self._tcpdump = tcpdump
            progress.publish(pcap=str(tcpdump.path))

    def har_events(self, driver: WebDriver, answers_within: float = 0.0) -> list[dict[str, Any]]:
        """The network events the browser logged (read once, before it closes).

        With ``answers_within`` (the item's end), requests sent in the last
        :data:`RECENT_S` and still waiting for their response's headers get that many
        seconds more: their answers are read too (a page's last fetches, e.g. a web
        worker's script revalidated as the item ended). Older ones are not waited for (a
        long poll; a worker's cache hit, whose answer never reaches the page's log).
        Requests the page starts meanwhile are not the item's and are left out."""
        if "har" not in self.settings.modes:
            return []
        from ..browser.session import browser_log
        from .har import network_events, unanswered

        try:
            events = network_events(browser_log(driver, "performance"))
            ended = time.time()
            deadline = time.monotonic() + answers_within
            sent = {_request_id(e) for e in events}
            recent = {r for r, at in unanswered(events).items() if at > ended - RECENT_S}
            while recent and time.monotonic() < deadline:
                time.sleep(ANSWER_POLL_S)
                more = network_events(browser_log(driver, "performance"))
                events += [e for e in more if _request_id(e) in sent]
                recent &= set(unanswered(events))
            return events
        except Exception as exc:  # the browser died with the item: no events to read
            raise CaptureError(
                f"--netgent-capture=har: {self.nodeid}: could not read the browser's network "
                f"events ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}); "
                "leave har out of --netgent-capture for a browser that cannot log them"
            ) from None

    def traffic_now(self, states: Sequence[tuple[float, str]]) -> Traffic | None:
        """The figures of the packets captured so far (None without packet capture),
        each counted in its state (``(epoch, name)`` of each state's start)."""
        from .traffic import summarise

        if self._tcpdump is None:
            return None
        return summarise(self._tcpdump.so_far(), states)

    def follow_interfaces(self) -> None:
        """Capture on interfaces that came up since the start (the namespace's uplink)."""
        if self._tcpdump is not None:
            from ..network.netns import interfaces

            self._tcpdump.add(interfaces())

    def stop(self) -> None:
        """Stop the packet capture once the item's connections have closed (at most a
        second after the browser dropped them), so their last packets are the item's."""
        if self._tcpdump is not None:
            from ..network.netns import isolated, settle

            tcpdump, self._tcpdump = self._tcpdump, None
            if isolated():
                self.pcap_open_at_end = settle(tcpdump.exclude_ports)
            tcpdump.stop()
            self.pcap_dropped = tcpdump.dropped
        self.ended = time.time()

    def write(
        self,
        runs: list[RunResult],
        events: list[dict[str, Any]],
        secrets: Mapping[str, str | Secret],
    ) -> None:
        """Write the timeline, the HAR, the video samples and ``item.json``."""
        from ..system.redaction import Redactor
        from .har import build_har

        redact = Redactor(secrets)
        if self.window is not None:
            self.window.redact = redact  # the netlog is split when the browser closes
        if "har" in self.settings.modes:
            har = build_har(events, title=self.nodeid, redact=redact)
            write_json(self.folder / FILES["har"], har)
        write_json(self.folder / FILES["timeline"], timeline_document(self.nodeid, runs))
        for kind, samples in (
            ("qoe", [s for run in runs for s in run.qoe]),
            ("webrtc", [s for run in runs for s in run.webrtc]),
            ("measurements", [m for run in runs for m in run.measurements]),
        ):
            if samples:
                with (self.folder / FILES[kind]).open("w", encoding="utf-8") as out:
                    for sample in samples:
                        out.write(json.dumps(sample, separators=(",", ":")) + "\n")
        pcap = self.folder / FILES["pcap"]
        if self._captured_packets and pcap.is_file():
            from .traffic import summarise

            figures = summarise([pcap], state_starts(runs)).document()
            write_json(self.folder / FILES["traffic"], figures)
            self.traffic = {
                "bytes_down": str(figures["down"]),
                "bytes_up": str(figures["up"]),
                "flows": str(figures["flows"]),
                "rtp_streams": str(len(figures["rtp_streams"])),
            }
        self.parameters = {k: redact(str(v)) for k, v in self.parameters.items()}
        self.measured = summaries([m for run in runs for m in run.measurements])
        self.save()

    def row(self, root: Path) -> dict[str, str]:
        """This item's row of ``manifest.csv`` (paths relative to ``root``)."""
        row = {
            "item": self.nodeid,
            "workflow": self.workflow,
            "category": self.category,
            "parameters": json.dumps(self.parameters, sort_keys=True) if self.parameters else "",
            "metadata": json.dumps(self.metadata, sort_keys=True) if self.metadata else "",
            "measured": self.measured,
            "outcome": self.outcome,
            "start": iso_time(self.started) if self.started else "",
            "end": iso_time(self.ended) if self.ended else "",
            "worker": self.worker,
            "folder": relative_to(self.folder, root),
            "pcap_dropped": str(self.pcap_dropped) if self._captured_packets else "",
            "pcap_open_at_end": str(self.pcap_open_at_end) if self._captured_packets else "",
            "kind": self.kind,
            "scenario": self.scenario,
            "labelled_packets": "" if self.labelled is None else f"{self.labelled:.4f}",
            **{key: self.traffic.get(key, "") for key in TRAFFIC_FIELDS},
            **{key: str(value) for key, value in self.network.items()},
            **self.environment,
        }
        row.update(files_of(self.folder, root))
        return row

    def save(self) -> None:
        """Write ``item.json`` (again, once the outcome is known)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        document: dict[str, Any] = {**self.row(self.folder), "parameters": self.parameters}
        del document["folder"]
        write_json(self.folder / "item.json", document)


def state_starts(runs: Iterable[RunResult]) -> list[tuple[float, str]]:
    """``(epoch, state)`` of each state's start in ``runs``, in time order."""
    starts = [
        (datetime.fromisoformat(e.at).timestamp(), e.state)
        for run in runs
        for e in run.timeline
        if e.event == "state" and e.state
    ]
    return sorted(starts)


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


def _request_id(event: dict[str, Any]) -> str:
    return str((event.get("params") or {}).get("requestId", ""))
