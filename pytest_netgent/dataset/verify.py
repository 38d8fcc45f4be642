"""A shard's folder checked against its record before a merge takes anything from it.

A merge reads folders it did not write, so it trusts neither ``manifest.csv`` nor
``dataset.json`` with a path: every path a row or the record names (the item's folder,
its files) must be relative, without ``..``, and stay inside the shard once links are
followed. Then each row must be the one the run wrote: its item recorded, its folder and
outcome those the record keeps, and, in a record that hashes rows (``row``), its digest
the same; the files under its folder exactly those the record hashed, each unchanged.
A record written before rows were hashed has its rows checked on folder and outcome only
(:func:`hashes_rows` tells which).

The checks stop a shard's manifest from reading or writing anything outside the shard and
``-o``, and catch a shard changed by accident or by hand after its run; they are no
signature: someone who rewrites ``dataset.json`` to match can change what it vouches for.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..capture import FILES
from . import MANIFEST, RECORD
from .record import damaged, owner, row_digest

PATH_COLUMNS = ("folder", *FILES)
"""The manifest's columns that name a path in the shard: the item's folder, its files."""


def relative(name: str) -> bool:
    """Whether ``name`` is a relative path without ``..`` or ``.`` (nor an empty, a
    backslash or a NUL in it): one that cannot leave the folder it is read in."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name:
        return False
    return all(part not in ("", ".", "..") for part in name.split("/"))


def inside(root: Path, name: str) -> Path | None:
    """``root / name`` with its links followed, when ``name`` is :func:`relative` and that
    stays inside ``root`` (already resolved); else None."""
    if not relative(name):
        return None
    path = (root / name).resolve()
    return path if path.is_relative_to(root) else None


def files_under(root: Path, folder: str) -> set[str]:
    """The files under ``root / folder`` named as a record names them (relative to
    ``root``), found as :func:`.record.file_hashes` finds them."""
    return {p.relative_to(root).as_posix() for p in (root / folder).rglob("*") if p.is_file()}


def hashes_rows(record: Mapping[str, Any]) -> bool:
    """Whether ``record`` keeps a digest of each row (a record written before rows were
    hashed keeps none)."""
    return any("row" in entry for entry in record["items"].values())


def row_problems(
    root: Path, record: Mapping[str, Any], row: Mapping[str, str], *, hashed: bool
) -> Iterator[str]:
    """What is wrong with ``row`` of the manifest of the shard at ``root`` (resolved),
    whose record is ``record`` (``hashed``: it keeps row digests, see :func:`hashes_rows`),
    and with the files it names; nothing when it is whole."""
    item = row["item"]
    entry = record["items"].get(item)
    if entry is None:
        yield f"{MANIFEST} has a row for {item} that {RECORD} does not record (added after the run)"
        return
    outside = [c for c in PATH_COLUMNS if row.get(c) and inside(root, row[c]) is None]
    for column in outside:
        yield (
            f"the {column} {row[column]!r} of {item} in {MANIFEST} is not a path inside the "
            "shard (absolute, with '..', or a link out of it); restore the row"
        )
    if outside:
        return  # no path of a row that points out is followed
    yield from _edited(entry, row, hashed)
    yield from _files(root, entry, row)


def _edited(entry: Mapping[str, Any], row: Mapping[str, str], hashed: bool) -> Iterator[str]:
    """How ``row`` differs from what the record's ``entry`` kept of it."""
    mine = {"folder": row.get("folder", ""), "outcome": row.get("outcome", ""), "owner": owner(row)}
    for key, value in mine.items():
        if value != entry[key]:
            yield (
                f"the {key} of {row['item']} is {value!r} in {MANIFEST} but {entry[key]!r} in "
                f"{RECORD} (edited after the run)"
            )
    if hashed and row_digest(row) != entry.get("row"):
        yield (
            f"the row of {row['item']} in {MANIFEST} is not the one the run wrote "
            f"(edited after the run; {RECORD} keeps its SHA-256)"
        )


def _files(root: Path, entry: Mapping[str, Any], row: Mapping[str, str]) -> Iterator[str]:
    """The files the record hashed for the row's item: each inside its folder, none added
    or missing, each unchanged; each file column naming one of them."""
    folder, files = row.get("folder", ""), entry["files"]
    strays = [
        name
        for name in files
        if not (folder and name.startswith(f"{folder}/")) or inside(root, name) is None
    ]
    for name in strays:
        yield (
            f"{RECORD} lists {name!r}, which is not inside the folder {folder!r} of "
            f"{row['item']} (or is a link out of the shard)"
        )
    if strays:
        return
    for column in FILES:
        if row.get(column) and row[column] not in files:
            yield f"the {column} {row[column]!r} of {row['item']} is not one of its files"
    if folder and (root / folder).is_dir():
        for name in sorted(files_under(root, folder) - set(files)):
            where = inside(root, name)
            how = "added after the run" if where else "a link out of the shard"
            yield f"{name} is not in {RECORD} ({how}); remove it or run that shard again"
    yield from damaged(root, files)
