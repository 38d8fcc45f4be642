"""The session's ``manifest.csv`` (every item) and ``labels.csv`` (nPrintML's
``Item,Label``)."""

from __future__ import annotations

import csv
from pathlib import Path

from ..browser.environment import FIELDS as BROWSER_FIELDS
from ..system import atomic
from ..system.machine import FIELDS as MACHINE_FIELDS
from . import FILES
from .files import files_of
from .item import TRAFFIC_FIELDS
from .spread import mark_suspects

NETWORK_FIELDS = (
    "network",
    "network_rate_bps",
    "network_up_bps",
    "network_delay_ms",
    "network_jitter_ms",
    "network_loss_pct",
    "network_queue",
    "network_mechanism",
)
"""The item's network condition: its profile name and numbers (empty when unshaped)."""

MANIFEST_FIELDS = (
    "item",
    "workflow",
    "category",
    "parameters",
    "metadata",
    "measured",
    "outcome",
    "start",
    "end",
    "worker",
    "folder",
    *(f"{kind}{suffix}" for kind in FILES for suffix in ("", "_bytes")),
    "pcap_dropped",
    "pcap_open_at_end",
    "kind",
    "scenario",
    "labelled_packets",
    *TRAFFIC_FIELDS,
    "suspect",
    *NETWORK_FIELDS,
    *BROWSER_FIELDS,
    *MACHINE_FIELDS,
)


def write_manifest(root: Path, rows: list[dict[str, str]]) -> tuple[Path, Path]:
    """Write ``manifest.csv`` (every item) and ``labels.csv`` (``Item,Label``: each passing
    item's pcap, relative to ``root``, and its category) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: (r.get("start", ""), r.get("item", "")))
    mark_suspects(rows)
    for row in rows:  # files written after the row left its worker (the netlog)
        if row.get("folder"):
            row.update(files_of(root / row["folder"], root))
    manifest = root / "manifest.csv"
    with atomic.replacing(manifest, durable=True) as out:
        writer = csv.DictWriter(out, fieldnames=MANIFEST_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    labels = root / "labels.csv"
    # nPrintML reads Item,Label; a third column names the network condition, when any
    shaped = any(row.get("network") for row in rows)
    with atomic.replacing(labels, durable=True) as out:
        pairs = csv.writer(out)
        pairs.writerow(["Item", "Label", "Network"] if shaped else ["Item", "Label"])
        for row in rows:
            if row.get("outcome") == "passed" and row.get("pcap") and row.get("category"):
                extra = [row.get("network") or "none"] if shaped else []
                pairs.writerow([row["pcap"], row["category"], *extra])
    return manifest, labels
