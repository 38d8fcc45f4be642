"""The corpus of real applications: replay, record from nothing, and speed against Selenium.

For every application in ``corpus/`` (software nobody here wrote, at its released
version, started on 127.0.0.1):

- **replay**: plain ``pytest`` replays the hand-written states of its workflows;
- **record from nothing**: the same workflows without any cached state, recorded with
  ``--netgent-record`` and the builtin synthesiser (no model, no key). An item is
  *green* only when it passes **and** goes through the same states as the hand-written
  replay (a pass that skips states is counted *wrong*, and so is a pass whose final page
  misses the workflow's independent goal, fixtures/goals.py); *could-not-decide* when the
  synthesiser said it could not, or stopped a state that did not advance the page or
  would have run again where it already ran; *loops* when the run went on until
  ``max_steps`` or its timeout;
- **speed**: for two applications, the engine's median seconds per item against a plain
  Selenium script of the same steps (explicit waits), alternately in one browser.

Prints a line per application, the totals, and last ``corpus replay: N/M; ...``.

    python bench/corpus.py [--quick] [--rounds N]

``--quick`` (CI): records two applications from nothing and times one round.
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
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import corpus  # noqa: E402

CORPUS = ROOT / "corpus"
APPS = sorted(p.name for p in CORPUS.iterdir() if (p / "__netgent__").is_dir())
"""The corpus folders with committed states (replayed here)."""
BLIND = sorted(
    p.name
    for p in CORPUS.iterdir()
    if (p / "conftest.py").is_file() and not (p / "__netgent__").is_dir()
)
"""The corpus folders whose workflows were written blind, with no states: recorded from
nothing only (bench/synthesis.py)."""
QUICK_RECORD = ["datasette", "docs"]
INI = """[pytest]
addopts = -p no:seleniumbase -p no:langsmith_plugin -p no:benchmark -p no:randomly
netgent_state_timeout = 5
"""


@dataclass
class Item:
    """One item's outcome in a run, from the junit report."""

    app: str
    name: str
    outcome: str
    message: str = ""
    states: str = ""
    seconds: float = 0.0
    goal: dict[str, Any] | None = None
    """The item's independent goal check (fixtures/goals.py's ``netgent_goal`` property:
    ``met``, ``missed``, ``passed``), None when it had no goal checked."""

    @property
    def goal_missed(self) -> list[str] | None:
        """What the final page missed of the goal when the run itself passed (its item
        then failed on the goal alone), else None."""
        goal = self.goal
        if goal is None or not goal.get("passed") or goal.get("met"):
            return None
        return [str(m) for m in goal.get("missed", [])] or ["(no detail)"]


@dataclass
class AppFigures:
    replay: list[Item] = field(default_factory=list)
    record: list[Item] = field(default_factory=list)


def copy_corpus(dest: Path, apps: list[str], *, with_states: bool) -> None:
    """The apps' workflow folders (conftest, workflows, and the states if asked)."""
    dest.mkdir(parents=True)
    (dest / "pytest.ini").write_text(INI)
    for app in apps:
        shutil.copytree(
            CORPUS / app,
            dest / app,
            ignore=shutil.ignore_patterns(
                "__pycache__", *(() if with_states else ("__netgent__",))
            ),
        )


def run_pytest(folder: Path, *args: str) -> list[Item]:
    """pytest over ``folder`` on two workers; the items' outcomes from its junit file."""
    report = folder / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(folder),
            "-n",
            "2",
            "-q",
            f"--junitxml={report}",
            f"--netgent-artifacts={folder / 'artifacts'}",
            *args,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    items = []
    for case in ET.parse(report).getroot().iter("testcase"):
        app = case.get("classname", "").split(".")[0]
        props = {p.get("name"): p.get("value", "") for p in case.iter("property")}
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = tag
                message = (node.get("message") or "") + "\n" + (node.text or "")
        items.append(
            Item(
                app,
                case.get("name", ""),
                outcome,
                message,
                props.get("netgent_states", ""),
                float(case.get("time", 0)),
                _goal(props.get("netgent_goal")),
            )
        )
    return items


def _goal(value: str | None) -> dict[str, Any] | None:
    """The ``netgent_goal`` property's JSON, or None."""
    if not value:
        return None
    try:
        goal = json.loads(value)
    except ValueError:
        return None
    return goal if isinstance(goal, dict) else None


def classify(item: Item, replayed: dict[tuple[str, str], str]) -> str:
    """green, wrong, could-not-decide, loops or other."""
    if item.goal_missed is not None:
        return "wrong"  # it passed, on a page that is not the workflow's goal
    if item.outcome == "passed":
        expected = replayed.get((item.app, item.name))
        return "green" if expected and item.states == expected else "wrong"
    text = item.message
    if "max_steps" in text or "workflow timeout" in text:
        return "loops"  # it went on until a limit
    if any(
        marker in text
        for marker in (
            "could not decide",
            "cannot be verified",
            "does not advance the page",
            "where it already ran (a loop)",
        )
    ):
        return "could-not-decide"  # it stopped at once and said why
    return "other"


# -- speed against plain Selenium --------------------------------------------------------


def selenium_next_pages(driver: Any, base_url: str) -> None:
    """datasette/next-pages by hand: three pages of a table through 'Next page'."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 10, poll_frequency=0.05)
    driver.get(base_url + "/atlas/cities")
    for after in ("50", "100"):
        link = wait.until(
            ec.element_to_be_clickable((By.CSS_SELECTOR, f"a[href$='_next={after}']"))
        )
        link.click()
        wait.until(ec.url_contains(f"_next={after}"))
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "body"), "City 101"))


def selenium_open_row(driver: Any, base_url: str) -> None:
    """sqlite_web/open-row by hand: the database, the table, its content, one row."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 10, poll_frequency=0.05)
    driver.get(base_url + "/")
    for selector, url in (
        ("a.nav-link[href='/cities/']", "/cities/"),
        ("a.nav-link[href='/cities/content/']", "/cities/content/"),
        ("a[aria-label=View]", "/cities/row/"),
    ):
        wait.until(ec.element_to_be_clickable((By.CSS_SELECTOR, selector))).click()
        wait.until(ec.url_contains(url))
    wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "body"), "City 001"))


SPEED = [
    ("datasette", "datasette", "tables.netgent.yaml", "next-pages", selenium_next_pages),
    ("sqlite_web", "sqlite-web", "browse.netgent.yaml", "open-row", selenium_open_row),
]


def speed(rounds: int) -> list[tuple[str, float, float]]:
    """(item, engine median s, selenium median s) for each app of SPEED."""
    from pytest_netgent.browser.session import BrowserOptions, reset_browser
    from pytest_netgent.replay.runner import (
        BrowserPool,
        NetgentBrowser,
        ReplaySettings,
        find_workflow,
    )

    out = []
    pool = BrowserPool(BrowserOptions())
    try:
        for folder, app, file, name, by_hand in SPEED:
            loaded = find_workflow(CORPUS / folder / file, name)
            with corpus.serve(app) as url:
                browser = NetgentBrowser(pool, ReplaySettings(state_timeout=10), url)
                origins = {url}
                engine_times, selenium_times = [], []
                browser.run(loaded)  # warm up both, untimed
                reset_browser(pool.driver, origins)
                by_hand(pool.driver, url)
                reset_browser(pool.driver, origins)
                for _ in range(rounds):
                    start = time.perf_counter()
                    browser.run(loaded)
                    engine_times.append(time.perf_counter() - start)
                    reset_browser(pool.driver, origins)
                    start = time.perf_counter()
                    by_hand(pool.driver, url)
                    selenium_times.append(time.perf_counter() - start)
                    reset_browser(pool.driver, origins)
                out.append(
                    (
                        f"{folder}/{name}",
                        statistics.median(engine_times),
                        statistics.median(selenium_times),
                    )
                )
    finally:
        pool.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="record two apps, one round (CI)")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per app (default 5)")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds
    record_apps = QUICK_RECORD if args.quick else APPS
    os.environ.setdefault("CORPUS_ADMIN_PASSWORD", corpus.ADMIN_PASSWORD)
    work = Path(tempfile.mkdtemp(prefix="netgent-corpus-bench-"))
    figures: dict[str, AppFigures] = {app: AppFigures() for app in APPS}
    try:
        copy_corpus(work / "replay", APPS, with_states=True)
        for item in run_pytest(work / "replay"):
            figures[item.app].replay.append(item)
        copy_corpus(work / "record", record_apps, with_states=False)
        for item in run_pytest(work / "record", "--netgent-record"):
            figures[item.app].record.append(item)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    replayed = {
        (i.app, i.name): i.states
        for f in figures.values()
        for i in f.replay
        if i.outcome == "passed"
    }
    totals: Counter[str] = Counter()
    for app, fig in figures.items():
        passed = sum(i.outcome == "passed" for i in fig.replay)
        kinds = Counter(classify(i, replayed) for i in fig.record)
        totals.update(replay=passed, items=len(fig.replay), recorded=len(fig.record), **kinds)
        line = f"{app:<13} replay: {passed}/{len(fig.replay)}"
        if fig.record:
            line += (
                f"; record from nothing: green {kinds['green']}/{len(fig.record)}, "
                f"could-not-decide {kinds['could-not-decide']}, loops {kinds['loops']}"
                + "".join(f", {k} {kinds[k]}" for k in ("wrong", "other") if kinds[k])
            )
        print(line)
        for item in fig.replay:
            if item.outcome != "passed":
                print(f"    replay {item.name}: {item.message.strip().splitlines()[0][:200]}")
        for item in fig.record:
            kind = classify(item, replayed)
            if kind != "green":
                detail = next(
                    (ln.strip() for ln in item.message.splitlines() if "reason:" in ln),
                    item.message.strip().splitlines()[0] if item.message.strip() else item.states,
                )
                print(f"    record {item.name}: {kind}: {detail[:300]}")
    for name, engine_s, selenium_s in speed(rounds):
        print(
            f"{name}: median seconds per item: engine {engine_s:.2f}, plain Selenium "
            f"{selenium_s:.2f} (ratio {engine_s / selenium_s:.2f})"
        )
    print(
        f"corpus replay: {totals['replay']}/{totals['items']}; record from nothing: green "
        f"{totals['green']}/{totals['recorded']}, could-not-decide "
        f"{totals['could-not-decide']}, loops {totals['loops']}, wrong {totals['wrong']}, "
        f"other {totals['other']}"
    )


if __name__ == "__main__":
    main()
