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
    <artifacts>/<item>/webrtc.jsonl    WebRTC samples per stream (start_webrtc_tracking)
    <artifacts>/<item>/measurements.jsonl  results of ping, iperf, ndt and wget steps
    <artifacts>/<item>/item.json       item id, workflow, category, parameters, outcome, files

At the end of the session (on the xdist controller) ``manifest.csv`` lists every item and
``labels.csv`` maps each passing item's pcap to its category, as nPrintML reads them."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import NetgentError

MODES = ("pcap", "har", "netlog")
"""What ``--netgent-capture`` can capture."""

FILES = {
    "pcap": "capture.pcap",
    "har": "capture.har",
    "netlog": "netlog.json",
    "sslkeylog": "sslkeys.log",
    "qoe": "qoe.jsonl",
    "timeline": "timeline.json",
    "webrtc": "webrtc.jsonl",
    "measurements": "measurements.jsonl",
    "traffic": "traffic.json",
}
"""The file of each kind of capture in an item's folder."""


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
    plots: tuple[str, ...] = ()
    """The formats each item's plots are drawn in (``--netgent-plots``; none: no plots)."""

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
