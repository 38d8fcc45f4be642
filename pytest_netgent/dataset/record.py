"""``dataset.json``: what a run, or one shard of it, collected, ran and wrote.

Written at the end of every capturing session beside ``manifest.csv``. It names the run
(``--netgent-run-id``, else ``NETGENT_RUN_ID``, else a digest of what was collected, which
every shard of the run computes alike), the shard, every item the run collected (all
shards'), the items this shard ran, and for each item its folder, outcome, duration and a
SHA-256 of every file it wrote; then the versions of the tools. ``netgent merge`` reads
the records of the shards to tell a missing, duplicated or damaged item, or a folder from
another run.
"""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..system import atomic
from . import RECORD, SCHEMA, DatasetError
from .shards import Shard

TOOLS = ("pytest-netgent", "pytest", "pytest-xdist", "selenium", "seleniumbase", "langchain-core")
"""The packages whose versions a record keeps (those installed)."""


@dataclass
class Collection:
    """What the run collected, and what this shard of it ran (node ids, in order)."""

    collected: list[str]
    assigned: list[str]
    shard: Shard
    expected: list[str] | None = None
    """The collected items that always write a manifest row (workflow and scenario items;
    a Python test writes one only when its browser started). None: all of them."""

    def digest(self) -> str:
        """The same in every shard of one run: the items collected and the shard count."""
        text = "\n".join([str(self.shard.count), *sorted(self.collected)])
        return hashlib.sha256(text.encode()).hexdigest()


def owner(row: Mapping[str, str]) -> str:
    """The collected item a manifest row belongs to (a scenario member's: its scenario)."""
    return row.get("scenario") or row.get("item", "")


def file_hashes(folder: Path, root: Path) -> dict[str, str]:
    """``{path relative to root: sha256}`` of every file under ``folder``."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        out[path.relative_to(root).as_posix()] = sha256(path)
    return out


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tool_versions(browser: str = "") -> dict[str, str]:
    """The versions of Python, the packages of :data:`TOOLS` installed, and the browser."""
    out = {"python": platform.python_version(), "platform": platform.platform(terse=True)}
    for name in TOOLS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    if browser:
        out["browser"] = browser
    return out


def build(
    root: Path,
    rows: Sequence[Mapping[str, str]],
    collection: Collection,
    *,
    run_id: str = "",
    durations: Mapping[str, float] | None = None,
    browser: str = "",
) -> dict[str, Any]:
    """The record of a session whose manifest rows are ``rows``, under ``root``."""
    durations = durations or {}
    items: dict[str, Any] = {}
    for row in rows:
        folder = root / row.get("folder", "") if row.get("folder") else None
        items[row["item"]] = {
            "owner": owner(row),
            "folder": row.get("folder", ""),
            "outcome": row.get("outcome", ""),
            "duration": round(durations.get(row["item"], 0.0), 3),
            "files": file_hashes(folder, root) if folder and folder.is_dir() else {},
        }
    return {
        "schema": SCHEMA,
        "run": run_id or f"collection-{collection.digest()[:16]}",
        "collection": collection.digest(),
        "shard": {"index": collection.shard.index, "count": collection.shard.count},
        "collected": collection.collected,
        "expected": collection.collected if collection.expected is None else collection.expected,
        "assigned": collection.assigned,
        "items": items,
        "tools": tool_versions(browser),
    }


def write(root: Path, record: Mapping[str, Any]) -> Path:
    path = root / RECORD
    atomic.write_text(path, json.dumps(record, indent=1, ensure_ascii=False) + "\n", durable=True)
    return path


def read(folder: Path) -> dict[str, Any]:
    """The record of the artifacts ``folder``; :class:`DatasetError` names the folder and
    what is wrong (no record, not JSON, another schema, missing keys)."""
    path = folder / RECORD
    if not folder.is_dir():
        raise DatasetError(f"{folder}: no such folder; give the artifacts folder of each shard")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(
            f"{folder}: no {RECORD}; it is not the artifacts folder of a capturing run "
            "(run the shard with --netgent-capture, and give its --netgent-artifacts folder)"
        ) from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: cannot be read ({exc}); run that shard again") from None
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: not a dataset record (a JSON object); run that shard again")
    if data.get("schema") != SCHEMA:
        raise DatasetError(
            f"{path}: written in dataset schema {data.get('schema')!r}, this pytest-netgent "
            f"reads schema {SCHEMA}; merge it with the pytest-netgent version that wrote it, "
            "or run that shard again with this one"
        )
    keys = ("run", "collection", "shard", "collected", "expected", "items")
    missing = [k for k in keys if k not in data]
    if missing:
        raise DatasetError(
            f"{path}: incomplete record (no {', '.join(missing)}); run that shard again"
        )
    return data


def damaged(root: Path, files: Mapping[str, str]) -> Iterable[str]:
    """The files of ``files`` (``{relative path: sha256}``) under ``root`` that are missing
    or whose content changed, each with why."""
    for name, digest in files.items():
        path = root / name
        if not path.is_file():
            yield f"{name} is missing"
        elif sha256(path) != digest:
            yield f"{name} does not match its hash (damaged or changed after the run)"
