"""Every benchmark in bench/ still runs: each in its quick mode, to its ratio line.

The figures themselves are for people (the full modes, on a quiet machine); these runs
only check that no benchmark has rotted: it completes and prints what it promises.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCHES = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name != "oracle.py")

LAST_LINE = {
    "builtin.py": r"builtin resolved: \d+/\d+",
    "capture.py": r"ratio capture/plain: \d+\.\d+",
    "corpus.py": r"corpus replay: \d+/\d+",
    "interrupt.py": r"interrupt: (\d+)/\1 runs ended within \d+ s and left nothing",
    "live.py": r"ratio live/plain: \d+\.\d+",
    "llm_calls.py": r"ratio heal/record calls: \d+\.\d+",
    "network.py": r"ratio overhead shaped-none/plain: \d+\.\d+",
    "page_model.py": r"ratio page-model/observe: \d+\.\d+",
    "replay.py": r"ratio replay/handwritten: \d+\.\d+",
    "scenario.py": r"ratio scenario/item: \d+\.\d+",
    "shards.py": r"shards: \d+ shards, same items as one run: yes",
    "scale.py": r"ratio collect yaml/python: \d+\.\d+",
    "trace.py": r"ratio trace/plain: \d+\.\d+",
    "startup.py": r"startup over bare: -?\d+ ms \(base\), -?\d+ ms \(all extras\)",
    "synthesis.py": r"synthesis green: builtin \d+/\d+, local \d+/\d+, both \d+/\d+",
}


def test_every_benchmark_is_checked_here() -> None:
    assert sorted(LAST_LINE) == BENCHES


@pytest.mark.parametrize("bench", BENCHES)
def test_benchmark_runs_in_quick_mode(bench: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / bench), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines and re.fullmatch(LAST_LINE[bench], lines[-1].split(";")[0]), done.stdout[-2000:]
