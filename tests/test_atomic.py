"""The files a dataset ends with (manifest.csv, labels.csv, flows.csv, a merged pcap) are
replaced whole, and flushed to disk before and after the rename."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from pytest_netgent.capture.manifest import write_manifest
from pytest_netgent.capture.pcap import merge_pcaps
from pytest_netgent.scenario.flows import Flow, write_flows
from pytest_netgent.system import atomic

ROW = {
    "item": "suite/a.yaml::a",
    "workflow": "a",
    "category": "vod",
    "outcome": "passed",
    "start": "2026-11-25T10:00:00",
    "pcap": "a/capture.pcap",
}


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("a row that cannot be written")


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What was flushed to disk, by name ('folder' for a folder), in order."""
    calls: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        target = os.readlink(f"/proc/self/fd/{fd}")
        calls.append("folder" if os.path.isdir(target) else Path(target).name)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_a_reader_of_the_old_manifest_keeps_reading_it_whole(tmp_path: Path) -> None:
    write_manifest(tmp_path, [ROW])
    old = (tmp_path / "manifest.csv").read_text(encoding="utf-8")
    with (tmp_path / "manifest.csv").open(encoding="utf-8") as reader:
        write_manifest(tmp_path, [ROW, {**ROW, "item": "suite/b.yaml::b", "workflow": "b"}])
        # written in place, the open file would now be the new one (or half of it)
        assert reader.read() == old
    new = (tmp_path / "manifest.csv").read_text(encoding="utf-8")
    assert "suite/b.yaml::b" in new and new != old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["labels.csv", "manifest.csv"]


def test_a_manifest_that_fails_half_way_leaves_the_last_one(tmp_path: Path) -> None:
    write_manifest(tmp_path, [ROW])
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(RuntimeError, match="cannot be written"):
        write_manifest(tmp_path, [ROW, {**ROW, "start": "0", "category": Unprintable()}])  # type: ignore[dict-item]
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_the_dataset_files_reach_the_disk_before_and_after_their_rename(
    tmp_path: Path, synced: list[str]
) -> None:
    write_manifest(tmp_path, [ROW])
    # each file's data (its temporary name), then the folder holding the rename
    assert [c if c == "folder" else c.split(".")[1] for c in synced] == [
        "manifest",
        "folder",
        "labels",
        "folder",
    ]
    synced.clear()
    write_flows(tmp_path / "flows.csv", [Flow("tcp", "127.0.0.1", 1, "127.0.0.1", 2, 1.0, 2.0)])
    assert len(synced) == 2 and synced[1] == "folder"
    assert (tmp_path / "flows.csv").read_text(encoding="utf-8").count("\n") == 2


def _pcap(path: Path, stamps: list[int]) -> Path:
    header = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    body = b"".join(struct.pack("<IIII", s, 0, 4, 4) + b"abcd" for s in stamps)
    path.write_bytes(header + body)
    return path


def test_a_merged_pcap_is_whole_and_durable(tmp_path: Path, synced: list[str]) -> None:
    target = _pcap(tmp_path / "all.pcap", [1])
    with target.open("rb") as reader:
        merge_pcaps([_pcap(tmp_path / "a.pcap", [1, 3]), _pcap(tmp_path / "b.pcap", [2])], target)
        assert len(reader.read()) == 24 + 20  # the old file, still whole
    data = target.read_bytes()
    assert len(data) == 24 + 3 * 20
    assert [struct.unpack_from("<I", data, 24 + i * 20)[0] for i in range(3)] == [1, 2, 3]
    assert synced[-1] == "folder"


def test_a_text_file_is_created_as_the_user_makes_files(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic.write_text(tmp_path / "x.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == 0o644
