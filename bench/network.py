"""Network conditions: the VOD example under three profiles, measured from its captures.

    python bench/network.py [--profiles cable,3g,edge] [--seconds N] [--rounds N] [--quick]

1. The example ``watch-title`` workflow, in a scratch project with its committed states,
   set to the player's automatic quality and to ``network: "{net}"`` with one item per
   profile, runs with ``--netgent-capture=pcap`` against the local StreamBox. For each
   profile it prints what the pcap shows (the downlink's rate while the video loads, the
   median TCP handshake round trip) and the rendition the player settled on (the height
   of its last quality samples in ``qoe.jsonl``), and last whether a slower profile
   settled on a lower or equal rendition.
2. The cost of the mechanism itself: the VOD example suite plain and with
   ``--netgent-network rate=1000mbit`` (shaped, but faster than anything it carries),
   alternating, each a fresh pytest process; last line ``ratio overhead
   shaped-none/plain: X`` (medians; goal <= 1.1).

``--quick`` (CI): 4 seconds of video per profile, one round of the overhead.
Linux, as root.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dpkt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures import serve  # noqa: E402
from pytest_netgent.network.conditions import PROFILES  # noqa: E402

QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUIET += ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]


def make_project(scratch: Path, profiles: list[str], seconds: int) -> Path:
    """The example VOD suite, its watch workflow on Auto quality under each profile."""
    project = scratch / "vod"
    shutil.copytree(ROOT / "example_suites" / "vod", project)
    watch = project / "watch.netgent.yaml"
    text = watch.read_text(encoding="utf-8")
    text = text.replace("vars: {seconds: 6}", f"vars: {{seconds: {seconds}}}")
    text = text.replace(
        "  quality: [240p, 540p]", f"  quality: [Auto]\n  net: {json.dumps(profiles)}"
    )
    text = text.replace(
        "category: video_on_demand\n", 'category: video_on_demand\nnetwork: "{net}"\n'
    )
    if "{net}" not in text or "[Auto]" not in text:
        sys.exit(f"{watch}: the example changed; update bench/network.py to match it")
    watch.write_text(text, encoding="utf-8")
    (project / "search.netgent.yaml").unlink()
    (project / "pytest.ini").write_text("[pytest]\nnetgent_state_timeout = 30\n")
    return project


def pytest_run(cwd: Path, url: str, *args: str) -> float:
    """Wall time of one pytest run; exits if it did not pass."""
    env = {**os.environ, "PYTHONPATH": f"{cwd}{os.pathsep}{ROOT}"}
    command = [sys.executable, "-m", "pytest", "-q", *QUIET, f"--netgent-base-url={url}", *args]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return wall


def read_packets(path: Path) -> list[tuple[float, int, int, int, int]]:
    """``(time, size, sport, dport, flags)`` of each TCP packet of a loopback pcap."""
    out = []
    with path.open("rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                tcp = ip.data
                out.append((ts, len(buf), tcp.sport, tcp.dport, tcp.flags))
    return out


def measure(pcap: Path, server_port: int) -> tuple[float, float]:
    """The downlink's rate (bit/s) over its busiest 5 seconds and the median handshake
    round trip (s) in ``pcap``."""
    packets = read_packets(pcap)
    down = [(t, size) for t, size, sport, _, _ in packets if sport == server_port]
    best, start, total = 0, 0, 0
    for end in range(len(down)):
        total += down[end][1]
        while down[end][0] - down[start][0] >= 5.0:
            total -= down[start][1]
            start += 1
        best = max(best, total)
    syn: dict[tuple[int, int], float] = {}
    rtts = []
    for t, _, sport, dport, flags in packets:
        if flags & dpkt.tcp.TH_SYN and not flags & dpkt.tcp.TH_ACK:
            syn[(sport, dport)] = t
        elif flags == dpkt.tcp.TH_ACK and (sport, dport) in syn:
            rtts.append(t - syn.pop((sport, dport)))
    return best * 8 / 5.0, statistics.median(rtts) if rtts else float("nan")


def settled(qoe: Path) -> int:
    """The video height of the last quarter of the quality samples (the most common)."""
    samples = [json.loads(line) for line in qoe.read_text().splitlines() if line.strip()]
    tail = [s.get("height") or 0 for s in samples[-max(1, len(samples) // 4) :]]
    return statistics.mode(tail) if tail else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="cable,3g,edge", help="fastest first")
    parser.add_argument("--seconds", type=int, default=24, help="seconds of video each")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the overhead")
    parser.add_argument("--quick", action="store_true", help="a short run (CI)")
    args = parser.parse_args()
    if args.quick:
        args.seconds, args.rounds = 4, 1
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        sys.exit(f"--profiles: unknown {unknown}; use names of {', '.join(PROFILES)}")
    scratch = Path(tempfile.mkdtemp(prefix="netgent-bench-network-"))
    try:
        with serve("original") as server:
            port = int(server.url.rsplit(":", 1)[1])
            project = make_project(scratch, profiles, args.seconds)
            root = scratch / "artifacts"
            pytest_run(project, server.url, "-n", "0", "--netgent-capture=pcap",
                       f"--netgent-artifacts={root}")  # fmt: skip
            with (root / "manifest.csv").open(encoding="utf-8") as f:
                rows = {json.loads(r["parameters"])["net"]: r for r in csv.DictReader(f)}
            heights = []
            print(f"watch-title on Auto quality, {args.seconds} s of video per profile:")
            for name in profiles:
                row, profile = rows[name], PROFILES[name]
                rate, rtt = measure(root / row["pcap"], port)
                height = settled(root / row["qoe"]) if row.get("qoe") else 0
                heights.append(height)
                print(
                    f"  {name:<10} {profile.text():<42} measured: downlink "
                    f"{rate / 1e6:6.2f} Mbit/s (busiest 5 s), handshake RTT "
                    f"{rtt * 1000:6.1f} ms; settled on {height}p"
                )
            ordered = all(a >= b for a, b in itertools.pairwise(heights))
            verdict = "yes" if ordered else "NO"
            print(f"slower profiles settle on a lower or equal rendition: {verdict}")
            plain: list[float] = []
            shaped: list[float] = []
            suite = scratch / "suite"
            shutil.copytree(ROOT / "example_suites" / "vod", suite)
            (suite / "pytest.ini").write_text("[pytest]\nnetgent_state_timeout = 30\n")
            for _ in range(args.rounds):
                plain.append(pytest_run(suite, server.url, "-n", "0"))
                shaped.append(
                    pytest_run(suite, server.url, "-n", "0", "--netgent-network=rate=1000mbit")
                )
            p, s = statistics.median(plain), statistics.median(shaped)
            print(f"example vod suite -n 0: plain {p:.2f} s, rate=1000mbit {s:.2f} s "
                  f"(medians of {args.rounds})")  # fmt: skip
            print(f"ratio overhead shaped-none/plain: {s / p:.3f}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
