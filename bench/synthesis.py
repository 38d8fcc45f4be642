"""How well each synthesis configuration records workflows from nothing.

Records workflows with no cached state, once per configuration:

- ``builtin``: ``--netgent-record``, the builtin rules alone (no model, no key);
- ``local``: ``--netgent-record --netgent-llm=local --netgent-llm-only``, every step by
  SmolLM2-135M on this machine's CPU (1 to 5 s a call), at most 60000 tokens an item;
- ``both``: ``--netgent-record --netgent-llm=local``, the builtin rules first and the
  model for what they decline.

Each item is *green* when the record passes, goes through the same states as a plain
replay of the committed (hand-made) states, its final page meets the workflow's
independent goal (the ``goals.yaml`` of its folder, checked by fixtures/goals.py and
reported as the item's ``netgent_goal`` property), and a plain replay of what it wrote
passes and meets that goal too; *wrong* when the record passes but one of those does not
hold (a record whose item failed on its goal alone passed: it is *wrong*, the goal's
misses shown); *declined* when the
synthesiser said it could not decide (the step it stopped at is shown); *other* for any
other failure (a model error, a limit, a timeout). Prints a row per item with the verdict,
the LLM calls, tokens and seconds of each configuration, the totals, and last
``synthesis green: builtin N/M, local N/M, both N/M; ...``.

    python bench/synthesis.py [--quick] [--configs builtin,local,both] [--apps A,B]

Full mode records the corpus's applications and the example suites (all but ``mixed``,
which holds scenarios), and the corpus folders whose workflows were written blind (no
committed states to compare with: their goals and the replay of what was written judge
them); it takes hours with the local model. ``--quick`` (CI) records one
small wiki workflow, written on the spot, with the three configurations.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # before bench/: ``corpus`` is then the package of the apps

# bench/corpus.py, whose name is the apps package's: loaded as ``bench.corpus`` (it imports
# that package as ``corpus`` itself); mypy, which puts bench/ first, knows it as ``corpus``
if TYPE_CHECKING:
    import corpus as corpus_bench
else:
    corpus_bench = importlib.import_module("bench.corpus")
apps_package = importlib.import_module("corpus")  # corpus/: ADMIN_PASSWORD
APPS = corpus_bench.APPS
BLIND = corpus_bench.BLIND

EXAMPLES = ROOT / "example_suites"
SUITES = sorted(
    p.name
    for p in EXAMPLES.iterdir()
    if p.is_dir() and p.name != "mixed" and any(p.glob("*.netgent.yaml"))
)
CONFIGS: dict[str, tuple[str, ...]] = {
    "builtin": ("--netgent-record",),
    "local": (
        "--netgent-record",
        "--netgent-llm=local",
        "--netgent-llm-only",
        "--netgent-llm-tokens=60000",
    ),
    "both": ("--netgent-record", "--netgent-llm=local", "--netgent-llm-tokens=60000"),
}
# the project's ini adds the call fixture's fake camera and microphone (pyproject.toml)
INI = (
    corpus_bench.INI
    + """netgent_browser_args =
    --use-fake-device-for-media-stream
    --use-fake-ui-for-media-stream
    --allow-loopback-in-peer-connection
"""
)
QUICK = "quic"
QUICK_WORKFLOW = (ROOT / "fixtures" / "workflows" / "quic.netgent.yaml").read_text()
QUICK_GOALS = (ROOT / "fixtures" / "workflows" / "goals.yaml").read_text()
QUICK_REFERENCE = {(QUICK, "quic"): "Home > Article"}
VERDICTS = ("green", "declined", "wrong", "other")


@dataclass
class Row:
    """One item recorded with one configuration."""

    verdict: str
    detail: str = ""
    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0


def layout(dest: Path, groups: list[str], *, with_states: bool) -> None:
    """A pytest folder with ``groups`` (corpus apps, example suites or the quick
    workflow) and the root conftest (which serves the local sites)."""
    corpus = [g for g in groups if g in APPS or g in BLIND]
    corpus_bench.copy_corpus(dest, corpus, with_states=with_states)
    (dest / "pytest.ini").write_text(INI)
    shutil.copy(ROOT / "conftest.py", dest / "conftest.py")
    ignore = ("__pycache__",) if with_states else ("__pycache__", "__netgent__")
    for group in groups:
        if group in SUITES:
            shutil.copytree(EXAMPLES / group, dest / group, ignore=shutil.ignore_patterns(*ignore))
        elif group == QUICK:
            (dest / group).mkdir()
            (dest / group / "quic.netgent.yaml").write_text(QUICK_WORKFLOW)
            (dest / group / "goals.yaml").write_text(QUICK_GOALS)  # its goal, as any group's


def run(folder: Path, *args: str) -> tuple[list[corpus_bench.Item], str]:
    """bench/corpus.py's run_pytest, and why it reported nothing when it did not."""
    (folder / "junit.xml").unlink(missing_ok=True)
    try:
        return corpus_bench.run_pytest(folder, *args), ""
    except subprocess.TimeoutExpired:
        return [], "the pytest run timed out"
    except (OSError, ET.ParseError) as exc:
        return [], f"pytest wrote no readable junit report ({type(exc).__name__})"


def records(report: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Each item's LLM calls and tokens, from its record summaries in the junit file (the
    plugin's ``netgent_record``, a JSON string; a scenario's members' summed)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    try:
        cases = list(ET.parse(report).getroot().iter("testcase"))
    except (OSError, ET.ParseError):
        return found
    for case in cases:
        app = case.get("classname", "").split(".")[0]
        for prop in case.iter("property"):
            if prop.get("name") != "netgent_record":
                continue
            try:
                value = json.loads(prop.get("value", ""))
            except ValueError:
                continue
            if isinstance(value, dict):  # a scenario has one per member: summed
                got = found.setdefault((app, case.get("name", "")), {})
                for key in ("llm_calls", "tokens"):
                    got[key] = int(got.get(key, 0)) + int(value.get(key, 0))
    return found


def reason(item: corpus_bench.Item | None) -> str:
    """The failure's ``reason:`` line, else its first line, shortened."""
    if item is None:
        return "no result"
    text = item.message.strip()
    line = next(
        (ln.strip() for ln in text.splitlines() if "reason:" in ln),
        text.splitlines()[0].strip() if text else item.outcome,
    )
    return line if len(line) <= 160 else line[:159] + "…"


def verdict(
    item: corpus_bench.Item, expected: str | None, replayed: corpus_bench.Item | None
) -> tuple[str, str]:
    """green, declined, wrong or other, and what to show for it."""
    if (missed := item.goal_missed) is not None:  # it passed, on the wrong page
        return "wrong", f"the record passed but missed its goal: {'; '.join(missed)}"
    if item.outcome == "passed":
        if expected is None and item.app not in BLIND:
            return "wrong", "no passing replay of the committed states to compare with"
        if expected is not None and item.states != expected:
            return "wrong", f"went {item.states or '(nowhere)'}; committed: {expected}"
        if item.goal is None or not item.goal.get("met"):
            return "wrong", "its goal was not checked (no goals.yaml entry reported)"
        if replayed is not None and (missed := replayed.goal_missed) is not None:
            return "wrong", f"the replay of what it wrote missed its goal: {'; '.join(missed)}"
        if replayed is None or replayed.outcome != "passed":
            return "wrong", f"the replay of what it wrote failed: {reason(replayed)}"
        if replayed.goal is None or not replayed.goal.get("met"):
            return "wrong", "the replay of what it wrote had no goal checked"
        return "green", ""
    if item.outcome == "failure" and (
        corpus_bench.classify(item, {}) == "could-not-decide" or "synthesis failure" in item.message
    ):
        return "declined", reason(item)
    return "other", f"{item.outcome}: {reason(item)}"


def record(
    folder: Path,
    groups: list[str],
    flags: tuple[str, ...],
    reference: dict[tuple[str, str], str],
) -> tuple[dict[tuple[str, str], Row], float]:
    """Record ``groups`` from nothing in ``folder`` with ``flags``, then replay what was
    written; a row per item (those of ``reference`` that did not report are *other*)."""
    start = time.perf_counter()
    layout(folder, groups, with_states=False)
    items, missing = run(folder, *flags)
    usage = records(folder / "junit.xml")
    replays: dict[tuple[str, str], corpus_bench.Item] = {}
    if any(i.outcome == "passed" or i.goal_missed is not None for i in items):
        replays = {(i.app, i.name): i for i in run(folder)[0]}
    rows: dict[tuple[str, str], Row] = {}
    for item in items:
        key = (item.app, item.name)
        kind, detail = verdict(item, reference.get(key), replays.get(key))
        got = usage.get(key, {})
        rows[key] = Row(
            kind,
            detail,
            int(got.get("llm_calls", 0)),
            int(got.get("tokens", 0)),
            item.seconds,
        )
    for key in reference:
        if key[0] in groups and key not in rows:
            rows[key] = Row("other", missing or "pytest did not report the item")
    return rows, time.perf_counter() - start


def cell(row: Row | None) -> str:
    if row is None:
        return "-"
    return f"{row.verdict} {row.calls}c {row.tokens}t {row.seconds:.1f}s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one small wiki workflow (CI)")
    parser.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help=f"comma-separated configurations to run (default: {','.join(CONFIGS)})",
    )
    parser.add_argument(
        "--apps",
        default="",
        help="comma-separated corpus apps and example suites (full mode; default: all of "
        f"{', '.join(APPS + SUITES + BLIND)})",
    )
    args = parser.parse_args()
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if unknown := [c for c in configs if c not in CONFIGS]:
        parser.error(f"unknown configuration(s) {', '.join(unknown)}: choose from {list(CONFIGS)}")
    if args.quick:
        groups = [QUICK]
    else:
        every = APPS + SUITES + BLIND
        groups = [a.strip() for a in args.apps.split(",") if a.strip()] or every
        if unknown := [g for g in groups if g not in every]:
            parser.error(f"unknown app(s) {', '.join(unknown)}: choose from {every}")
    os.environ.setdefault("CORPUS_ADMIN_PASSWORD", apps_package.ADMIN_PASSWORD)
    work = Path(tempfile.mkdtemp(prefix="netgent-synthesis-bench-"))
    rows: dict[str, dict[tuple[str, str], Row]] = {c: {} for c in configs}
    wall: dict[str, float] = dict.fromkeys(configs, 0.0)
    try:
        if args.quick:
            reference = dict(QUICK_REFERENCE)
        else:
            # the blind folders have no states: their items are judged by their goals
            layout(work / "reference", [g for g in groups if g not in BLIND], with_states=True)
            committed, missing = run(work / "reference")
            if missing:
                raise SystemExit(f"the replay of the committed states: {missing}")
            reference = {(i.app, i.name): i.states for i in committed if i.outcome == "passed"}
            for i in committed:
                if i.outcome != "passed":
                    print(f"committed replay {i.app}/{i.name}: {i.outcome}: {reason(i)}")
        for config in configs:
            # a pytest run per group: each has its own time limit (run_pytest's)
            for group in groups:
                got, seconds = record(work / config / group, [group], CONFIGS[config], reference)
                rows[config].update(got)
                wall[config] += seconds
                # as it goes: a run of hours stopped early still shows what it measured
                for key, row in sorted(got.items()):
                    print(f"{config} {key[0]}/{key[1]}: {cell(row)}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    keys = sorted({k for by_item in rows.values() for k in by_item} | set(reference))
    width = max((len(f"{a}/{n}") for a, n in keys), default=10) + 2
    print((f"{'item':<{width}}" + "".join(f"{c:<32}" for c in configs)).rstrip())
    for key in keys:
        cells = "".join(f"{cell(rows[c].get(key)):<32}" for c in configs)
        print(f"{key[0] + '/' + key[1]:<{width}}{cells}".rstrip())
        for config in configs:
            row = rows[config].get(key)
            if row is not None and row.verdict != "green":
                print(f"    {config}: {row.verdict}: {row.detail}")
    green: dict[str, str] = {}
    for config in configs:
        by_item = rows[config].values()
        kinds = Counter(r.verdict for r in by_item)
        green[config] = f"{kinds['green']}/{len(by_item)}"
        print(
            f"{config} totals: "
            + ", ".join(f"{v} {kinds[v]}" for v in VERDICTS)
            + f" of {len(by_item)}; LLM calls {sum(r.calls for r in by_item)}, tokens "
            f"{sum(r.tokens for r in by_item)}; seconds: items "
            f"{sum(r.seconds for r in by_item):.1f}, wall {wall[config]:.1f}"
        )
    not_run = [c for c in CONFIGS if c not in configs]
    print(
        "synthesis green: "
        + ", ".join(f"{c} {green.get(c, '0/0')}" for c in CONFIGS)
        + "; LLM calls "
        + ", ".join(f"{c} {sum(r.calls for r in rows[c].values())}" for c in configs)
        + (f"; not run: {', '.join(not_run)}" if not_run else "")
    )


if __name__ == "__main__":
    main()
