"""The live page: what streaming every browser's frames costs a replay.

    python bench/live.py [--rounds N] [--quick]

The example suites (``--quick``: the wiki's) replay with ``--netgent-live PORT`` and
without (``--netgent-live=off``), each a fresh pytest process with ``-n 2``, in pairs
whose order turns each round (plain then live, then live then plain: a machine whose load
drifts over the rounds favours neither). While the live run goes, a client polls the page
as the page itself does (``/live.json`` every 0.4 s, each new frame once).

Two times per run: the process's (start, collection and the live page's server
included) and the replay's, the sum of the items' own times (their setup, call and
teardown, from the JUnit XML report), which leaves out the start-up that streaming does
not touch (the process's ratio is diluted by it); and the CPU seconds of the whole run,
its browsers included (what streaming takes from the items on a machine with no core to
spare). On a shared machine one round's ratio varies by 5-10 %: the rounds' median and
mean with its standard error are printed for each. Last ``ratio live/plain: X``: the
median of the rounds' replay ratios (the goal: at most 1.05).
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QUIET = ["-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark"]
QUIET += ["-p", "no:cacheprovider", "-p", "no:randomly"]
SUITES = ["example_suites/wiki", "example_suites/scraping", "example_suites/social"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def watch(url: str, stop: threading.Event, seen: dict[str, set[int]]) -> None:
    """Poll the live page until ``stop``: each stream's distinct frames into ``seen``."""
    while not stop.wait(0.4):
        try:
            with urllib.request.urlopen(url + "live.json", timeout=2) as answer:
                live = json.load(answer)
        except OSError:  # not up yet, or already down
            continue
        for stream in live["streams"]:
            frame = stream.get("frame")
            if frame and frame not in seen.setdefault(stream["name"], set()):
                seen[stream["name"]].add(frame)
                name = urllib.parse.quote(stream["name"])
                try:
                    with urllib.request.urlopen(f"{url}frames/{name}.jpg", timeout=2) as jpg:
                        jpg.read()
                except OSError:  # replaced or gone meanwhile
                    continue


def run(
    suites: list[str], report: Path, *extra: str, seen: dict[str, set[int]] | None = None
) -> tuple[float, float, float]:
    """One pytest run: its process's seconds, its items' (from the JUnit report), and
    the CPU seconds of it all (its workers, browsers and drivers included)."""
    command = [sys.executable, "-m", "pytest", *suites, *QUIET, "-q", "-n", "2", *extra]
    command.append(f"--junitxml={report}")
    stop = threading.Event()
    watcher = None
    if seen is not None:
        port = extra[0].rsplit("=", 1)[1]
        args = (f"http://127.0.0.1:{port}/", stop, seen)
        watcher = threading.Thread(target=watch, args=args, daemon=True)
        watcher.start()
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    took = time.monotonic() - started
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    stop.set()
    if watcher is not None:
        watcher.join()
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(extra)} failed:\n{done.stdout[-3000:]}")
    items = [float(case.get("time", 0)) for case in ET.parse(report).iter("testcase")]
    if not items:
        sys.exit(f"pytest {' '.join(extra)} reported no item")
    return took, sum(items), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    suites = SUITES[:1] if args.quick else SUITES
    rounds = 1 if args.quick else args.rounds
    plain: list[tuple[float, float, float]] = []
    live: list[tuple[float, float, float]] = []
    seen: dict[str, set[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        for i in range(rounds):
            for kind in ("plain", "live") if i % 2 == 0 else ("live", "plain"):
                if kind == "plain":
                    plain.append(run(suites, report, "--netgent-live=off"))
                else:
                    port = f"--netgent-live={free_port()}"
                    live.append(run(suites, report, port, seen=seen))
    if not any(seen.values()):
        sys.exit("the live page showed no frame")
    frames = sum(len(f) for f in seen.values())
    print(f"{len(seen)} streams, {frames} distinct frames seen by the page's client")
    measures = (("process", 0), ("replay (items' own time)", 1), ("CPU, browsers included", 2))
    for what, at in measures:
        p, q = (statistics.median(r[at] for r in runs) for runs in (plain, live))
        ratios = [b[at] / a[at] for a, b in zip(plain, live, strict=True)]
        print(f"{what}: plain {p:.2f} s, live {q:.2f} s (medians of {rounds}, -n 2)")
        print("  each round's ratio: " + ", ".join(f"{r:.3f}" for r in ratios))
        spread = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else 0.0
        print(
            f"  median of the rounds' ratios: {statistics.median(ratios):.3f}; "
            f"mean {statistics.fmean(ratios):.3f} +- {spread:.3f} (its standard error)"
        )
    ratios = [b[1] / a[1] for a, b in zip(plain, live, strict=True)]
    print(f"ratio live/plain: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
