"""``netgent merge`` on shards it cannot trust: a manifest or record edited, a file added,
a path that leads out of the shard, a bad ``-o``.

The shards are :func:`tests.test_shards._shard_folders`' (written as a capturing run writes
them, without a browser), then edited here as someone, or something, might after the
run. Every such shard fails the merge with the row, file or field named, and nothing
written, neither in ``-o`` nor anywhere a path in the shard points to.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent import cli
from pytest_netgent.capture.manifest import write_manifest
from pytest_netgent.dataset import RECORD, merge, record
from pytest_netgent.dataset.shards import Shard

from .helpers import read_rows
from .test_shards import ITEMS, _merge, _shard_folders


def _rows(shard: Path, change: Callable[[list[dict[str, str]]], object]) -> None:
    """Rewrite the manifest of ``shard`` after ``change`` edits its rows in place."""
    rows = read_rows(shard / "manifest.csv")
    change(rows)
    with (shard / "manifest.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def _record(shard: Path, change: Callable[[dict[str, Any]], object]) -> None:
    """Rewrite the record of ``shard`` after ``change`` edits it in place."""
    data = json.loads((shard / RECORD).read_text())
    change(data)
    (shard / RECORD).write_text(json.dumps(data))


def _set(rows: list[dict[str, str]], column: str, value: str) -> None:
    rows[0][column] = value


def _linked_folder(shard: Path, item: str, outside: Path) -> None:
    """The item's folder moved out of the shard, a link left in its place."""
    shutil.move(shard / item, outside / item)
    (shard / item).symlink_to(outside / item)


def _linked_file(shard: Path, item: str, outside: Path) -> None:
    """The item's pcap (the same bytes) moved out of the shard, a link left in its place."""
    shutil.move(shard / item / "capture.pcap", outside / "capture.pcap")
    (shard / item / "capture.pcap").symlink_to(outside / "capture.pcap")


Tamper = Callable[[Path, str, str, Path], object]
"""An edit of shard 1: its folder, the item of its first row, another item of it, and a
folder outside every shard."""

TAMPERED: dict[str, tuple[Tamper, str]] = {
    "a folder up and out": (
        lambda shard, item, other, outside: _rows(shard, lambda r: _set(r, "folder", "../outside")),
        "the folder '../outside' of {item} in manifest.csv is not a path inside the shard",
    ),
    "an absolute folder": (
        lambda shard, item, other, outside: _rows(shard, lambda r: _set(r, "folder", str(outside))),
        "the folder '{outside}' of {item} in manifest.csv is not a path inside the shard",
    ),
    "an absolute pcap": (
        lambda shard, item, other, outside: _rows(
            shard, lambda r: _set(r, "pcap", str(outside / "secret.txt"))
        ),
        "the pcap '{outside}/secret.txt' of {item} in manifest.csv is not a path inside",
    ),
    "a folder linked out": (
        lambda shard, item, other, outside: _linked_folder(shard, item, outside),
        "the folder '{item}' of {item} in manifest.csv is not a path inside the shard",
    ),
    "a file linked out": (
        lambda shard, item, other, outside: _linked_file(shard, item, outside),
        "the pcap '{item}/capture.pcap' of {item} in manifest.csv is not a path inside",
    ),
    "another item's folder": (
        lambda shard, item, other, outside: _rows(shard, lambda r: _set(r, "folder", other)),
        "the folder of {item} is '{other}' in manifest.csv but '{item}' in dataset.json "
        "(edited after the run)",
    ),
    "an edited outcome": (
        lambda shard, item, other, outside: _rows(shard, lambda r: _set(r, "outcome", "failed")),
        "the outcome of {item} is 'failed' in manifest.csv but 'passed' in dataset.json",
    ),
    "an edited category": (
        lambda shard, item, other, outside: _rows(shard, lambda r: _set(r, "category", "audio")),
        "the row of {item} in manifest.csv is not the one the run wrote (edited after the run",
    ),
    "an added row": (
        lambda shard, item, other, outside: _rows(
            shard, lambda r: r.append({**dict.fromkeys(r[0], ""), "item": "py_test"})
        ),
        "py_test: in {shard}, manifest.csv has a row for py_test that dataset.json does not "
        "record (added after the run)",
    ),
    "an added file": (
        lambda shard, item, other, outside: (shard / item / "extra.bin").write_bytes(b"new"),
        "{item}/extra.bin is not in dataset.json (added after the run)",
    ),
}


@pytest.fixture
def shards(tmp_path: Path) -> tuple[list[Path], Path]:
    """Two honest shards of ITEMS, and a folder outside them holding a secret."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not part of any shard")
    return _shard_folders(tmp_path, ITEMS, 2), outside


def _files_under(root: Path, folder: str) -> set[str]:
    return {p.relative_to(root).as_posix() for p in (root / folder).rglob("*") if p.is_file()}


def _holds_what_it_lists(out: Path) -> None:
    """The merged ``dataset.json`` lists every file under each item's folder in ``out``,
    each there and unchanged, and no other."""
    merged = json.loads((out / RECORD).read_text())
    listed: set[str] = set()
    for entry in merged["items"].values():
        assert not list(record.damaged(out, entry["files"])), entry
        if entry["folder"]:
            assert _files_under(out, entry["folder"]) == set(entry["files"]), entry
        listed |= set(entry["files"])
    held = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert held - listed == {"manifest.csv", "labels.csv", RECORD, "DATASET.md", "durations.json"}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_a_tampered_shard_is_named_and_nothing_is_written_anywhere(
    case: str, shards: tuple[list[Path], Path], tmp_path: Path
) -> None:
    folders, outside = shards
    item, other = (r["item"] for r in read_rows(folders[0] / "manifest.csv")[:2])
    tamper, says = TAMPERED[case]
    tamper(folders[0], item, other, outside)
    kept = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = tmp_path / "merged" / "out"
    done = _merge(*map(str, folders), "-o", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    message = says.format(item=item, other=other, outside=outside, shard=folders[0])
    assert message in done.stderr and "nothing written" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == kept
    partial = _merge(*map(str, folders), "-o", str(out), "--partial")
    assert partial.returncode == 0, partial.stderr
    whole = 7 if case == "an added row" else 6  # py_test has no row to leave out
    assert f"netgent merge: {whole} items" in partial.stdout and message in partial.stdout
    assert not (tmp_path / "merged" / "outside").exists()
    assert sorted(p.name for p in (tmp_path / "merged").iterdir()) == ["out"]
    _holds_what_it_lists(out)


def _scenario_shards(tmp: Path) -> list[Path]:
    """Two shards: a scenario (its members' folders inside its own) and an item in
    shard 1, an item in shard 2 whose folder has the same name as shard 1's item's."""
    collected = ["s.yaml::s", "w.yaml::one", "w.yaml::two"]
    layout: list[list[tuple[str, str, str]]] = [
        [("s.yaml::s", "", "s"), ("s.yaml::s::a", "s.yaml::s", "s/a"), ("w.yaml::one", "", "w")],
        [("w.yaml::two", "", "w")],
    ]
    folders = []
    for k, items in enumerate(layout, 1):
        root = tmp / f"shard-{k}"
        rows = []
        for item, scenario, folder in items:
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / "timeline.json").write_text(json.dumps({"item": item}))
            (root / folder / "capture.pcap").write_bytes(item.encode() * 10)
            rows.append({"item": item, "scenario": scenario, "folder": folder, "outcome": "passed"})
        write_manifest(root, rows)
        assigned = [i for i in collected if any(i == row["item"] for row in rows)]
        collection = record.Collection(collected, assigned, Shard(k, 2))
        record.write(root, record.build(root, rows, collection, run_id="r1"))
        folders.append(root)
    return folders


def test_the_merged_record_lists_exactly_the_files_the_merge_holds(tmp_path: Path) -> None:
    folders = _scenario_shards(tmp_path)
    done = _merge(*map(str, folders), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    merged = json.loads((tmp_path / "out" / RECORD).read_text())
    folders_of = {item: entry["folder"] for item, entry in merged["items"].items()}
    both_w = {"w.yaml::one": "w", "w.yaml::two": "w-2"}  # one name in two shards
    assert folders_of == {"s.yaml::s": "s", "s.yaml::s::a": "s/a", **both_w}
    _holds_what_it_lists(tmp_path / "out")
    rows = read_rows(tmp_path / "out" / "manifest.csv")
    assert {r["pcap"] for r in rows} == {f"{f}/capture.pcap" for f in folders_of.values()}
    assert all(entry["row"] for entry in merged["items"].values())  # itself verifiable


def _old(shard: Path) -> None:
    """The shard as an older pytest-netgent wrote it: no row digests in its record."""
    _record(shard, lambda data: [entry.pop("row", None) for entry in data["items"].values()])


def test_an_older_honest_shard_merges_with_a_warning_of_what_went_unchecked(
    shards: tuple[list[Path], Path], tmp_path: Path
) -> None:
    folders, _ = shards
    _old(folders[1])
    done = _merge(*map(str, folders), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"netgent merge: warning: {folders[1] / RECORD} keeps no hash of its manifest.csv "
        "rows (an older pytest-netgent wrote it): its rows are checked on folder and "
        "outcome only; run that shard again with this version to check every column\n"
    )
    assert "netgent merge: 7 items" in done.stdout
    _holds_what_it_lists(tmp_path / "out")


@pytest.mark.parametrize("case", ["an edited outcome", "an added file", "a folder up and out"])
def test_an_older_shard_is_still_checked_on_what_its_record_keeps(
    case: str, shards: tuple[list[Path], Path], tmp_path: Path
) -> None:
    folders, outside = shards
    item, other = (r["item"] for r in read_rows(folders[0] / "manifest.csv")[:2])
    _old(folders[0])
    tamper, says = TAMPERED[case]
    tamper(folders[0], item, other, outside)
    done = _merge(*map(str, folders), "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert says.format(item=item, other=other, outside=outside) in done.stderr
    assert not (tmp_path / "out").exists()


def _index(data: dict[str, Any], value: Any) -> None:
    data["shard"]["index"] = value


def _first_entry(data: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = next(iter(data["items"].values()))
    return entry


BAD_RECORDS: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "a shard index 'x'": (
        lambda data: _index(data, "x"),
        "shard.index is 'x', not a whole number from 1 to shard.count (2)",
    ),
    "a shard index out of range": (
        lambda data: _index(data, 3),
        "shard.index is 3, not a whole number from 1 to shard.count (2)",
    ),
    "a shard count of true": (
        lambda data: data["shard"].update(count=True),
        "shard.count is True, not a whole number from 1",
    ),
    "collected not a list": (
        lambda data: data.update(collected="watch[0]"),
        "collected is 'watch[0]', not a list of node ids",
    ),
    "items a list": (lambda data: data.update(items=[]), "items is [], not an object of items"),
    "a hash not a text": (
        lambda data: _first_entry(data)["files"].update({"x": 5}),
        "].files['x'] is 5, not a SHA-256 (64 hex digits)",
    ),
    "a duration not a number": (
        lambda data: _first_entry(data).update(duration="fast"),
        "].duration is 'fast', not a number of seconds",
    ),
}


@pytest.mark.parametrize("case", list(BAD_RECORDS))
def test_a_bad_field_in_a_record_is_named_in_one_line(
    case: str, shards: tuple[list[Path], Path], tmp_path: Path
) -> None:
    folders, _ = shards
    change, says = BAD_RECORDS[case]
    _record(folders[0], change)
    done = _merge(*map(str, folders), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"netgent merge: {folders[0] / RECORD}: ")
    assert says in done.stderr and done.stderr.count("\n") == 1
    assert done.stderr.endswith("; restore the shard's dataset.json or run that shard again\n")
    assert not (tmp_path / "out").exists()


def test_a_manifest_row_that_does_not_fit_its_header_is_named(
    shards: tuple[list[Path], Path], tmp_path: Path
) -> None:
    folders, _ = shards
    with (folders[0] / "manifest.csv").open("a", encoding="utf-8") as out:
        out.write("watch[9],too,few\r\n")
    done = _merge(*map(str, folders), "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"{folders[0] / 'manifest.csv'}, line " in done.stderr
    assert "a row that does not fit the header" in done.stderr


def test_a_merged_dataset_given_as_a_shard_is_named(
    shards: tuple[list[Path], Path], tmp_path: Path
) -> None:
    folders, _ = shards
    assert _merge(*map(str, folders), "-o", str(tmp_path / "one")).returncode == 0
    done = _merge(str(tmp_path / "one"), "-o", str(tmp_path / "two"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    merged = f"{tmp_path / 'one'}: a merged dataset (netgent merge wrote it), not a shard's"
    assert merged in done.stderr and not (tmp_path / "two").exists()


def test_an_out_folder_inside_a_shard_is_refused(
    shards: tuple[list[Path], Path], tmp_path: Path
) -> None:
    folders, _ = shards
    for out in (folders[1] / "merged", folders[1] / "deeper" / ".." / "merged"):
        done = _merge(*map(str, folders), "-o", str(out))
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"-o {out}: inside the shard folder {folders[1]}, which the merge reads" in (
            done.stderr
        )
        assert f"e.g. -o {tmp_path / 'dataset'}" in done.stderr
        assert not (folders[1] / "merged").exists()


def test_an_out_folder_that_cannot_be_written_is_named(
    shards: tuple[list[Path], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folders, _ = shards
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.geteuid() == 0:  # root writes anywhere: the folder refuses as it would anyone else
        real = Path.mkdir

        def refuse(path: Path, *args: Any, **kwargs: Any) -> None:
            if path.parent == locked:
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            real(path, *args, **kwargs)

        monkeypatch.setattr(Path, "mkdir", refuse)
    out = locked / "dataset"
    try:
        status = cli.main(["merge", *map(str, folders), "-o", str(out)])
    finally:
        monkeypatch.undo()
        locked.chmod(0o755)
    err = capsys.readouterr().err
    assert status == 2, err
    assert err.startswith(f"netgent merge: -o {out}: cannot write the dataset in {locked} (")
    assert "permission denied" in err.lower() and "give a folder you can write" in err
    assert err.count("\n") == 1 and list(locked.iterdir()) == []


def test_a_merge_that_fails_half_way_leaves_nothing(
    shards: tuple[list[Path], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The disk fills up after three files: the dataset is not left half-written."""
    folders, _ = shards
    brought: list[Path] = []

    def fill_up(source: Path, target: Path) -> None:
        if len(brought) == 3:
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        brought.append(target)
        shutil.copy2(source, target)

    monkeypatch.setattr(merge, "_link", fill_up)
    out = tmp_path / "merged" / "out"
    status = cli.main(["merge", *map(str, folders), "-o", str(out)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert f"-o {out}: cannot write the dataset in {out.parent} (No space left on device)" in err
    assert "nothing was written" in err and err.count("\n") == 1
    assert brought and list(out.parent.iterdir()) == []
