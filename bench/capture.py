"""Capture overhead: the example suites with and without ``--netgent-capture``.

    python bench/capture.py [--rounds N] [--workers N] [--modes pcap,har,netlog] [--quick]

Runs ``pytest example_suites -n WORKERS`` plain and with ``--netgent-capture=MODES``,
alternating (plain, capture, plain, capture, ...) for ``--rounds`` rounds so both see the
same machine, each a fresh pytest process. Prints each run's wall time, the captures'
total sizes, and last ``ratio capture/plain: X`` (medians; goal under 1.2). ``--quick``
(CI): one round of the wiki's workflows.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUIET += ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]


def run(workers: int, extra: list[str], suites: str = "example_suites") -> float:
    """Wall time of one example-suite run; exits if any item did not pass."""
    command = [sys.executable, "-m", "pytest", *QUIET, "-q", suites]
    command += ["-n", str(workers), *extra]
    started = time.perf_counter()
    answer = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if answer.returncode != 0:
        sys.exit(f"{' '.join(command[3:])} failed:\n{answer.stdout[-3000:]}{answer.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--modes", default="pcap,har,netlog")
    parser.add_argument("--quick", action="store_true", help="one round, the wiki only (CI)")
    args = parser.parse_args()
    suites = "example_suites/wiki" if args.quick else "example_suites"
    if args.quick:
        args.rounds = 1
    plain: list[float] = []
    captured: list[float] = []
    with tempfile.TemporaryDirectory(prefix="netgent-bench-") as scratch:
        for n in range(1, args.rounds + 1):
            plain.append(run(args.workers, [], suites))
            print(f"round {n}: plain   {plain[-1]:6.2f} s", flush=True)
            artifacts = Path(scratch) / f"round-{n}"
            flags = [f"--netgent-capture={args.modes}", f"--netgent-artifacts={artifacts}"]
            captured.append(run(args.workers, flags, suites))
            print(f"round {n}: capture {captured[-1]:6.2f} s", flush=True)
        rows = list(csv.DictReader((artifacts / "manifest.csv").read_text().splitlines()))
    sizes = []
    for kind in (*args.modes.split(","), "qoe", "timeline"):
        total = sum(int(r.get(f"{kind}_bytes") or 0) for r in rows)
        files = sum(1 for r in rows if r.get(kind))
        sizes.append(f"{kind} {files} files {total / 1e6:.1f} MB")
    print(f"{len(rows)} items captured: " + ", ".join(sizes))
    ratio = statistics.median(captured) / statistics.median(plain)
    print(
        f"example suites -n {args.workers}: plain {statistics.median(plain):.2f} s, "
        f"capture={args.modes} {statistics.median(captured):.2f} s (medians of {args.rounds})"
    )
    print(f"ratio capture/plain: {ratio:.2f}")


if __name__ == "__main__":
    main()
