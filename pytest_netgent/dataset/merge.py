"""``netgent merge DIR... -o OUT``: one dataset from the artifacts folders of a run's shards.

Each folder's ``dataset.json`` says which run and shard wrote it, every item the run
collected and a hash of every file and of every manifest row. The merge takes folders of
one run only (same run id, same collection, same schema, each shard once), then checks
every collected item (:mod:`.verify`): it has exactly one row among the shards' manifests,
the one the run wrote; no path it names leads out of its shard; and the files under its
folder are exactly those it wrote, unchanged. A missing, duplicated or damaged item is
named and the merge writes nothing, or with ``--partial`` writes the whole items and lists
the rest in its output and the card.

``OUT`` must be new (or an empty folder) and outside every shard: a merge never
overwrites. The dataset is written into a new folder beside ``OUT``, renamed to it once
whole, so a merge that fails half-way (a full disk) leaves nothing. It gets every item's
folder with the files its shard's record hashed (no other), one ``manifest.csv`` and
``labels.csv`` (the same columns a single run writes), ``dataset.json`` (with the card's
facts and every file's and row's hash), ``DATASET.md`` and ``durations.json``: the items'
measured durations in pytest-split's format, to balance the next run's shards (copy it
to ``.test_durations``).
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..capture.manifest import write_manifest
from ..system import atomic
from . import CARD, MANIFEST, RECORD, DatasetError, card, record, verify
from .shards import write_durations


class Incomplete(DatasetError):
    """Items of the run are missing, duplicated or damaged; nothing was written."""


@dataclass
class Part:
    """One shard's artifacts folder, its record and its manifest rows."""

    folder: Path
    """The folder as given (messages name it so)."""
    record: dict[str, Any]
    rows: list[dict[str, str]]
    root: Path
    """The folder with its links followed: every path the shard names stays inside it."""
    hashed: bool
    """Whether its record keeps a digest of each row (older records keep none)."""


@dataclass
class Merged:
    """What a merge wrote, and what it left out (with ``--partial``)."""

    out: Path
    items: int
    rows: int
    left_out: list[str] = field(default_factory=list)


def read_part(folder: Path) -> Part:
    """The shard at ``folder``: its record (every field checked) and manifest rows."""
    data = record.read(folder)
    rows = record.read_rows(folder / MANIFEST)
    return Part(folder, data, rows, folder.resolve(), verify.hashes_rows(data))


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


Found = dict[str, tuple[Part, list[dict[str, str]]]]
"""The whole items: each collected item's part and its rows there."""


def problems(parts: Sequence[Part]) -> tuple[Found, list[str]]:
    """The whole items (collected id: its part and rows) and what is wrong with the rest."""
    by_item: dict[str, list[tuple[Part, list[dict[str, str]]]]] = {}
    for part in parts:
        owned: dict[str, list[dict[str, str]]] = {}
        for row in part.rows:
            owned.setdefault(record.owner(row), []).append(row)
        for item, rows in owned.items():
            by_item.setdefault(item, []).append((part, rows))
    whole: Found = {}
    wrong = []
    count = parts[0].record["shard"]["count"]
    present = {int(p.record["shard"]["index"]) for p in parts}
    for index in sorted(set(range(1, count + 1)) - present):
        wrong.append(f"shard {index} of {count}: no folder given (did its job run?)")
    expected = set(parts[0].record["expected"])
    for item in parts[0].record["collected"]:
        found = by_item.get(item, [])
        if not found:
            wrong += _missing(parts, item, item in expected)
        elif len(found) > 1:
            wrong.append(f"{item}: duplicated (in {', '.join(str(p.folder) for p, _ in found)})")
        elif bad := _item_problems(*found[0], item):
            wrong.append(f"{item}: in {found[0][0].folder}, {'; '.join(bad)}")
        else:
            whole[item] = found[0]
    for item in sorted(set(by_item) - set(parts[0].record["collected"])):
        wrong.append(f"{item}: not collected by this run (a row from another suite?)")
    return whole, wrong


def _missing(parts: Sequence[Part], item: str, expected: bool) -> list[str]:
    """Why collected ``item`` with no row in any shard is a problem (none: a Python test
    that started no browser writes no row)."""
    for part in parts:
        if any(entry["owner"] == item for entry in part.record["items"].values()):
            return [
                f"{item}: missing (no shard has a row for it), though {part.folder / RECORD} "
                f"records it: its row was removed from {MANIFEST} after the run"
            ]
    return [f"{item}: missing (no shard has a row for it)"] if expected else []


def _item_problems(part: Part, rows: list[dict[str, str]], item: str) -> list[str]:
    """What is wrong with collected ``item``'s ``rows`` in ``part`` and the files they
    name (see :mod:`.verify`)."""
    bad = [
        why
        for row in rows
        for why in verify.row_problems(part.root, part.record, row, hashed=part.hashed)
    ]
    counts = Counter(row["item"] for row in rows)
    bad += [f"{MANIFEST} has {n} rows for {name}" for name, n in counts.items() if n > 1]
    recorded = {name for name, entry in part.record["items"].items() if entry["owner"] == item}
    for name in sorted(recorded - set(counts)):
        bad.append(f"the row of {name} is gone from {MANIFEST} (removed after the run)")
    return bad


def merge(
    folders: Sequence[Path],
    out: Path,
    *,
    partial: bool = False,
    warn: Callable[[str], object] | None = None,
) -> Merged:
    """Merge the shards' artifacts ``folders`` into ``out`` (see the module's docstring);
    ``warn`` hears of what the merge could not check (a shard whose record hashes no
    rows)."""
    _check_new(out)
    try:
        parts = [read_part(f) for f in folders]
        check_parts(parts)
        _check_place(out, parts)
        for part in parts:
            if part.record["items"] and not part.hashed and warn is not None:
                warn(
                    f"{part.folder / RECORD} keeps no hash of its {MANIFEST} rows (an older "
                    "pytest-netgent wrote it): its rows are checked on folder and outcome "
                    "only; run that shard again with this version to check every column"
                )
        whole, wrong = problems(parts)
    except OSError as exc:  # a shard's file unreadable on the way (permissions, a disk)
        raise DatasetError(
            f"{exc.filename or 'a shard file'}: cannot be read ({exc.strerror or exc}); check "
            "the shard's permissions, or run that shard again"
        ) from None
    if wrong and not partial:
        raise Incomplete(
            f"{len(wrong)} problem{'s' if len(wrong) != 1 else ''}, nothing written:\n  "
            + "\n  ".join(wrong)
            + "\n(run the shards named again, or add --partial to write the whole items)"
        )
    staged = _staged(out, lambda stage: _write(parts, whole, stage, wrong))
    return Merged(out, len(whole), staged, wrong)


def _check_new(out: Path) -> None:
    """``-o`` is new or an empty folder; :class:`DatasetError` says what to give instead."""
    try:
        taken = out.exists() and (not out.is_dir() or any(out.iterdir()))
    except OSError as exc:
        raise DatasetError(
            f"-o {out}: cannot be read ({exc.strerror or exc}); give a new folder"
        ) from None
    if taken:
        raise DatasetError(
            f"-o {out}: already exists and is not an empty folder; a merge never "
            "overwrites, so give a new folder"
        )


def _check_place(out: Path, parts: Sequence[Part]) -> None:
    """``-o`` is outside every shard, where this user can write; :class:`DatasetError`
    says which and what to give instead."""
    target = out.resolve()
    for part in parts:
        if target.is_relative_to(part.root):
            raise DatasetError(
                f"-o {out}: inside the shard folder {part.folder}, which the merge reads; give "
                f"a folder outside every shard, e.g. -o {part.root.parent / 'dataset'}"
            )
    above = next(p for p in target.parents if p.exists())
    if not above.is_dir() or not os.access(above, os.W_OK | os.X_OK):
        why = "not a folder" if not above.is_dir() else "permission denied"
        raise _unwritable(out, above, why)


def _unwritable(out: Path, where: Path, why: str) -> DatasetError:
    return DatasetError(
        f"-o {out}: cannot write the dataset in {where} ({why}); nothing was written; "
        "give a folder you can write, on a disk with room"
    )


def _staged(out: Path, write: Callable[[Path], int]) -> int:
    """``write`` the dataset into a new folder beside ``out``, then rename it to ``out``
    in one step: ``out`` gets a whole dataset or nothing (an error removes the folder).
    Returns what ``write`` returns."""
    target = out.resolve()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        stage = target.parent / f".{target.name}.merging-{os.getpid()}-{os.urandom(4).hex()}"
        stage.mkdir()
    except OSError as exc:
        raise _unwritable(out, target.parent, exc.strerror or str(exc)) from None
    try:
        result = write(stage)
    except OSError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise _unwritable(out, target.parent, exc.strerror or str(exc)) from None
    except BaseException:  # removed half-written, then raised as it came
        shutil.rmtree(stage, ignore_errors=True)
        raise
    try:
        os.rename(stage, target)  # replaces an empty folder; never a file or a full folder
    except OSError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
            raise DatasetError(
                f"-o {out}: something else was written there during the merge; nothing was "
                "written, give a new folder"
            ) from None
        raise _unwritable(out, target.parent, exc.strerror or str(exc)) from None
    return result


def _write(parts: Sequence[Part], whole: Found, stage: Path, left_out: list[str]) -> int:
    """The dataset of the ``whole`` items in ``stage``; the number of its rows."""
    rows, hashes = _copy(whole, stage)
    write_manifest(stage, rows)
    _finish(parts, whole, rows, hashes, stage, left_out)
    return len(rows)


def _copy(whole: Found, out: Path) -> tuple[list[dict[str, str]], dict[str, dict[str, str]]]:
    """Bring each whole item's files into ``out`` once (hard links where the file system
    allows, else copies): only the files its record hashed, all checked to be inside its
    shard. Its rows, with their new folder (a name two shards both used gets a suffix),
    and the hashes of its files under it."""
    renamed: dict[tuple[Path, str], str] = {}
    names = _Names()
    rows: list[dict[str, str]] = []
    hashes: dict[str, dict[str, str]] = {}
    for part, item_rows in whole.values():
        for row in sorted(item_rows, key=lambda r: len(r.get("folder", ""))):
            row = dict(row)
            old = row.get("folder", "")
            if old:
                new = _placed(part.folder, old, renamed)
                if new is None:  # not inside a folder already brought: a name of its own
                    new = names.take(old)
                    renamed[(part.folder, old)] = new
                (out / new).mkdir(parents=True, exist_ok=True)
                files = part.record["items"][row["item"]]["files"]
                hashes[row["item"]] = _bring(part.root, files, old, new, out)
                row["folder"] = new
            rows.append(row)
    return rows, hashes


class _Names:
    """The item folders a merge has placed: a new one neither is one of them nor lies
    above or inside one."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self.above: set[str] = set()

    def take(self, old: str) -> str:
        """``old``, else ``old-2``, ``old-3``...: the first free name, now taken."""
        new, n = old, 1
        while new in self.above or self.taken & set(_ancestry(new)):
            n += 1
            new = f"{old}-{n}"
        self.taken.add(new)
        self.above.update(_ancestry(new)[:-1])
        return new


def _ancestry(name: str) -> list[str]:
    """``a``, ``a/b``, ``a/b/c`` for ``a/b/c``."""
    parts = name.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _bring(root: Path, files: dict[str, str], old: str, new: str, out: Path) -> dict[str, str]:
    """Link or copy ``files`` (``{path in the shard at root: sha256}``, inside ``old``)
    under ``new`` in ``out``; their hashes by their paths there."""
    moved = {}
    for name, digest in files.items():
        target = _moved(name, old, new)
        if not (out / target).exists():  # a scenario member's, brought with its scenario
            (out / target).parent.mkdir(parents=True, exist_ok=True)
            _link(root / name, out / target)
        moved[target] = digest
    return moved


def _placed(part: Path, folder: str, renamed: dict[tuple[Path, str], str]) -> str | None:
    """Where ``folder`` of ``part`` is in the merge, when it or a folder above it is."""
    for (where, old), new in renamed.items():
        if where == part and (folder == old or folder.startswith(f"{old}/")):
            return new + folder[len(old) :]
    return None


def _moved(path: str, old: str, new: str) -> str:
    return new + path[len(old) :] if path.startswith(f"{old}/") else path


def _link(source: Path, target: Path) -> None:
    """A hard link to ``source`` (a dataset's files are never changed in place), or a copy
    where the file system cannot link."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _finish(
    parts: Sequence[Part],
    whole: Found,
    rows: list[dict[str, str]],
    hashes: dict[str, dict[str, str]],
    out: Path,
    left_out: list[str],
) -> None:
    """The merged record, card and durations."""
    first = parts[0].record
    items: dict[str, Any] = {}
    durations: dict[str, float] = {}
    written = record.row_digests(out)
    for row in rows:
        items[row["item"]] = {
            "owner": record.owner(row),
            "folder": row.get("folder", ""),
            "outcome": row.get("outcome", ""),
            "files": hashes.get(row["item"], {}),
            "row": written[row["item"]],
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

    def warn(text: str) -> None:
        """A warning on stderr: the merge goes on."""
        print(f"netgent merge: warning: {text}", file=sys.stderr)

    try:
        merged = merge(args.folders, args.out, partial=args.partial, warn=warn)
    except DatasetError as exc:
        print(f"netgent merge: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, Incomplete) else 2
    print(f"netgent merge: {merged.items} items ({merged.rows} rows) -> {merged.out}")
    for why in merged.left_out:
        print(f"  left out: {why}")
    print(f"  {merged.out / RECORD}, {merged.out / CARD}, manifest.csv, labels.csv")
    return 0
