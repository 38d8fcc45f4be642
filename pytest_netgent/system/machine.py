"""The machine an item ran on: its CPUs, and how busy they were over the item's time
(the kernel's own count, ``/proc/stat``), with whatever else ran beside it: a shared CI
runner's other jobs slow a player as much as a slow network does."""

from __future__ import annotations

import os

FIELDS = ("cpus", "cpu_busy_pct")
"""The machine's columns of the manifest."""


def cpu_times() -> tuple[int, int] | None:
    """The machine's CPU time so far, ``(busy, total)`` in clock ticks (``/proc/stat``);
    ``None`` where the kernel does not tell."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields[:8]]
    if len(ticks) < 5:
        return None
    idle = ticks[3] + ticks[4]  # idle and iowait
    return sum(ticks) - idle, sum(ticks)


def cpu_facts(start: tuple[int, int] | None, end: tuple[int, int] | None) -> dict[str, str]:
    """The CPUs and the share of their time busy between ``start`` and ``end``
    (:func:`cpu_times`), with whatever else ran on the machine."""
    facts = {"cpus": str(os.cpu_count() or "")}
    if start is not None and end is not None and end[1] > start[1]:
        busy = (end[0] - start[0]) / (end[1] - start[1])
        facts["cpu_busy_pct"] = f"{100 * busy:.1f}"
    return facts
