"""The independent goals of the team's workflows (fixtures/goals.py): every workflow of
corpus/ and example_suites/ has one, a goal tells a wrong final page from the right one in
a real browser, and a workflow item that passes but misses its goal fails."""

from __future__ import annotations

import json
import textwrap
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures import goals
from pytest_netgent.workflow.spec import (
    BadDocument,
    LoadedWorkflow,
    ScenarioDocument,
    load_documents,
)

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, element, headless_chromium

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = sorted(
    {p.parent for top in ("corpus", "example_suites") for p in (ROOT / top).rglob("*.netgent.yaml")}
    | {ROOT / "fixtures" / "workflows"}  # bench/synthesis.py --quick records its workflow
)


class _Item:
    """As much of a workflow item as :func:`goals.find_goal` reads."""

    def __init__(self, loaded: LoadedWorkflow, params: dict[str, Any]) -> None:
        self.loaded = loaded
        self.params = params


def written_blind(folder: Path) -> bool:
    """A corpus folder whose workflows were written blind and are kept as written: a
    document of theirs that the product refuses fails its own item (tests/test_corpus.py)."""
    return folder.parent.name == "corpus" and not (folder / "__netgent__").is_dir()


def refused(folder: Path) -> set[str]:
    """The names of ``folder``'s documents that do not load as workflows."""
    return {
        doc.name
        for path in sorted(folder.glob("*.netgent.yaml"))
        for doc in load_documents(path)
        if isinstance(doc, BadDocument)
    }


def workflows(folder: Path) -> Iterator[tuple[LoadedWorkflow, str, dict[str, Any]]]:
    """Every workflow item of ``folder``: its workflow, parameter id and parameters
    (scenarios left out: their members run without the goal hook; a document refused
    left out where workflows are kept as written blind)."""
    for path in sorted(folder.glob("*.netgent.yaml")):
        for doc in load_documents(path):
            if isinstance(doc, ScenarioDocument):
                continue
            if isinstance(doc, BadDocument) and written_blind(folder):
                continue
            assert isinstance(doc, LoadedWorkflow), f"{path}: {doc}"
            for param_id, values in doc.workflow.parameter_sets():
                yield doc, param_id, dict(values)


def test_every_workflow_has_a_goal_and_every_goal_a_workflow() -> None:
    assert any(f.parent.name == "corpus" for f in FOLDERS)
    assert any(f.parent.name == "example_suites" for f in FOLDERS)
    items = 0
    for folder in FOLDERS:
        where = folder.relative_to(ROOT)
        found = list(workflows(folder))
        if not found:  # a folder of scenarios only (example_suites/mixed)
            continue
        assert (folder / goals.GOALS_FILE).is_file(), f"{where} has no {goals.GOALS_FILE}"
        table = goals.load_goals(folder / goals.GOALS_FILE)
        keys = refused(folder)  # their goals stay: they judge the file once it loads
        keys |= {f"{name}[" for name in keys}
        for loaded, param_id, values in found:
            name = loaded.workflow.name
            keys |= {name, f"{name}[{param_id}]"}
            goal = goals.find_goal(table, _Item(loaded, values))
            assert goal is not None, f"{where}: no goal for {name}[{param_id}]"
            assert goal.url and goal.texts, f"{where}: {name}: a goal names its URL and texts"
            items += 1
        orphans = {k for k in table if k not in keys and k.split("[")[0] + "[" not in keys}
        assert not orphans, f"{where}: goals of no workflow: {orphans}"
    assert items >= 40


def test_scenarios_are_left_out_because_their_members_run_without_the_hook() -> None:
    """The members of a scenario run through NetgentBrowser.run in the scenario's own
    threads, never through a workflow item: pytest_netgent_run_finished is not called
    for them (if it ever is, scenarios can have goals too)."""
    scenarios = (ROOT / "pytest_netgent" / "plugin" / "scenarios.py").read_text()
    members = (ROOT / "pytest_netgent" / "scenario" / "members.py").read_text()
    assert "pytest_netgent_run_finished" not in scenarios + members


@pytest.mark.parametrize(
    ("goal", "error"),
    [
        ({"url": "x", "text": ["a"]}, "unknown key"),
        ({"url": "x", "media": "loud"}, "media: one of"),
        ({"url": "x", "texts": "a"}, "a list of texts"),
        ({"url": "x", "min_time": -1}, "min_time"),
        ({}, "checks nothing"),
    ],
)
def test_a_goal_written_wrong_is_an_error(goal: dict[str, Any], error: str) -> None:
    with pytest.raises(goals.GoalError, match=error):
        goals.Goal.parse(goal)


def test_placeholders_are_filled_and_escaped_in_the_url() -> None:
    values = {"base_url": "http://127.0.0.1:8000", "q": "a+b"}
    assert goals.fill("^{base_url}/x/{q}/\\d{2}$", values, regex=True) == (
        r"^http://127\.0\.0\.1:8000/x/a\+b/\d{2}$"
    )
    assert goals.fill("results for {q} in {nothing}", values) == "results for a+b in {nothing}"


# -------------------------------------------------------------------- in a real browser


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with headless_chromium() as chrome:
        yield chrome


def _open(driver: Any, url: str) -> None:
    driver.get(url)
    deadline = time.monotonic() + 30
    while driver.execute_script("return document.readyState") != "complete":
        assert time.monotonic() < deadline, f"{url} did not load"
        time.sleep(0.1)


def _until(driver: Any, goal: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """The goal's misses once it is met, or its last misses after 60 s (a loaded
    machine: the page's scripts and media take their time)."""
    deadline = time.monotonic() + 60
    while (missed := goals.check_goal(driver, goal, values)) and time.monotonic() < deadline:
        time.sleep(0.3)
    return missed


def test_check_goal_tells_what_the_page_misses(chromium: Any, base_url: str) -> None:
    values = {"base_url": base_url, "query": "QUIC"}
    _open(chromium, f"{base_url}/wiki/")
    met = {"url": "^{base_url}/wiki/$", "texts": ["Welcome to NetWiki", ["Nope", "Featured"]]}
    assert goals.check_goal(chromium, met, values) == []
    missed = goals.check_goal(
        chromium,
        {
            "url": "^{base_url}/wiki/article/",
            "texts": ["{query} is a transport protocol", "Welcome to NetWiki"],
            "absent": ["Featured", "Matching articles"],
        },
        values,
    )
    assert missed == [
        f"url '{base_url}/wiki/' does not match '^{{base_url}}/wiki/article/'",
        "text 'QUIC is a transport protocol' not shown",
        "absent text 'Featured' is shown",
    ]


def test_check_goal_reads_shadow_roots_and_frames_of_both_sites(
    chromium: Any, base_url: str
) -> None:
    """The words a user sees, wherever the page keeps them: open shadow roots four deep,
    frames of its site three deep, and a frame of the other site (another process)."""
    for path, text in [
        ("/components/", "Pick a tab"),
        ("/components/frames", "Level 3"),
        ("/components/embed", "Widget ready"),
    ]:
        _open(chromium, base_url + path)
        assert _until(chromium, {"texts": [text]}, {}) == [], path
    assert goals.check_goal(chromium, {"url": "/components/embed$"}, {}) == []


def test_check_goal_tells_a_playing_video_from_a_paused_one(chromium: Any, base_url: str) -> None:
    from selenium.webdriver.common.by import By

    _open(chromium, f"{base_url}/vod/watch/ocean-deep")  # fixtures/vod.py's player
    playing = {"texts": ["Ocean Deep"], "media": "playing", "min_time": 1}
    assert _until(chromium, playing, {}) == []
    (missed,) = goals.check_goal(chromium, {"url": "/vod/", "media": "paused"}, {})
    assert missed.startswith("media: nothing should play, but: video playing at ")
    chromium.find_element(By.ID, "pause").click()
    assert _until(chromium, {"url": "/vod/", "media": "paused", "min_time": 1}, {}) == []
    (missed,) = goals.check_goal(chromium, playing, {})
    assert missed.startswith("media: a <video> or <audio> playing at 1s or later wanted; seen: ")
    assert "video paused at " in missed
    assert goals.check_goal(chromium, {"url": "/vod/", "muted": True}, {}) == []  # muted
    (missed,) = goals.check_goal(chromium, {"url": "/vod/", "muted": False}, {})
    assert "not muted wanted" in missed


def test_no_goal_of_the_examples_is_met_on_its_start_page(chromium: Any, base_url: str) -> None:
    """A goal holds only at the end: on the page a workflow starts from (after the site's
    redirects) it misses something."""
    for folder in FOLDERS:
        if not (folder / goals.GOALS_FILE).is_file() or folder.parent.name == "corpus":
            continue  # the corpus's applications: see bench/synthesis.py's replays
        table = goals.load_goals(folder / goals.GOALS_FILE)
        for loaded, param_id, values in workflows(folder):
            spec = loaded.workflow
            filled = {**spec.vars, **values, "base_url": base_url}
            goal = goals.find_goal(table, _Item(loaded, values))
            assert goal is not None
            _open(chromium, goals.fill(spec.start_url, filled))
            time.sleep(1)  # the page's own scripts: a search, a player, a frame
            assert goals.check_goal(chromium, goal, filled), f"{spec.name}[{param_id}]"


# ---------------------------------------------------------------- through the hook


CONFTEST = "from fixtures.goals import pytest_netgent_run_finished  # noqa: F401\n"


def test_an_item_that_passes_but_misses_its_goal_fails(project: Project) -> None:
    project.pytester.makeconftest(CONFTEST)
    # workflows that all replay the wiki search for QUIC to its article
    for name in ("reached", "wrong", "nogoal"):
        text = SEARCH_WORKFLOW.replace("name: search", f"name: {name}")
        project.states(project.workflow(name, text), name, SEARCH_STATES)
    lost = project.workflow("lost", SEARCH_WORKFLOW.replace("name: search", "name: lost"))
    # states of a page that never comes: the run itself fails, as it always did
    project.states(lost, "lost", {**SEARCH_STATES, "Home": ([element("#nowhere")], [])})
    (project.path / goals.GOALS_FILE).write_text(
        textwrap.dedent(
            """
            reached:
              url: '^{base_url}/wiki/article/quic$'
              texts: ['{query} is a transport protocol', End of article.]
              absent: [Search results]
            wrong:  # another article: the search went elsewhere
              url: '^{base_url}/wiki/article/webrtc$'
              texts: [WebRTC gives browsers]
            lost:
              url: '^{base_url}/wiki/article/quic$'
            """
        )
    )
    report = project.path / "junit.xml"
    result = project.run("-p", "no:randomly", f"--junitxml={report}")
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(["*goal missed: *goals.yaml: wrong: url '*/wiki/article/quic'*"])
    result.stdout.fnmatch_lines(["*goal missing: *goals.yaml has no goal for workflow 'nogoal'*"])
    cases = {c.get("name"): c for c in ET.parse(report).getroot().iter("testcase")}
    assert set(cases) == {"reached", "wrong", "nogoal", "lost"}

    def goal(name: str) -> dict[str, Any]:
        (value,) = [
            p.get("value", "")
            for p in cases[name].iter("property")
            if p.get("name") == goals.PROPERTY
        ]
        return dict(json.loads(value))

    def failure(name: str) -> str:
        node = cases[name].find("failure")
        assert node is not None, name
        return node.get("message", "")

    assert goal("reached") == {"met": True, "missed": [], "passed": True}
    assert cases["reached"].find("failure") is None
    wrong = goal("wrong")
    assert wrong["passed"] is True and wrong["met"] is False
    assert wrong["missed"] == [
        f"url '{project.base_url}/wiki/article/quic' does not match "
        "'^{base_url}/wiki/article/webrtc$'",
        "text 'WebRTC gives browsers' not shown",
    ]
    assert failure("wrong").startswith("goal missed: ")
    assert "text 'WebRTC gives browsers' not shown" in failure("wrong")
    assert failure("nogoal").startswith("goal missing: ")
    assert goal("nogoal") == {
        "met": False,
        "missed": ["no goal for workflow 'nogoal'"],
        "passed": True,
    }
    # a run that failed keeps its own failure; the goal only says what the page was
    assert not failure("lost").startswith("goal")
    assert goal("lost")["passed"] is False and goal("lost")["met"] is False


def test_the_synthesis_bench_counts_a_pass_that_misses_its_goal_as_wrong() -> None:
    import importlib

    bench = importlib.import_module("bench.synthesis")
    item = bench.corpus_bench.Item
    met = {"met": True, "missed": [], "passed": True}
    missed = {"met": False, "missed": ["text 'End of article.' not shown"], "passed": True}
    good = item("wiki", "quic", "passed", states="Home > Article", goal=met)
    assert bench.verdict(good, "Home > Article", good) == ("green", "")
    # the record "passed", and its item failed on the goal alone
    failed = item("wiki", "quic", "failure", "goal missed: ...", "Home > Article", goal=missed)
    kind, detail = bench.verdict(failed, "Home > Article", good)
    assert kind == "wrong" and "missed its goal: text 'End of article.' not shown" in detail
    # the record met its goal, the replay of what it wrote did not
    kind, detail = bench.verdict(good, "Home > Article", failed)
    assert kind == "wrong" and detail.startswith("the replay of what it wrote missed its goal")
    # no goal reported: not green
    assert bench.verdict(item("wiki", "quic", "passed", states="Home > Article"), "Home > Article",
                         good)[0] == "wrong"  # fmt: skip
    # a record that failed on its own is judged as before, whatever the page was
    declined = item("wiki", "quic", "failure", "synthesis failure: could not decide",
                    goal={"met": False, "missed": ["x"], "passed": False})  # fmt: skip
    assert bench.verdict(declined, "Home > Article", None)[0] == "declined"
