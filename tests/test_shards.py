"""Shards of a run and one dataset from them: the split, ``--netgent-shard``, durations,
``dataset.json`` and ``netgent merge``, and the Kubernetes Job simulated on this machine.

The end-to-end test runs the example suites' local sites in real Chromium: once as one
run, once as the Indexed Job of ``deploy/kubernetes/dataset-job.yaml`` (its own shell
command, one process per index with ``JOB_COMPLETION_INDEX`` set), then merges the shards
and compares the dataset with the single run's."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_netgent.capture.manifest import write_manifest
from pytest_netgent.dataset import RECORD, SCHEMA, merge, record
from pytest_netgent.dataset.shards import (
    Shard,
    longest_first,
    parse_shard,
    read_durations,
    split,
    write_durations,
)

from .helpers import QUIET, SEARCH_STATES, SEARCH_WORKFLOW, Project, read_csv, read_rows

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "deploy" / "kubernetes" / "dataset-job.yaml"
MERGE_JOB = ROOT / "deploy" / "kubernetes" / "merge-job.yaml"
SUITE = ["example_suites/scraping", "example_suites/wiki"]


# --- the split -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("3/2", "shard 3 is out of range; K runs from 1 to 2"),
        ("0/4", "shard 0 is out of range"),
        ("2", "give the shard as K/N"),
        ("a/b", "give the shard as K/N"),
        ("1/0", "give the shard as K/N"),
    ],
)
def test_a_shard_out_of_range_or_malformed_says_what_to_give(text: str, says: str) -> None:
    with pytest.raises(ValueError, match="--netgent-shard") as caught:
        parse_shard(text)
    assert says in str(caught.value)
    assert "JOB_COMPLETION_INDEX" in str(caught.value)
    assert parse_shard(" 2/4 ") == Shard(2, 4)


def test_every_item_lands_in_exactly_one_shard_and_groups_stay_together() -> None:
    units = [(f"t{i}", [f"t{i}"]) for i in range(23)] + [("group:db", ["g1", "g2", "g3"])]
    for count in (1, 2, 3, 7):
        shards = split(units, {}, count)
        every = [i for shard in shards for i in shard]
        assert sorted(every) == sorted(i for _, ids in units for i in ids)
        (together,) = [s for s in shards if "g1" in s]
        at = together.index("g1")
        assert together[at : at + 3] == ["g1", "g2", "g3"]
        sizes = [len(s) for s in shards]
        assert max(sizes) - min(sizes) <= 2  # the group counts as its three items


def test_without_durations_the_split_does_not_depend_on_collection_order() -> None:
    units = [(f"t{i}", [f"t{i}"]) for i in range(10)]
    ahead = [sorted(s) for s in split(units, {}, 3)]
    behind = [sorted(s) for s in split(list(reversed(units)), {}, 3)]
    assert ahead == behind
    assert sorted(len(s) for s in ahead) == [3, 3, 4]


def test_durations_balance_the_shards_and_unknown_items_count_as_the_mean() -> None:
    durations = {"long": 60.0, "a": 10.0, "b": 10.0, "c": 10.0, "d": 10.0, "e": 20.0}
    units = [(n, [n]) for n in [*durations, "new"]]  # "new": never measured, counts 20 s
    first, second = split(units, durations, 2)
    assert "long" in first and set(second) >= {"a", "b", "c", "d"} - set(first)
    load = [sum(durations.get(i, 20.0) for i in shard) for shard in (first, second)]
    assert abs(load[0] - load[1]) <= 20.0  # 140 s as 70/70 or 60/80, not 60/80+


def test_longest_first_orders_by_duration_and_unknown_items_as_the_mean() -> None:
    durations = {"a": 1.0, "b": 8.0, "c": 4.0}  # "new": never measured, counts 13/3 s
    assert longest_first(["a", "new", "b", "c"], durations) == ["b", "new", "c", "a"]
    assert longest_first(["x", "y"], {}) == ["x", "y"]  # nothing known: as collected
    assert longest_first(["x", "y"], {"x": 1.0, "y": 1.0}) == ["x", "y"]  # ties keep order


def test_xdist_workers_run_the_longest_workflows_first_other_tests_keep_their_place(
    project: Project,
) -> None:
    """With durations of an earlier run, the workers order the workflow items longest
    first (xdist hands them out in that order: the run's last items are short)."""
    for n in range(3):
        path = project.workflow(
            f"search{n}", SEARCH_WORKFLOW.replace("name: search", f"name: search{n}")
        )
        project.states(path, f"search{n}", SEARCH_STATES)
    project.pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    durations = {"search0.netgent.yaml::search0": 1.0, "search1.netgent.yaml::search1": 5.0}
    write_durations(project.path / ".test_durations", durations)  # search2: the mean, 3 s
    result = project.run_subprocess("-n", "1", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=4)
    ran = [w for line in result.outlines if "PASSED" in line for w in line.split() if "::" in w]
    assert ran == [
        "search1.netgent.yaml::search1",
        "search2.netgent.yaml::search2",
        "search0.netgent.yaml::search0",
        "test_plain.py::test_plain",
    ], ran


def test_the_durations_file_is_pytest_splits(tmp_path: Path) -> None:
    path = tmp_path / ".test_durations"
    write_durations(path, {"b::t": 1.23456, "a::t": 2.0})
    assert path.read_text().startswith('{\n    "a::t": 2.0,\n    "b::t": 1.235')
    assert read_durations(path) == {"a::t": 2.0, "b::t": 1.235}
    path.write_text('[["a::t", 3.5], ["b::t", "x"]]')  # pytest-split's older list form
    assert read_durations(path) == {"a::t": 3.5}
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"\.test_durations: not JSON"):
        read_durations(path)
    assert read_durations(tmp_path / "none") == {}


# --- --netgent-shard in pytest -----------------------------------------------------------

TESTS = """
import pytest

@pytest.mark.parametrize("n", range(9))
def test_item(n):
    pass

@pytest.mark.xdist_group(name="account")
@pytest.mark.parametrize("n", range(3))
def test_shared(n):
    pass
"""


def _ids(result: pytest.RunResult) -> set[str]:
    """The node ids that passed, from ``-v`` output, with or without xdist."""
    passed = [line.split() for line in result.outlines if "PASSED" in line]
    return {word for words in passed for word in words if "::" in word}


def test_the_shards_of_a_run_cover_it_once_with_or_without_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_many=TESTS)
    seen: list[set[str]] = []
    for k in (1, 2, 3):
        result = pytester.runpytest(*QUIET, "-v", "-p", "no:randomly", f"--netgent-shard={k}/3")
        result.assert_outcomes(passed=len(_ids(result)), deselected=12 - len(_ids(result)))
        line = f"netgent shard {k}/3: * of the run's 12 items (no durations*"
        result.stdout.fnmatch_lines([line])
        seen.append(_ids(result))
        spread = pytester.runpytest(*QUIET, "-v", "-n", "2", f"--netgent-shard={k}/3")
        assert _ids(spread) == seen[-1]  # each xdist worker splits alike
        spread.stdout.fnmatch_lines([f"netgent shard {k}/3: * of the run's 12 items*"])
    assert sum(len(s) for s in seen) == 12 and len(set().union(*seen)) == 12
    shared = [s for s in seen if any("test_shared" in i for i in s)]
    assert len(shared) == 1  # the group stays on one shard


def test_stored_durations_balance_the_next_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_slow="""
import time, pytest

@pytest.mark.parametrize("n", [0.4, 0.05, 0.05, 0.05, 0.05, 0.05])
def test_sleep(n):
    time.sleep(n)
"""
    )
    stored = pytester.runpytest(*QUIET, "--netgent-store-durations")
    stored.stdout.fnmatch_lines(["netgent: durations of 6 items written to *.test_durations"])
    durations = read_durations(pytester.path / ".test_durations")
    assert durations["test_slow.py::test_sleep[0.4]"] >= 0.4
    one = pytester.runpytest(*QUIET, "-v", "--netgent-shard=1/2")
    two = pytester.runpytest(*QUIET, "-v", "--netgent-shard=2/2")
    slow = [_ids(r) for r in (one, two) if "test_slow.py::test_sleep[0.4]" in _ids(r)]
    assert len(slow) == 1 and len(slow[0]) == 1  # the long one alone, the rest together
    one.stdout.fnmatch_lines(["netgent shard 1/2: * (about * s of * s by earlier runs)"])


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--netgent-shard=5/4"], "--netgent-shard='5/4': shard 5 is out of range"),
        (["--netgent-shard=2/2", "--netgent-durations=bad.json"], "bad.json: not JSON"),
    ],
)
def test_a_bad_shard_or_durations_file_stops_the_run_naming_it(
    pytester: pytest.Pytester, args: list[str], says: str
) -> None:
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    (pytester.path / "bad.json").write_text("{")
    result = pytester.runpytest(*QUIET, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()


# --- netgent merge, on shards written without a browser ------------------------------


def _shard_folders(tmp: Path, items: list[str], count: int, run: str = "r1") -> list[Path]:
    """``count`` shard folders of one run of ``items``, each with its items' files, rows
    and record, as a capturing run writes them."""
    folders = []
    expected = [i for i in items if not i.startswith("py")]
    chosen = split([(i, [i]) for i in items], {}, count)
    for k, mine in enumerate(chosen, 1):
        root = tmp / f"shard-{k}"
        rows = []
        for item in mine:
            if item.startswith("py"):
                continue  # a Python test that never started a browser writes no row
            folder = root / item
            folder.mkdir(parents=True)
            (folder / "capture.pcap").write_bytes(item.encode() * 100)
            (folder / "timeline.json").write_text(json.dumps({"item": item}))
            row = {"item": item, "workflow": item.split("[")[0], "category": "video"}
            row.update(outcome="passed", folder=item, start="2026-01-01T00:00:00")
            rows.append(row)
        write_manifest(root, rows)
        collection = record.Collection(items, mine, Shard(k, count), expected)
        record.write(root, record.build(root, rows, collection, run_id=run))
        folders.append(root)
    return folders


ITEMS = [f"watch[{n}]" for n in range(7)] + ["py_test"]


def _merge(*args: str) -> subprocess.CompletedProcess[str]:
    netgent = Path(sys.executable).parent / "netgent"
    return subprocess.run(
        [str(netgent), "merge", *args], capture_output=True, text=True, timeout=60
    )


def test_a_merge_of_every_shard_holds_every_item_once(tmp_path: Path) -> None:
    folders = _shard_folders(tmp_path, ITEMS, 3)
    done = _merge(*map(str, folders), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "netgent merge: 7 items (7 rows)" in done.stdout
    out = tmp_path / "out"
    rows = read_rows(out / "manifest.csv")
    assert sorted(r["item"] for r in rows) == sorted(ITEMS[:-1])
    assert all((out / r["pcap"]).is_file() for r in rows)
    assert (out / rows[0]["pcap"]).stat().st_nlink == 2  # linked, not copied: one disk's worth
    labels = (out / "labels.csv").read_text().splitlines()
    assert labels[0] == "Item,Label" and len(labels) == 8
    merged = json.loads((out / RECORD).read_text())
    assert merged["card"]["items"] == 7 and merged["card"]["categories"] == {"video": 7}
    assert "| watch | video | 7 |" in (out / "DATASET.md").read_text()
    assert not list(record.damaged(out, merged["items"]["watch[0]"]["files"]))


def test_a_damaged_missing_or_duplicated_item_is_named_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    folders = _shard_folders(tmp_path, ITEMS, 2)
    victim = next(folders[0].glob("watch*"))
    (victim / "capture.pcap").write_bytes(b"changed")
    gone = next(folders[1].glob("watch*"))
    shutil.rmtree(gone)
    rows = read_rows(folders[1] / "manifest.csv")
    with (folders[1] / "manifest.csv").open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows([r for r in rows if r["item"] != gone.name])
    twin = next(f.name for f in folders[0].glob("watch*") if f != victim)
    with (folders[1] / "manifest.csv").open("a", newline="") as out:
        csv.writer(out).writerow([twin] + [""] * (len(rows[0]) - 1))
    done = _merge(str(folders[0]), str(folders[1]), "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    damaged = f"{victim.name}: in {folders[0]}, {victim.name}/capture.pcap does not match"
    assert damaged in done.stderr
    assert f"{gone.name}: missing (no shard has a row for it)" in done.stderr
    assert f"{twin}: duplicated (in {folders[0]}, {folders[1]})" in done.stderr
    assert not (tmp_path / "out").exists()
    partial = _merge(str(folders[0]), str(folders[1]), "-o", str(tmp_path / "out"), "--partial")
    assert partial.returncode == 0, partial.stderr
    assert "netgent merge: 4 items" in partial.stdout and "left out:" in partial.stdout
    card = (tmp_path / "out" / "DATASET.md").read_text()
    assert "## Left out (not whole)" in card and victim.name in card


def test_folders_of_another_run_schema_or_a_shard_twice_are_refused(tmp_path: Path) -> None:
    first = _shard_folders(tmp_path / "a", ITEMS, 2, run="run-a")
    other = _shard_folders(tmp_path / "b", ITEMS, 2, run="run-b")
    out = tmp_path / "out"
    done = _merge(str(first[0]), str(other[1]), "-o", str(out))
    assert done.returncode == 2 and "is from another run" in done.stderr
    assert "'run-b', not 'run-a'" in done.stderr
    done = _merge(str(first[0]), str(first[0]), "-o", str(out))
    assert done.returncode == 2 and "are both shard 1 of 2" in done.stderr
    data = json.loads((other[0] / RECORD).read_text())
    (other[0] / RECORD).write_text(json.dumps({**data, "schema": SCHEMA + 1}))
    done = _merge(str(other[0]), str(other[1]), "-o", str(out))
    assert done.returncode == 2
    newer = f"written in dataset schema {SCHEMA + 1}, this pytest-netgent reads schema"
    assert newer in done.stderr
    done = _merge(str(tmp_path), "-o", str(out))
    assert done.returncode == 2 and "no dataset.json" in done.stderr
    assert not out.exists()
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    done = _merge(*map(str, first), "-o", str(out))
    assert done.returncode == 2 and "a merge never overwrites" in done.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


# --- the Kubernetes Job and the CI matrix -------------------------------------------


def _kubernetes_validate(path: Path, version: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "kubernetes-validate"
    command = [str(script), "--strict", "--no-warn", "-k", version, str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("version", ["1.33", "1.37"])
def test_the_kubernetes_manifests_are_valid(version: str, tmp_path: Path) -> None:
    for manifest in (JOB, MERGE_JOB):
        done = _kubernetes_validate(manifest, version)
        assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "job.yaml"  # the check can fail
    broken.write_text(JOB.read_text().replace("completionMode: Indexed", "completionMode: 7"))
    assert _kubernetes_validate(broken, version).returncode != 0


def test_the_container_image_has_what_a_shard_needs() -> None:
    text = (ROOT / "deploy" / "Containerfile").read_text()
    for package in ("chromium", "chromium-driver", "tcpdump", "iproute2", "nftables"):
        assert f" {package} " in text.replace("\n", " ")
    documents = list(yaml.safe_load_all(JOB.read_text()))
    job = next(d for d in documents if d["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert "Containerfile" in JOB.read_text() and container["workingDir"] == "/suite"
    assert {"NET_ADMIN", "NET_RAW"} <= set(container["securityContext"]["capabilities"]["add"])
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"node_modules", "netgent-artifacts", ".git"} <= set(ignored)  # a lean context


def _job() -> tuple[dict[str, Any], str, dict[str, str]]:
    """The Indexed Job's spec, its container's shell command and its plain env values."""
    job = next(d for d in yaml.safe_load_all(JOB.read_text()) if d["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["sh", "-c"]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    return job["spec"], container["args"][0], env


def _single_run(out: Path) -> None:
    command = [sys.executable, "-m", "pytest", *SUITE, "-p", "no:cacheprovider", "-n", "2"]
    command += ["--netgent-capture=pcap,har", f"--netgent-artifacts={out}", "-q"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]


def simulate_job(out: Path, suite: list[str], shards: int | None = None) -> list[Path]:
    """Run the Job's own command once per index, as its pods would, two at a time."""
    spec, script, env = _job()
    count = shards or spec["completions"]
    assert env["NETGENT_SHARDS"] == str(spec["completions"])  # kept in step
    environment = {
        **os.environ,
        **env,
        "NETGENT_SHARDS": str(count),
        "NETGENT_SUITE": " ".join(suite),
        "NETGENT_WORKERS": "1",
        "NETGENT_OUT": str(out),
        "NETGENT_RUN_ID": "simulated-run",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    }

    def pod(index: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", "-c", script],
            env={**environment, "JOB_COMPLETION_INDEX": str(index)},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )

    with ThreadPoolExecutor(spec["parallelism"] // 2 or 1) as pool:
        for index, done in enumerate(pool.map(pod, range(count))):
            assert done.returncode == 0, f"pod {index}: {done.stdout[-3000:]}"
            assert f"netgent shard {index + 1}/{count}:" in done.stdout
    return sorted((out / "simulated-run").glob("shard-*"))


def test_the_merged_shards_of_the_simulated_job_equal_a_single_run(tmp_path: Path) -> None:
    _single_run(tmp_path / "single")
    folders = simulate_job(tmp_path / "job", SUITE, shards=3)
    assert len(folders) == 3 and all((f / "junit.xml").is_file() for f in folders)
    done = _merge(*map(str, folders), "-o", str(tmp_path / "merged"))
    assert done.returncode == 0, done.stderr
    single = read_rows(tmp_path / "single" / "manifest.csv")
    merged = read_rows(tmp_path / "merged" / "manifest.csv")
    assert list(single[0]) == list(merged[0])  # the same columns
    assert sorted(r["item"] for r in single) == sorted(r["item"] for r in merged)
    assert len(merged) == 11 and all(r["pcap"] and r["har"] for r in merged)

    def labels(folder: Path) -> Counter[tuple[str, ...]]:
        return Counter(map(tuple, read_csv(folder / "labels.csv")))

    assert labels(tmp_path / "single") == labels(tmp_path / "merged")
    card = json.loads((tmp_path / "merged" / RECORD).read_text())["card"]
    alone = json.loads((tmp_path / "single" / RECORD).read_text())["card"]
    assert card["run"] == "simulated-run" and card["shards"] == 3
    for key in ("items", "applications", "categories", "outcomes", "networks"):
        assert card[key] == alone[key], key
    assert read_durations(tmp_path / "merged" / "durations.json").keys() == {
        r["item"] for r in merged
    }
    assert merge.read_part(folders[0]).record["shard"] == {"index": 1, "count": 3}


def test_a_shard_left_without_items_still_writes_its_record(tmp_path: Path) -> None:
    """Two items in three shards: the empty shard's folder says it ran, and the merge
    of all three holds both items."""
    folders = []
    for k in (1, 2, 3):
        folder = tmp_path / f"shard-{k}"
        command = [sys.executable, "-m", "pytest", "example_suites/wiki/browse.netgent.yaml"]
        command += [*QUIET, "-p", "no:cacheprovider", f"--netgent-shard={k}/3"]
        command += ["--netgent-capture=har", f"--netgent-artifacts={folder}"]
        env = {**os.environ, "NETGENT_RUN_ID": "two-in-three"}
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:]  # an empty shard is no failure
        assert (folder / RECORD).is_file()
        folders.append(str(folder))
    merged = _merge(*folders, "-o", str(tmp_path / "out"))
    assert merged.returncode == 0, merged.stderr
    assert "netgent merge: 2 items" in merged.stdout
