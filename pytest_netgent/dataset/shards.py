"""Which of N shards each item lands in.

Every shard of a run collects the same items and computes the same split, so no shard
needs to hear from another: each item lands in exactly one. The split keeps together what
must not run apart (the items of one workflow ``group``) and balances the shards by the
durations earlier runs measured, read from pytest-split's ``.test_durations`` file
(``{"node id": seconds}``), so a project that already keeps one for pytest-split shares
it. Items no run has measured count as the mean of those measured; when none is known at
all, each item counts alike and the units are dealt in the order of a stable hash of their
names, so the split does not depend on the order files were collected in.

The balance is the classic greedy one (pytest-split's ``least_duration``): the longest
unit first, each to the shard with the least time so far.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..system import atomic

DURATIONS_FILE = ".test_durations"
"""pytest-split's file of measured durations, in the project's root folder."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` (from 1) of ``count``."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, option: str = "--netgent-shard") -> Shard:
    """``K/N`` as a :class:`Shard`; ValueError names ``option`` and what is wrong."""
    head, slash, tail = text.strip().partition("/")
    try:
        index, count = int(head), int(tail)
    except ValueError:
        index = count = 0
    if not slash or count < 1:
        raise ValueError(
            f"{option}={text!r}: give the shard as K/N, K from 1 to N, e.g. {option}=2/4 "
            "(in a Kubernetes Indexed Job: $((JOB_COMPLETION_INDEX + 1))/N)"
        )
    if not 1 <= index <= count:
        raise ValueError(
            f"{option}={text!r}: shard {index} is out of range; K runs from 1 to {count} "
            f"(in a Kubernetes Indexed Job: $((JOB_COMPLETION_INDEX + 1))/{count})"
        )
    return Shard(index, count)


def read_durations(path: Path) -> dict[str, float]:
    """The durations file at ``path`` (``{}`` when there is none); ValueError names the file
    and what is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the durations file ({exc.strerror})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(
            f"{path}: not JSON ({exc}); delete it, or write it again with --netgent-store-durations"
        ) from None
    if isinstance(data, list):  # pytest-split before 0.3 wrote [[node id, seconds], ...]
        data = dict(pair for pair in data if isinstance(pair, list) and len(pair) == 2)
    if not isinstance(data, dict):
        raise ValueError(
            f'{path}: expected {{"node id": seconds, ...}}, found JSON {type(data).__name__}'
        )
    out = {}
    for key, value in data.items():
        if isinstance(value, (int, float)) and math.isfinite(value) and value >= 0:
            out[str(key)] = float(value)
    return out


def write_durations(path: Path, durations: Mapping[str, float]) -> None:
    """Write ``durations`` to ``path`` as pytest-split does (sorted, indented)."""
    data = {key: round(value, 3) for key, value in sorted(durations.items())}
    atomic.write_text(path, json.dumps(data, indent=4) + "\n")


def split(
    units: Sequence[tuple[str, Sequence[str]]], durations: Mapping[str, float], count: int
) -> list[list[str]]:
    """The node ids of each of ``count`` shards. ``units`` are ``(name, node ids)``: the ids
    of a unit always land together, in their order."""
    known = [durations[i] for _, ids in units for i in ids if i in durations]
    mean = sum(known) / len(known) if known else 1.0
    weighed = [
        (sum(durations.get(i, mean) for i in ids) if known else len(ids), _stable(name), ids)
        for name, ids in units
    ]
    weighed.sort(key=lambda u: (-u[0], u[1]))  # the longest first; ties in hash order
    loads = [(0.0, shard) for shard in range(count)]
    chosen: list[list[str]] = [[] for _ in range(count)]
    for weight, _, ids in weighed:
        load, shard = heapq.heappop(loads)
        chosen[shard].extend(ids)
        heapq.heappush(loads, (load + weight, shard))
    return chosen


def longest_first(ids: Sequence[str], durations: Mapping[str, float]) -> list[str]:
    """``ids`` in the order that ends a run over several workers soonest: the longest
    first by earlier runs (those never measured as the mean of those that were), each
    worker taking the next as it frees (the greedy schedule), so the last to start are
    short. Ties keep their order; with no duration known, the order is unchanged."""
    known = [durations[i] for i in ids if i in durations]
    if not known:
        return list(ids)
    mean = sum(known) / len(known)
    return sorted(ids, key=lambda i: -durations.get(i, mean))  # (a stable sort)


def estimate(ids: Sequence[str], durations: Mapping[str, float]) -> float | None:
    """The seconds ``ids`` took in earlier runs (unknown ones as the mean); None when no
    duration is known."""
    known = [durations[i] for i in ids if i in durations]
    if not durations:
        return None
    mean = sum(durations.values()) / len(durations)
    return sum(known) + mean * (len(ids) - len(known))


def _stable(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()
