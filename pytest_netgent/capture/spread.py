"""How the traffic of repeated runs spreads, and which runs lie outside it.

Runs of one workflow with the same parameters under the same network condition
(``--count``, shards, ``-n``, sessions merged) should move about as many bytes. For each
such group of passing items this gives the median and the interquartile range of their
bytes each way, and flags as suspect a run outside Tukey's fences (1.5 IQR beyond the
quartiles, and at least a tenth of the median; from four runs on): a player that
stalled, a page served from an error path.
A suspect run is kept, marked in the manifest's ``suspect`` column and listed on the
card, never silently mixed in.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field

from ..workflow.traffic import size_text

FIGURES = ("bytes_down", "bytes_up")
"""The manifest's figures whose spread is looked at."""
MIN_RUNS = 4
"""Fewer runs than this have no quartiles worth fencing with."""
FENCE = 1.5
"""Tukey's fences: this many IQRs beyond the quartiles."""
TOLERANCE = 0.1
"""The fences lie at least this share of the median beyond the quartiles: runs that all
moved the same bytes give no IQR, and a few hundred bytes more are no suspect."""


@dataclass
class Spread:
    """One group of runs: its key, its items, and each figure's median and quartiles."""

    workflow: str
    parameters: str
    network: str
    items: list[str] = field(default_factory=list)
    figures: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    """figure -> (first quartile, median, third quartile)."""
    suspect: dict[str, str] = field(default_factory=dict)
    """item -> why it lies outside."""

    def document(self) -> dict[str, object]:
        return {
            "workflow": self.workflow,
            "parameters": self.parameters,
            "network": self.network or "unshaped",
            "runs": len(self.items),
            **{
                name: {"q1": round(q1), "median": round(median), "q3": round(q3)}
                for name, (q1, median, q3) in self.figures.items()
            },
            "suspect": dict(self.suspect),
        }


def spreads(rows: Iterable[Mapping[str, str]]) -> list[Spread]:
    """The spread of each group of passing runs with traffic figures, in the rows' order."""
    groups: dict[tuple[str, str, str], list[Mapping[str, str]]] = {}
    for row in rows:
        if row.get("outcome") != "passed" or not row.get("bytes_down"):
            continue
        key = (row.get("workflow", ""), row.get("parameters", ""), row.get("network", ""))
        groups.setdefault(key, []).append(row)
    out = []
    for (workflow, parameters, network), members in groups.items():
        group = Spread(workflow, parameters, network, [r.get("item", "") for r in members])
        for name in FIGURES:
            values = [float(r[name]) for r in members if r.get(name)]
            if not values:
                continue
            group.figures[name] = _quartiles(values)
            if len(values) >= MIN_RUNS:
                _fence(group, name, members)
        out.append(group)
    return out


def mark_suspects(rows: Sequence[MutableMapping[str, str]]) -> None:
    """Write each row's ``suspect`` column: why its run lies outside its group's spread
    ("" when it does not, or its group is too small to tell)."""
    reasons: dict[str, str] = {}
    for group in spreads(rows):
        reasons.update(group.suspect)
    for row in rows:
        row["suspect"] = reasons.get(row.get("item", ""), "")


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def _fence(group: Spread, name: str, members: Sequence[Mapping[str, str]]) -> None:
    q1, median, q3 = group.figures[name]
    reach = max(FENCE * (q3 - q1), TOLERANCE * median)
    low, high = q1 - reach, q3 + reach
    for row in members:
        value = float(row.get(name) or 0)
        if low <= value <= high:
            continue
        item = row.get("item", "")
        why = (
            f"{name} {size_text(value)} outside {size_text(max(low, 0))} to {size_text(high)} "
            f"(median {size_text(median)} of {len(members)} runs)"
        )
        group.suspect[item] = "; ".join(filter(None, (group.suspect.get(item), why)))
