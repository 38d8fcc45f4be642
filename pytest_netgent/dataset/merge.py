"""``netgent merge DIR... -o OUT``: one dataset from the artifacts folders of a run's shards.

Each folder's ``dataset.json`` says which run and shard wrote it, every item the run
collected and a hash of every file. The merge takes folders of one run only (same run id,
same collection, same schema, each shard once), then checks every collected item: it has
exactly one row among the shards' manifests and every file it wrote is there, unchanged.
A missing, duplicated or damaged item is named and the merge writes nothing, or with
``--partial`` writes the whole items and lists the rest in its output and the card.

``OUT`` must be new (or an empty folder): a merge never overwrites. It gets every item's
folder, one ``manifest.csv`` and ``labels.csv`` (the same columns a single run writes),
``dataset.json`` (with the card's facts and every file's hash), ``DATASET.md`` and
``durations.json``: the items' measured durations in pytest-split's format, to balance
the next run's shards (copy it to ``.test_durations``).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.manifest import write_manifest
from ..system import atomic
from . import CARD, RECORD, DatasetError, card, record
from .shards import write_durations


class Incomplete(DatasetError):
    """Items of the run are missing, duplicated or damaged; nothing was written."""


@dataclass
class Part:
    """One shard's artifacts folder, its record and its manifest rows."""

    folder: Path
    record: dict[str, Any]
    rows: list[dict[str, str]]


@dataclass
class Merged:
    """What a merge wrote, and what it left out (with ``--partial``)."""

    out: Path
    items: int
    rows: int
    left_out: list[str] = field(default_factory=list)


def read_part(folder: Path) -> Part:
    data = record.read(folder)
    manifest = folder / "manifest.csv"
    try:
        with manifest.open(encoding="utf-8", newline="") as rows:
            return Part(folder, data, list(csv.DictReader(rows)))
    except OSError as exc:
        raise DatasetError(
            f"{manifest}: cannot be read ({exc.strerror}); run that shard again"
        ) from None


def check_parts(parts: Sequence[Part]) -> None:
    """Folders of one run, each shard once; :class:`DatasetError` names the odd one."""
    first = parts[0]
    for part in parts[1:]:
        for key, what in (("run", "run id"), ("collection", "collection")):
            if part.record[key] != first.record[key]:
                raise DatasetError(
                    f"{part.folder} is from another run than {first.folder} (its {what} "
                    f"{part.record[key]!r}, not {first.record[key]!r}): merge the shards of "
                    "one run only (each shard of a run gets the same NETGENT_RUN_ID)"
                )
    seen: dict[int, Path] = {}
    for part in parts:
        index = int(part.record["shard"]["index"])
        if index in seen:
            raise DatasetError(
                f"{seen[index]} and {part.folder} are both shard {index} of "
                f"{part.record['shard']['count']}: give each shard's folder once"
            )
        seen[index] = part.folder


def problems(
    parts: Sequence[Part],
) -> tuple[dict[str, tuple[Part, list[dict[str, str]]]], list[str]]:
    """The whole items (collected id: its part and rows) and what is wrong with the rest."""
    by_item: dict[str, list[tuple[Part, list[dict[str, str]]]]] = {}
    for part in parts:
        owned: dict[str, list[dict[str, str]]] = {}
        for row in part.rows:
            owned.setdefault(record.owner(row), []).append(row)
        for item, rows in owned.items():
            by_item.setdefault(item, []).append((part, rows))
    whole, wrong = {}, []
    count = parts[0].record["shard"]["count"]
    present = {int(p.record["shard"]["index"]) for p in parts}
    for index in sorted(set(range(1, count + 1)) - present):
        wrong.append(f"shard {index} of {count}: no folder given (did its job run?)")
    expected = set(parts[0].record["expected"])
    for item in parts[0].record["collected"]:
        found = by_item.get(item, [])
        if not found:
            if item in expected:
                wrong.append(f"{item}: missing (no shard has a row for it)")
        elif len(found) > 1:
            wrong.append(f"{item}: duplicated (in {', '.join(str(p.folder) for p, _ in found)})")
        else:
            part, rows = found[0]
            bad = [
                why
                for row in rows
                for why in record.damaged(
                    part.folder, part.record["items"].get(row["item"], {}).get("files", {})
                )
            ]
            if bad:
                wrong.append(f"{item}: in {part.folder}, {'; '.join(bad)}")
            else:
                whole[item] = found[0]
    for item in sorted(set(by_item) - set(parts[0].record["collected"])):
        wrong.append(f"{item}: not collected by this run (a row from another suite?)")
    return whole, wrong


def merge(folders: Sequence[Path], out: Path, *, partial: bool = False) -> Merged:
    """Merge the shards' artifacts ``folders`` into ``out`` (see the module's docstring)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DatasetError(
            f"-o {out}: already exists and is not an empty folder; a merge never "
            "overwrites, so give a new folder"
        )
    parts = [read_part(f) for f in folders]
    check_parts(parts)
    whole, wrong = problems(parts)
    if wrong and not partial:
        raise Incomplete(
            f"{len(wrong)} problem{'s' if len(wrong) != 1 else ''}, nothing written:\n  "
            + "\n  ".join(wrong)
            + "\n(run the shards named again, or add --partial to write the whole items)"
        )
    out.mkdir(parents=True, exist_ok=True)
    rows, hashes = _copy(whole, out)
    write_manifest(out, rows)
    _finish(parts, whole, rows, hashes, out, wrong)
    return Merged(out, len(whole), len(rows), wrong)


def _copy(
    whole: dict[str, tuple[Part, list[dict[str, str]]]], out: Path
) -> tuple[list[dict[str, str]], dict[str, dict[str, str]]]:
    """Bring each whole item's folder into ``out`` once (hard links where the file system
    allows, else copies); its rows, with their new folder (a name two shards both used
    gets a suffix) and the verified hashes of its files under it."""
    renamed: dict[tuple[Path, str], str] = {}
    used: set[str] = set()
    rows: list[dict[str, str]] = []
    hashes: dict[str, dict[str, str]] = {}
    for part, item_rows in whole.values():
        for row in sorted(item_rows, key=lambda r: len(r.get("folder", ""))):
            row = dict(row)
            old = row.get("folder", "")
            if old:
                new = _placed(part.folder, old, renamed)
                if new is None:  # not inside a folder already brought: a name of its own
                    new, n = old, 1
                    while new in used:
                        n += 1
                        new = f"{old}-{n}"
                    used.add(new)
                    renamed[(part.folder, old)] = new
                    if (part.folder / old).is_dir():
                        shutil.copytree(part.folder / old, out / new, copy_function=_link)
                row["folder"] = new
                files = part.record["items"].get(row["item"], {}).get("files", {})
                hashes[row["item"]] = {_moved(k, old, new): v for k, v in files.items()}
            rows.append(row)
    return rows, hashes


def _placed(part: Path, folder: str, renamed: dict[tuple[Path, str], str]) -> str | None:
    """Where ``folder`` of ``part`` is in the merge, when it or a folder above it is."""
    for (where, old), new in renamed.items():
        if where == part and (folder == old or folder.startswith(f"{old}/")):
            return new + folder[len(old) :]
    return None


def _moved(path: str, old: str, new: str) -> str:
    return new + path[len(old) :] if path.startswith(f"{old}/") else path


def _link(source: str, target: str) -> None:
    """A hard link to ``source`` (a dataset's files are never changed in place), or a copy
    where the file system cannot link."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _finish(
    parts: Sequence[Part],
    whole: dict[str, tuple[Part, list[dict[str, str]]]],
    rows: list[dict[str, str]],
    hashes: dict[str, dict[str, str]],
    out: Path,
    left_out: list[str],
) -> None:
    """The merged record, card and durations."""
    first = parts[0].record
    items: dict[str, Any] = {}
    durations: dict[str, float] = {}
    for row in rows:
        items[row["item"]] = {
            "owner": record.owner(row),
            "folder": row.get("folder", ""),
            "outcome": row.get("outcome", ""),
            "files": hashes.get(row["item"], {}),
        }
    for item, (part, _) in whole.items():
        seconds = part.record["items"].get(item, {}).get("duration")
        if isinstance(seconds, (int, float)) and seconds > 0:
            durations[item] = float(seconds)
    merged = {
        "schema": first["schema"],
        "run": first["run"],
        "collection": first["collection"],
        "shard": {"index": 0, "count": first["shard"]["count"]},
        "merged_from": [
            {"folder": str(p.folder), "shard": p.record["shard"]["index"]} for p in parts
        ],
        "collected": first["collected"],
        "assigned": [i for i in first["collected"] if i in whole],
        "items": items,
        "tools": first.get("tools", {}),
        "left_out": left_out,
    }
    facts = card.summary(rows, merged)
    merged["card"] = facts
    record.write(out, merged)
    atomic.write_text(out / CARD, card.markdown(facts, left_out))
    write_durations(out / "durations.json", durations)


def main(argv: Sequence[str]) -> int:
    """``netgent merge``: 0 merged (with ``--partial``: whatever was whole), 1 refused
    (an item missing, duplicated or damaged), 2 bad input."""
    parser = argparse.ArgumentParser(
        prog="netgent merge",
        description="Merge the artifacts folders of a run's shards into one dataset.",
    )
    parser.add_argument(
        "folders", nargs="+", type=Path, metavar="DIR", help="a shard's artifacts folder"
    )
    parser.add_argument(
        "-o", "--out", type=Path, required=True, help="a new folder for the dataset"
    )
    parser.add_argument(
        "--partial",
        action="store_true",
        help="write the whole items when some are missing or damaged, and list the rest",
    )
    args = parser.parse_args(list(argv))
    try:
        merged = merge(args.folders, args.out, partial=args.partial)
    except DatasetError as exc:
        print(f"netgent merge: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, Incomplete) else 2
    print(f"netgent merge: {merged.items} items ({merged.rows} rows) -> {merged.out}")
    for why in merged.left_out:
        print(f"  left out: {why}")
    print(f"  {merged.out / RECORD}, {merged.out / CARD}, manifest.csv, labels.csv")
    return 0
