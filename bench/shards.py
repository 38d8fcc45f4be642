"""Shards on one machine: the same items as one run, and what each shard gets through.

    python bench/shards.py [--shards N] [--quick]

1. The example suites run once as one run (``-n 2``, capturing pcap and HAR).
2. The same suites run as the Indexed Job of ``deploy/kubernetes/dataset-job.yaml``
   would run them: its own shell command once per index, ``JOB_COMPLETION_INDEX`` set,
   one xdist worker each, one shard after another (so each shard's time is its own),
   each into its own folder; then ``netgent merge`` makes one dataset of them.
3. It prints each shard's items and time and its items per hour, then checks the merged
   dataset holds the single run's items, labels and columns; last line ``shards: N
   shards, same items as one run: yes; items per hour per shard: X (one run, 2 workers:
   Y)``.

``--quick`` (CI): the scraping and wiki suites in 2 shards. Linux, as root (the pcaps).
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "deploy" / "kubernetes" / "dataset-job.yaml"
QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUICK_SUITES = ["example_suites/scraping", "example_suites/wiki"]
FULL_SUITES = [*QUICK_SUITES, "example_suites/social", "example_suites/vod"]


def job_command() -> tuple[str, dict[str, str]]:
    """The Job container's shell command and its plain environment values."""
    job = next(d for d in yaml.safe_load_all(JOB.read_text()) if d["kind"] == "Job")
    container = job["spec"]["template"]["spec"]["containers"][0]
    return container["args"][0], {e["name"]: e["value"] for e in container["env"] if "value" in e}


def rows(folder: Path, name: str) -> list[tuple[str, ...]]:
    with (folder / name).open(encoding="utf-8", newline="") as data:
        return [tuple(r) for r in csv.reader(data)]


def one_run(out: Path, suites: list[str]) -> float:
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", *suites, *QUIET, "-p", "no:cacheprovider"]
    command += ["-q", "-n", "2", "--netgent-capture=pcap,har", f"--netgent-artifacts={out}"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"the single run failed:\n{done.stdout[-3000:]}")
    return time.monotonic() - started


def shard_runs(out: Path, suites: list[str], count: int) -> list[tuple[int, float]]:
    """Each shard, as its pod would run it: (items, seconds)."""
    script, env = job_command()
    bin_dir = Path(sys.executable).parent
    environment = {**os.environ, **env, "NETGENT_SHARDS": str(count), "NETGENT_OUT": str(out)}
    environment.update(NETGENT_SUITE=" ".join(suites), NETGENT_WORKERS="1")
    environment.update(NETGENT_RUN_ID="bench", PATH=f"{bin_dir}:{os.environ['PATH']}")
    results = []
    for index in range(count):
        started = time.monotonic()
        done = subprocess.run(
            ["sh", "-c", script],
            env={**environment, "JOB_COMPLETION_INDEX": str(index)},
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.monotonic() - started
        if done.returncode != 0:
            sys.exit(f"shard {index + 1} failed:\n{done.stdout[-3000:]}")
        items = len(rows(out / "bench" / f"shard-{index + 1}", "manifest.csv")) - 1
        print(f"shard {index + 1}/{count}: {items} items in {took:.1f} s", flush=True)
        results.append((items, took))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    suites = QUICK_SUITES if args.quick else FULL_SUITES
    count = args.shards or (2 if args.quick else 3)
    with tempfile.TemporaryDirectory(prefix="netgent-bench-shards-") as tmp:
        out = Path(tmp)
        alone = one_run(out / "single", suites)
        single_items = len(rows(out / "single", "manifest.csv")) - 1
        print(f"one run, 2 workers: {single_items} items in {alone:.1f} s", flush=True)
        results = shard_runs(out / "job", suites, count)
        folders = [str(out / "job" / "bench" / f"shard-{k}") for k in range(1, count + 1)]
        netgent = str(Path(sys.executable).parent / "netgent")
        done = subprocess.run(
            [netgent, "merge", *folders, "-o", str(out / "merged")], capture_output=True, text=True
        )
        if done.returncode != 0:
            sys.exit(f"the merge failed:\n{done.stderr}")
        same = all(
            sorted(rows(out / "single", name)) == sorted(rows(out / "merged", name))
            for name in ("labels.csv",)
        ) and sorted(r[0] for r in rows(out / "single", "manifest.csv")) == sorted(
            r[0] for r in rows(out / "merged", "manifest.csv")
        )
        rate = sorted(3600 * items / took for items, took in results)[len(results) // 2]
        print(
            f"shards: {count} shards, same items as one run: {'yes' if same else 'NO'}; "
            f"items per hour per shard: {rate:.0f} (one run, 2 workers: "
            f"{3600 * single_items / alone:.0f})"
        )
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
