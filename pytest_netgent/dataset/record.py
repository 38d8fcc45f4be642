"""``dataset.json``: what a run, or one shard of it, collected, ran and wrote.

Written at the end of every capturing session beside ``manifest.csv``. It names the run
(``--netgent-run-id``, else ``NETGENT_RUN_ID``, else a digest of what was collected, which
every shard of the run computes alike), the shard, every item the run collected (all
shards'), the items this shard ran, and for each item its folder, outcome, duration, a
SHA-256 of every file it wrote and one of its row of ``manifest.csv`` as written (``row``;
records written before it have none); then the versions of the tools. ``netgent merge``
reads the records of the shards to tell a missing, duplicated or damaged item, or a folder
from another run; :func:`read` checks every field it uses, so a damaged record is named
field by field rather than failing somewhere in the merge.
"""

from __future__ import annotations

import csv
import hashlib
import json
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..system import atomic
from . import MANIFEST, RECORD, SCHEMA, DatasetError
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


def row_digest(row: Mapping[str, str]) -> str:
    """A SHA-256 of a manifest row as :func:`read_rows` gives it: its columns and values,
    whatever their order in the file."""
    text = json.dumps(sorted(row.items()), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the manifest at ``path``; :class:`DatasetError` names the file, and the
    line, when it cannot be read, has no ``item`` column, or a row does not fit its header
    (more or fewer values, no item)."""
    redo = "restore it or run that shard again"
    rows = []
    try:
        with path.open(encoding="utf-8", newline="") as data:
            reader = csv.DictReader(data)
            if "item" not in (reader.fieldnames or []):
                raise DatasetError(f"{path}: no item column, it is no manifest; {redo}")
            for row in reader:
                if None in row or None in row.values() or not row["item"]:
                    raise DatasetError(
                        f"{path}, line {reader.line_num}: a row that does not fit the header "
                        f"({len(reader.fieldnames or [])} columns, the first the item); {redo}"
                    )
                rows.append(row)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror or exc}); {redo}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(f"{path}: not a CSV file ({exc}); {redo}") from None
    return rows


def row_digests(root: Path) -> dict[str, str]:
    """``{item: row_digest}`` of the rows of ``root``'s manifest (none when it has none)."""
    path = root / MANIFEST
    return {r["item"]: row_digest(r) for r in read_rows(path)} if path.is_file() else {}


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
    """The record of a session whose manifest rows are ``rows``, under ``root`` (where
    ``manifest.csv`` is already written: each item's ``row`` is the digest of its row
    there, as a merge reads it)."""
    durations = durations or {}
    written = row_digests(root)
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
        if row["item"] in written:
            items[row["item"]]["row"] = written[row["item"]]
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
    what is wrong (no record, not JSON, another schema, a merged dataset's, missing keys,
    a field of the wrong kind)."""
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
    if "merged_from" in data:
        raise DatasetError(
            f"{folder}: a merged dataset (netgent merge wrote it), not a shard's folder; "
            "give the folders of the shards themselves"
        )
    keys = ("run", "collection", "shard", "collected", "expected", "items")
    missing = [k for k in keys if k not in data]
    if missing:
        raise DatasetError(
            f"{path}: incomplete record (no {', '.join(missing)}); run that shard again"
        )
    fault = _fault(data)
    if fault:
        raise DatasetError(f"{path}: {fault}; restore the shard's {RECORD} or run that shard again")
    return data


def _fault(data: Mapping[str, Any]) -> str:
    """What is wrong with a field of the record ``data`` that a merge uses ("" when
    nothing): the field, its value and what it should be."""
    shard = data["shard"]
    if not isinstance(shard, dict):
        return _wrong("shard", shard, 'an object {"index": K, "count": N}')
    count: Any = shard.get("count")
    index: Any = shard.get("index")
    if not _whole(count) or count < 1:
        return _wrong("shard.count", count, "a whole number from 1")
    if not _whole(index) or not 1 <= index <= count:
        return _wrong("shard.index", index, f"a whole number from 1 to shard.count ({count})")
    for key in ("run", "collection"):
        if not isinstance(data[key], str) or not data[key]:
            return _wrong(key, data[key], "a text")
    for key in ("collected", "expected", "assigned"):
        value = data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            return _wrong(key, value, "a list of node ids")
    if not isinstance(data.get("tools", {}), dict):
        return _wrong("tools", data["tools"], "an object")
    items = data["items"]
    if not isinstance(items, dict):
        return _wrong("items", items, "an object of items")
    return next(filter(None, (_item_fault(k, v) for k, v in items.items())), "")


def _item_fault(item: str, entry: Any) -> str:
    """What is wrong with the record's entry of ``item`` ("" when nothing)."""
    where = f"items[{item!r}]"
    if not isinstance(entry, dict):
        return _wrong(where, entry, "an object")
    for key in ("owner", "folder", "outcome", *(("row",) if "row" in entry else ())):
        if not isinstance(entry.get(key), str):
            return _wrong(f"{where}.{key}", entry.get(key), "a text")
    duration = entry.get("duration", 0)
    if not isinstance(duration, (int, float)) or isinstance(duration, bool):
        return _wrong(f"{where}.duration", duration, "a number of seconds")
    files = entry.get("files")
    if not isinstance(files, dict):
        return _wrong(f"{where}.files", files, "an object of {path: sha256}")
    for name, digest in files.items():
        if not isinstance(digest, str) or len(digest) != 64:
            return _wrong(f"{where}.files[{name!r}]", digest, "a SHA-256 (64 hex digits)")
    return ""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _wrong(field: str, value: Any, want: str) -> str:
    shown = repr(value)
    return f"{field} is {shown if len(shown) <= 60 else shown[:57] + '...'}, not {want}"


def damaged(root: Path, files: Mapping[str, str]) -> Iterable[str]:
    """The files of ``files`` (``{relative path: sha256}``) under ``root`` that are missing,
    unreadable or whose content changed, each with why."""
    for name, digest in files.items():
        path = root / name
        if not path.is_file():
            yield f"{name} is missing"
            continue
        try:
            changed = sha256(path) != digest
        except OSError as exc:
            yield f"{name} cannot be read ({exc.strerror or exc})"
            continue
        if changed:
            yield f"{name} does not match its hash (damaged or changed after the run)"
