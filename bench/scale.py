"""Scaling: example-suite wall time over xdist workers, per-item overhead, collection.

    python bench/scale.py [--copies N] [--workers 0,1,2,4] [--quick]

``--quick`` (CI): the wiki's workflows only, with ``-n 0`` and ``-n 2``, and 200
generated files for the collection ratio, once each.

1. The example suites (in a scratch project with their committed states; ``--copies``
   repeats them) replay against the local
   applications with ``-n 0``, ``-n 1``, ``-n 2`` and ``-n 4``; prints each wall time and
   the speedup of ``-n 2`` over ``-n 0``. The ``-n 0`` run stores the items' durations,
   as a user's earlier run would, so the workers' runs hand out the longest items first.
2. From the ``-n 0`` run: each item's time (setup + call + teardown) minus its workflow's
   own run time (the engine's timeline), i.e. what the plugin adds per item: fixture
   setup, loading the workflow and cache, the browser reset, the report. Median and 90th
   percentile; the first item, which starts the browser, is left out and shown apart.
3. Collection of 1000 generated workflow files against 1000 generated one-line Python
   test files (``--collect-only``, best of 3 each); last line ``ratio collect
   yaml/python: X``.

Every run is a fresh ``pytest`` process with the repository's plugin set, like a user's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures import serve  # noqa: E402

QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUIET += ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
INI = """[pytest]
netgent_state_timeout = 10
netgent_browser_args =
    --use-fake-device-for-media-stream
    --use-fake-ui-for-media-stream
    --allow-loopback-in-peer-connection
"""

# Collects per-item durations and the workflow's own run time from the reports (on the
# controller under xdist too) into $SCALE_TIMINGS.
TIMING_PLUGIN = """
import json, os

class Timings:
    def __init__(self):
        self.items = {}

    def pytest_runtest_logreport(self, report):
        entry = self.items.setdefault(report.nodeid, {"total": 0.0, "run": None})
        entry["total"] += report.duration
        for key, value in report.user_properties:
            if key == "netgent_run_seconds":
                entry["run"] = value
        entry.setdefault("order", len(self.items))
        entry["passed"] = entry.get("passed", True) and not report.failed

    def pytest_sessionfinish(self):
        with open(os.environ["SCALE_TIMINGS"], "w") as f:
            json.dump(self.items, f)

def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(Timings(), "scale-timings")
"""


def make_suite(scratch: Path, copies: int, only: str = "") -> Path:
    """``copies`` copies of example_suites/ (or its folder ``only``), with their states,
    in a scratch project."""
    project = scratch / "suite"
    for n in range(copies):
        shutil.copytree(
            ROOT / "example_suites" / only,
            project / f"copy{n}",
            ignore=shutil.ignore_patterns("*.lock", "__pycache__"),
        )
    (project / "pytest.ini").write_text(INI)
    (project / "scale_timings.py").write_text(TIMING_PLUGIN)
    return project


def run_suite(project: Path, url: str, workers: int) -> tuple[float, dict[str, dict[str, float]]]:
    timings = project / "timings.json"
    env = {
        **os.environ,
        "SCALE_TIMINGS": str(timings),
        "PYTHONPATH": f"{project}{os.pathsep}{ROOT}",
        "NETWIKI_PASSWORD": "netgent-pass",
        "CHIRP_PASSWORD": "chirp-pass",
    }
    cmd = [sys.executable, "-m", "pytest", "-q", *QUIET, "-p", "scale_timings"]
    cmd += [f"--netgent-base-url={url}", "-n", str(workers), "."]
    if workers == 0:  # as a user's earlier run: the workers then hand out the longest first
        cmd += ["--netgent-store-durations"]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pytest -n {workers} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return wall, json.loads(timings.read_text())


def overhead(items: dict[str, dict[str, float]]) -> tuple[list[float], float]:
    """Per-item plugin overhead in ms (first item apart) and the first item's."""
    ordered = sorted(items.values(), key=lambda e: e["order"])
    per = [(e["total"] - e["run"]) * 1000 for e in ordered if e["run"] is not None]
    return per[1:], per[0]


def collect_time(folder: Path, files: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", *QUIET],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        best = min(best, time.perf_counter() - start)
        if f"{files} tests collected" not in done.stdout:
            sys.exit(f"collection in {folder} failed:\n{done.stdout[-2000:]}{done.stderr}")
    return best


def make_collection(scratch: Path, files: int = 1000) -> tuple[Path, Path]:
    yaml_dir, py_dir = scratch / "yaml", scratch / "py"
    yaml_dir.mkdir()
    py_dir.mkdir()
    for folder in (yaml_dir, py_dir):
        (folder / "pytest.ini").write_text("[pytest]\n")
    for i in range(files):
        (yaml_dir / f"flow_{i:04d}.netgent.yaml").write_text(
            f"name: flow-{i}\n"
            'start_url: "{base_url}/wiki/"\n'
            "states:\n"
            "  - name: Home\n"
            "    triggers: [The search box is visible]\n"
            f"    actions: [Type topic{i} into the search box, Press Enter]\n"
            "  - name: Results\n"
            "    triggers: [At least one search result is shown]\n"
            "    end: Searched\n"
        )
        (py_dir / f"test_{i:04d}.py").write_text(f"def test_{i}():\n    assert {i} == {i}\n")
    return yaml_dir, py_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1, help="copies of example_suites/")
    parser.add_argument("--workers", default="0,1,2,4", help="xdist worker counts to time")
    parser.add_argument("--quick", action="store_true", help="a small run that checks it works")
    args = parser.parse_args()
    counts = [0, 2] if args.quick else [int(n) for n in args.workers.split(",")]
    files = 200 if args.quick else 1000
    with tempfile.TemporaryDirectory(prefix="netgent-scale-") as tmp, serve() as server:
        scratch = Path(tmp)
        project = make_suite(scratch, args.copies, "wiki" if args.quick else "")
        walls: dict[int, float] = {}
        items: dict[str, dict[str, float]] = {}
        for n in counts:
            walls[n], timings = run_suite(project, server.url, n)
            if n == 0:
                items = timings
            runs = [e["run"] for e in timings.values() if e["run"] is not None]
            print(
                f"-n {n}: {len(timings)} items in {walls[n]:.2f} s (workflow runs: median "
                f"{statistics.median(runs) * 1000:.0f} ms)",
                flush=True,
            )
        if 0 in walls and 2 in walls:
            print(f"speedup -n 2 over -n 0: {walls[0] / walls[2]:.2f}")
        if items:
            per, first = overhead(items)
            runs = sorted(e["run"] for e in items.values() if e["run"] is not None)
            per.sort()
            p90 = per[int(0.9 * (len(per) - 1))]
            print(
                f"per-item overhead beyond the workflow's own run: median "
                f"{statistics.median(per):.0f} ms, p90 {p90:.0f} ms over {len(per)} items "
                f"(first item, starting the browser: {first:.0f} ms; workflow runs: "
                f"median {statistics.median(runs) * 1000:.0f} ms)"
            )
        yaml_dir, py_dir = make_collection(scratch, files)
        repeats = 1 if args.quick else 3
        yaml_s = collect_time(yaml_dir, files, repeats)
        py_s = collect_time(py_dir, files, repeats)
        print(f"collect {files} workflow files: {yaml_s:.2f} s; {files} Python tests: {py_s:.2f} s")
        print(f"ratio collect yaml/python: {yaml_s / py_s:.2f}")


if __name__ == "__main__":
    main()
