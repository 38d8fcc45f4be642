"""Traces: how big one item's ``trace.zip`` is, and what tracing costs.

    python bench/trace.py [--rounds N] [--quick]

The example suites (``--quick``: the wiki's) replay with ``--netgent-trace=on`` and
without, alternating, each a fresh pytest process with ``-n 2``. Prints each item's
trace size (median and largest, and what its screenshots and snapshots take), then last
``ratio trace/plain: X`` (medians of the wall times).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUIET += ["-p", "no:cacheprovider", "-p", "no:randomly"]
SUITES = ["example_suites/wiki", "example_suites/scraping", "example_suites/social"]


def run(suites: list[str], artifacts: Path, *extra: str) -> float:
    started = time.monotonic()
    command = [sys.executable, "-m", "pytest", *suites, *QUIET, "-q", "-n", "2"]
    command += [f"--netgent-artifacts={artifacts}", *extra]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(extra)} failed:\n{done.stdout[-3000:]}")
    return time.monotonic() - started


def sizes(artifacts: Path) -> list[tuple[int, int, int]]:
    """Per trace: total bytes, bytes of screenshots, bytes of snapshots."""
    out = []
    for path in sorted(artifacts.glob("*/trace.zip")):
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            frames = sum(i.compress_size for i in infos if i.filename.startswith("frames/"))
            snaps = sum(i.compress_size for i in infos if i.filename.startswith("snapshots/"))
        out.append((path.stat().st_size, frames, snaps))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    suites = SUITES[:1] if args.quick else SUITES
    rounds = 1 if args.quick else args.rounds
    plain, traced = [], []
    with tempfile.TemporaryDirectory(prefix="netgent-bench-trace-") as tmp:
        for n in range(rounds):
            plain.append(run(suites, Path(tmp) / f"plain{n}"))
            traced.append(run(suites, Path(tmp) / f"traced{n}", "--netgent-trace=on"))
        found = sizes(Path(tmp) / "traced0")
    if not found:
        sys.exit("no trace.zip was written")
    totals = sorted(total for total, _, _ in found)
    print(
        f"{len(found)} traces: median {statistics.median(totals) / 1000:.0f} kB, largest "
        f"{totals[-1] / 1000:.0f} kB per item; screenshots "
        f"{sum(f for _, f, _ in found) / 1000:.0f} kB, DOM snapshots "
        f"{sum(s for _, _, s in found) / 1000:.0f} kB in all"
    )
    p, t = statistics.median(plain), statistics.median(traced)
    print(f"plain {p:.2f} s, traced {t:.2f} s (medians of {rounds}, -n 2)")
    print(f"ratio trace/plain: {t / p:.3f}")


if __name__ == "__main__":
    main()
