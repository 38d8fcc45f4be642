"""Workflow items with the pytest plugins users already run: pytest-html (the failure
screenshot in the report), pytest-rerunfailures (a fresh browser and a folder of its own
for each attempt), pytest-repeat (``--count`` and the ``repeat`` mark), and ``-rA`` and
the timeline naming the item with its parameters. Real headless Chromium, local sites."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, read_rows

PARAMETRIZED = SEARCH_WORKFLOW.replace("vars: {query: QUIC}", "parametrize:\n  query: [QUIC, HTTP]")

FOLDER = "search.netgent.yaml_search"
"""The artifacts folder of the item ``search.netgent.yaml::search``."""


def search(project: Project, text: str = SEARCH_WORKFLOW) -> Path:
    """The wiki search workflow with its states cached."""
    file = project.workflow("search", text)
    project.states(file, "search", SEARCH_STATES)
    return file


@pytest.mark.parametrize("how", ["self-contained", "assets, -n 2"])
def test_html_report_holds_the_failure_screenshot(
    project: Project, changed_url: str, how: str
) -> None:
    """The screenshot is in the report itself (a data URL, or an asset pytest-html
    copied beside it), not only a path into a workspace that is gone."""
    search(project)
    if how == "self-contained":
        result = project.run("--html=report.html", "--self-contained-html", base_url=changed_url)
    else:
        project.base_url = changed_url
        result = project.run_subprocess("-n", "2", "--html=report.html")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["  screenshot: *failure-step0.png"])
    assert "external resource" not in result.stdout.str() + result.stderr.str()
    shot = (project.path / "netgent-artifacts" / FOLDER / "failure-step0.png").read_bytes()
    report = (project.path / "report.html").read_text(encoding="utf-8")
    if how == "self-contained":
        assert f"data:image/png;base64,{base64.b64encode(shot).decode()}" in report
    else:
        assets = list((project.path / "assets").glob("*.png"))
        assert [a.read_bytes() for a in assets] == [shot]
        assert f"assets/{assets[0].name}" in report


RERUN_CONFTEST = """
import json
import pytest

@pytest.fixture
def netgent_base_url(request):
    # the changed site (UI drift) before attempt GOOD, the original one from it on
    attempt = getattr(request.node, "execution_count", 1)
    return ORIGINAL if attempt >= GOOD else CHANGED

def pytest_netgent_run_finished(item, result):
    browser = item.funcargs["netgent_browser"]
    with open("attempts.jsonl", "a") as fh:
        row = {"attempt": item.execution_count, "session": browser.driver.session_id}
        fh.write(json.dumps(row) + "\\n")
"""


def rerun_project(project: Project, changed_url: str, good: int) -> None:
    """A search that drifts until attempt ``good``; each run's attempt and browser
    session go to ``attempts.jsonl``."""
    search(project)
    values = f"ORIGINAL = {project.base_url!r}\nCHANGED = {changed_url!r}\nGOOD = {good}\n"
    project.pytester.makeconftest(values + RERUN_CONFTEST)


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    """The run's outcome counts, warnings aside (an in-process run warns that the plugin
    was imported before pytest could rewrite it, depending on how it was installed)."""
    return {k: v for k, v in result.parseoutcomes().items() if k != "warnings"}


def attempts(project: Project) -> list[dict[str, object]]:
    lines = (project.path / "attempts.jsonl").read_text().splitlines()
    (project.path / "attempts.jsonl").unlink()
    return [json.loads(line) for line in lines]


def test_each_rerun_has_a_fresh_browser_and_a_folder_of_its_own(
    project: Project, changed_url: str
) -> None:
    rerun_project(project, changed_url, good=99)
    result = project.run("--reruns", "1")
    assert outcomes(result) == {"failed": 1, "rerun": 1}
    runs = attempts(project)
    assert [r["attempt"] for r in runs] == [1, 2]
    assert runs[0]["session"] != runs[1]["session"], "the rerun ran on the same browser"
    artifacts = project.path / "netgent-artifacts"
    result.stdout.fnmatch_lines(
        [
            f"  screenshot: *{FOLDER}-retry1/failure-step0.png",
            "-* Captured netgent timeline call -*",
            "-* Captured netgent timeline (retry 1) call -*",
        ]
    )
    for folder in (FOLDER, f"{FOLDER}-retry1"):
        assert (artifacts / folder / "failure-step0.png").stat().st_size > 1000, folder


def test_a_passing_rerun_leaves_the_failed_attempt_its_files_and_has_none_stale(
    project: Project, changed_url: str
) -> None:
    """The failed attempt keeps its screenshot and captures; the attempt that passed
    has its own folder with no failure in it; and the next session, passing at once,
    finds no failure screenshot of an earlier session in its folder."""
    rerun_project(project, changed_url, good=2)
    result = project.run("--reruns", "2", "--netgent-capture=har")
    assert outcomes(result) == {"passed": 1, "rerun": 1}
    runs = attempts(project)
    assert runs[0]["session"] != runs[1]["session"]
    artifacts = project.path / "netgent-artifacts"
    first, retry = artifacts / FOLDER, artifacts / f"{FOLDER}-retry1"
    assert sorted(p.name for p in first.glob("failure-*")) == ["failure-step0.png"]
    assert sorted(p.name for p in retry.glob("failure-*")) == []
    for folder in (first, retry):
        assert (folder / "capture.har").is_file() and (folder / "timeline.json").is_file()
    assert not (artifacts / f"{FOLDER}-retry2").exists()
    rows = {row["folder"]: row["outcome"] for row in read_rows(artifacts / "manifest.csv")}
    # a row per attempt; before pytest-rerunfailures 16.7 a rerun attempt's teardown
    # report, which carries its row, is not reported
    assert rows.pop(f"{FOLDER}-retry1") == "passed"
    assert rows in ({FOLDER: "failed"}, {})

    rerun_project(project, changed_url, good=1)
    result = project.run("--reruns", "2")
    assert outcomes(result) == {"passed": 1}
    assert list(first.glob("failure-*")) == []


def test_count_repeats_every_workflow_item(project: Project) -> None:
    search(project, PARAMETRIZED)
    result = project.run("--count", "2", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "search.netgent.yaml::search[[]QUIC-1-2[]] PASSED*",
            "search.netgent.yaml::search[[]QUIC-2-2[]] PASSED*",
            "search.netgent.yaml::search[[]HTTP-1-2[]] PASSED*",
            "search.netgent.yaml::search[[]HTTP-2-2[]] PASSED*",
        ]
    )
    result = project.run("--count", "2", "--repeat-scope", "session", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "search.netgent.yaml::search[[]QUIC-1-2[]]",
            "search.netgent.yaml::search[[]HTTP-1-2[]]",
            "search.netgent.yaml::search[[]QUIC-2-2[]]",
            "search.netgent.yaml::search[[]HTTP-2-2[]]",
        ]
    )


def test_repeat_mark_of_a_workflow(project: Project) -> None:
    search(project, SEARCH_WORKFLOW.replace("states:", "marks: [{repeat: 3}]\nstates:", 1))
    project.workflow(
        "wrong", SEARCH_WORKFLOW.replace("name: search", "name: wrong\nmarks: [{repeat: often}]")
    )
    result = project.run("--collect-only", "-q", "search.netgent.yaml")
    result.stdout.fnmatch_lines([f"search.netgent.yaml::search[[]{i}-3[]]" for i in (1, 2, 3)])
    result.stdout.fnmatch_lines(["3 tests collected*"])
    result = project.run("wrong.netgent.yaml")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["wrong.netgent.yaml:2: marks: mark 'repeat' takes a whole number of runs*"]
    )


def test_rA_header_and_timeline_name_the_item_with_its_parameters(project: Project) -> None:
    search(project, PARAMETRIZED)
    result = project.run("-rA")
    result.assert_outcomes(passed=2)
    for query in ("QUIC", "HTTP"):
        result.stdout.fnmatch_lines(
            [
                f"_* workflow search[[]{query}[]] _*",
                "-* Captured netgent timeline call -*",
                f"*s  start    search[[]{query}[]]",
            ]
        )
