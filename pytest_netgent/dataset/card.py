"""The dataset card: what a dataset holds, for the people who use it.

It says what CESNET DataZoo's metadata says of a dataset: the capture period, the
applications (workflows) and their categories, item counts and sizes, the network
conditions, and the tools and versions that made it; and for a merge, the shards and
anything left out. ``DATASET.md`` is for people; the same facts are under ``"card"`` in
``dataset.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..capture import FILES
from ..capture.spread import spreads
from ..workflow.traffic import size_text


def summary(rows: Sequence[Mapping[str, str]], record: Mapping[str, Any]) -> dict[str, Any]:
    """The card's facts, from the manifest ``rows`` and the ``record``."""
    starts = sorted(r["start"] for r in rows if r.get("start"))
    ends = sorted(r["end"] for r in rows if r.get("end"))
    sizes = {
        kind: sum(int(r.get(f"{kind}_bytes") or 0) for r in rows)
        for kind in FILES
        if any(r.get(kind) for r in rows)
    }
    apps: dict[str, dict[str, Any]] = {}
    for r in rows:
        app = apps.setdefault(
            r.get("workflow", ""),
            {"category": r.get("category", ""), "items": 0, "source": _source(r)},
        )
        app["items"] += 1
    return {
        "run": record.get("run", ""),
        "shards": record.get("shard", {}).get("count", 1),
        "period": {"start": starts[0] if starts else "", "end": ends[-1] if ends else ""},
        "items": len(rows),
        "outcomes": dict(Counter(r.get("outcome", "") for r in rows)),
        "kinds": dict(Counter(r.get("kind") or "item" for r in rows)),
        "applications": dict(sorted(apps.items())),
        "categories": dict(sorted(Counter(r.get("category") or "(none)" for r in rows).items())),
        "bytes": sizes,
        "total_bytes": sum(sizes.values()),
        "networks": dict(sorted(Counter(r.get("network") or "unshaped" for r in rows).items())),
        "environment": {
            name: dict(sorted(Counter(r[name] for r in rows if r.get(name)).items()))
            for name in ENVIRONMENT
        },
        "traffic": [group.document() for group in spreads(rows)],
        "tools": record.get("tools", {}),
    }


def markdown(facts: Mapping[str, Any], left_out: Sequence[str] = ()) -> str:
    """``DATASET.md`` for ``facts`` (from :func:`summary`)."""
    period = facts["period"]
    lines = [
        "# Dataset card",
        "",
        f"- **Run:** `{facts['run']}` ({facts['shards']} shard{_s(facts['shards'])})",
        f"- **Period:** {period['start'] or '?'} to {period['end'] or '?'} (UTC)",
        f"- **Items:** {facts['items']} ("
        + ", ".join(f"{n} {k}" for k, n in sorted(facts["outcomes"].items()))
        + "; "
        + ", ".join(f"{n} {k}" for k, n in sorted(facts["kinds"].items()))
        + ")",
        f"- **Size:** {_size(facts['total_bytes'])}",
        "",
        "## Applications",
        "",
        "| workflow | category | items | source |",
        "| --- | --- | --- | --- |",
        *(
            f"| {name or '(none)'} | {app['category'] or '(none)'} | {app['items']} "
            f"| {app.get('source') or ''} |"
            for name, app in facts["applications"].items()
        ),
        "",
        "## Categories",
        "",
        *(f"- {name}: {n} items" for name, n in facts["categories"].items()),
        "",
        "## Files",
        "",
        *(f"- {kind} ({FILES[kind]}): {_size(n)}" for kind, n in facts["bytes"].items()),
        "",
        "## Network conditions",
        "",
        *(f"- {name}: {n} items" for name, n in facts["networks"].items()),
        "",
        "## Environment",
        "",
        *_environment(facts.get("environment", {})),
        "",
        "## Traffic",
        "",
        *_traffic(facts.get("traffic", [])),
        "",
        "## Tools",
        "",
        *(f"- {name} {version}" for name, version in facts["tools"].items()),
        "",
        "`manifest.csv` lists every item; `labels.csv` maps each passing item's pcap to its",
        "category (nPrintML's `Item,Label`); `dataset.json` holds these facts and a SHA-256 of",
        "every file.",
    ]
    if left_out:
        lines += ["", "## Left out (not whole)", "", *(f"- {why}" for why in left_out)]
    return "\n".join(lines) + "\n"


ENVIRONMENT = ("browser", "driver", "headless", "rendering", "viewport", "codecs", "uc", "grid")
"""The environment's facts the card sums up (the CPUs' busy share is per item)."""


def _environment(facts: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The card's environment lines: each fact's values with their item counts, and a
    warning where players may have chosen a lower quality than on a desktop."""
    lines = [
        f"- {name}: " + ", ".join(f"{value} ({n} items)" for value, n in values.items())
        for name, values in facts.items()
        if values
    ]
    lowered = [
        what
        for what, name, word in (
            ("headless", "headless", "yes"),
            ("software-rendered", "rendering", "software"),
        )
        if any(v.startswith(word) for v in facts.get(name, {}))
    ]
    if lowered:
        lines.append(
            f"- Note: {' and '.join(lowered)} runs: a player may choose a lower bitrate than "
            "on a desktop with a GPU; compare such items only with each other"
        )
    return lines or ["- not recorded"]


def _traffic(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """The card's traffic lines: each workflow's runs (per parameters and network), the
    median and interquartile range of their bytes each way, and the suspect runs."""
    if not groups:
        return ["- no packets captured"]

    def figure(group: Mapping[str, Any], name: str) -> str:
        if name not in group:
            return ""
        q, middle = group[name], size_text(group[name]["median"])
        if group["runs"] < 2:
            return middle
        return f"{middle} ({size_text(q['q1'])} to {size_text(q['q3'])})"

    lines = [
        "| workflow | parameters | network | runs | down: median (IQR) | up: median (IQR) "
        "| suspect |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        *(
            f"| {g['workflow'] or '(none)'} | {g['parameters']} | {g['network']} | {g['runs']} "
            f"| {figure(g, 'bytes_down')} | {figure(g, 'bytes_up')} | {len(g['suspect'])} |"
            for g in groups
        ),
    ]
    suspects = [(item, why) for g in groups for item, why in g["suspect"].items()]
    if suspects:
        lines += ["", "Suspect runs (outside their spread; kept, not mixed in silently):", ""]
        lines += [f"- `{item}`: {why}" for item, why in suspects]
    return lines


def _source(row: Mapping[str, str]) -> str:
    """Where a row's workflow came from, by its metadata: a NetGent registry's workflow
    and version ("" when the workflow says nothing of it)."""
    try:
        facts = json.loads(row.get("metadata") or "{}")
    except ValueError:
        return ""
    if not isinstance(facts, dict) or "netgent_id" not in facts:
        return ""
    name = facts.get("netgent_name") or facts["netgent_id"]
    version = f" {facts['netgent_version']}" if facts.get("netgent_version") else ""
    return f"NetGent registry: {name}{version}"


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _size(n: int) -> str:
    for unit in ("bytes", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} bytes"
