"""Scenarios: how much of their traffic is labelled by member, and what running a
workflow as a scenario member costs.

    python bench/scenario.py [--rounds N] [--quick]

1. The example scenarios (``example_suites/mixed``) run with ``--netgent-capture=pcap``.
   For each scenario it prints the flows and packets of each member from ``flows.csv``,
   then ``labelled packets: X%``: the share of all their pcaps' packets that lie in
   flows labelled with a member (goal >= 99).
2. The example ``watch-title`` workflow (540p) as a plain item, and as the only member
   of a scenario, alternating, each a fresh pytest process; last line ``ratio
   scenario/item: X`` (medians of the wall times; goal <= 1.1).

``--quick`` (CI): one round of the comparison. Linux, as root (for the captures).
"""

from __future__ import annotations

import argparse
import collections
import csv
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUIET += ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:randomly"]

ONE_MEMBER = """\
name: watch-alone
description: The watch-title workflow as the only member of a scenario
scenario:
  - workflow: watch.netgent.yaml::watch-title
    vars: {quality: 540p}
"""


def pytest_run(cwd: Path, *args: str) -> float:
    """Seconds one pytest process takes; it must pass."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *QUIET, "-q", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    took = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return took


def labelled(artifacts: Path) -> float:
    """Print each scenario's members' flows; return the share of labelled packets."""
    with (artifacts / "manifest.csv").open(encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["kind"] == "scenario"]
    total = labelled_packets = 0
    for row in sorted(rows, key=lambda r: r["workflow"]):
        flows = list(csv.DictReader((artifacts / row["folder"] / "flows.csv").open()))
        counts: collections.Counter[str] = collections.Counter()
        packets: collections.Counter[str] = collections.Counter()
        for flow in flows:
            counts[flow["member"] or "(none)"] += 1
            packets[flow["member"] or "(none)"] += int(flow["packets"])
        in_pcap = _packets(artifacts / row["pcap"])
        total += in_pcap
        labelled_packets += sum(n for m, n in packets.items() if m != "(none)")
        print(f"{row['workflow']}: {len(flows)} flows, {in_pcap} packets in its pcap")
        for member in sorted(counts):
            print(f"  {member:<10} {counts[member]:4d} flows {packets[member]:8d} packets")
    return labelled_packets / total if total else 1.0


def _packets(pcap: Path) -> int:
    """The number of packets in a classic pcap file."""
    count = 0
    with pcap.open("rb") as f:
        header = f.read(24)
        order = "little" if header[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else "big"
        while len(record := f.read(16)) == 16:
            f.seek(int.from_bytes(record[8:12], order), 1)
            count += 1
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the comparison")
    parser.add_argument("--quick", action="store_true", help="one round (CI)")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    scratch = Path(tempfile.mkdtemp(prefix="netgent-bench-scenario-"))
    try:
        artifacts = scratch / "artifacts"
        pytest_run(ROOT, "example_suites/mixed", "--netgent-capture=pcap",
                   f"--netgent-artifacts={artifacts}")  # fmt: skip
        share = labelled(artifacts)
        print(f"labelled packets: {share * 100:.2f}%")
        project = scratch / "vod"
        shutil.copytree(ROOT / "example_suites" / "vod", project)
        shutil.copy(ROOT / "conftest.py", project / "conftest.py")
        (project / "alone.netgent.yaml").write_text(ONE_MEMBER, encoding="utf-8")
        (project / "pytest.ini").write_text(f"[pytest]\npythonpath = {ROOT}\n")
        item: list[float] = []
        member: list[float] = []
        for _ in range(rounds):
            item.append(pytest_run(project, "watch.netgent.yaml::watch-title[540p]"))
            member.append(pytest_run(project, "alone.netgent.yaml"))
        i, m = statistics.median(item), statistics.median(member)
        print(f"watch-title[540p] as an item {i:.2f} s, as a scenario's only member {m:.2f} s "
              f"(medians of {rounds}, whole pytest processes)")  # fmt: skip
        print(f"ratio scenario/item: {m / i:.3f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
