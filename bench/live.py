"""The live page: what streaming every browser's frames costs a replay.

    python bench/live.py [--rounds N] [--quick]

The example suites (``--quick``: the wiki's) replay with ``--netgent-live PORT`` and
without (``--netgent-live=off``), alternating, each a fresh pytest process with
``-n 2``. While the live run goes, a client polls the page as the page itself does
(``/live.json`` every 0.4 s, each new frame once). Prints the frames the client saw,
then last ``ratio live/plain: X``, the median of each round's ratio (a live run beside the
plain run just before it, so that the machine's load drifting over the rounds cancels;
the goal is at most 1.05).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
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


def run(suites: list[str], *extra: str, seen: dict[str, set[int]] | None = None) -> float:
    command = [sys.executable, "-m", "pytest", *suites, *QUIET, "-q", "-n", "2", *extra]
    stop = threading.Event()
    watcher = None
    if seen is not None:
        port = extra[-1].rsplit("=", 1)[1]
        args = (f"http://127.0.0.1:{port}/", stop, seen)
        watcher = threading.Thread(target=watch, args=args, daemon=True)
        watcher.start()
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    stop.set()
    if watcher is not None:
        watcher.join()
    if done.returncode != 0:
        sys.exit(f"pytest {' '.join(extra)} failed:\n{done.stdout[-3000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    suites = SUITES[:1] if args.quick else SUITES
    rounds = 1 if args.quick else args.rounds
    plain, live = [], []
    seen: dict[str, set[int]] = {}
    for _ in range(rounds):
        plain.append(run(suites, "--netgent-live=off"))
        live.append(run(suites, f"--netgent-live={free_port()}", seen=seen))
    if not any(seen.values()):
        sys.exit("the live page showed no frame")
    frames = sum(len(f) for f in seen.values())
    print(f"{len(seen)} streams, {frames} distinct frames seen by the page's client")
    p, q = statistics.median(plain), statistics.median(live)
    print(f"plain {p:.2f} s, live {q:.2f} s (medians of {rounds}, -n 2)")
    ratios = [b / a for a, b in zip(plain, live, strict=True)]
    print("each round's ratio: " + ", ".join(f"{r:.3f}" for r in ratios))
    print(f"ratio live/plain: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
