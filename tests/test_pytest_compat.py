"""Items as every supported pytest sees them: node ids with their parameter ids (also in a
failure's header), no item lost to a shared id, a manifest row per item run, and groups
kept apart on any scheduler.

The tox environments ``oldest`` and ``newest`` run these on the lowest and the newest
release of pytest and pytest-xdist (pytest 9.2 builds a ``Function``'s id from its
``originalname`` and Python parametrization, which lost the ``[id]`` of workflow items).
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, read_rows

QUERIES = ("QUIC", "WebRTC", "HTTP")


def parametrized(project: Project) -> None:
    values = ", ".join(QUERIES)
    text = SEARCH_WORKFLOW.replace("vars: {query: QUIC}", f"parametrize:\n  query: [{values}]")
    project.states(project.workflow("search", text), "search", SEARCH_STATES)


def test_parametrized_items_keep_their_ids(project: Project) -> None:
    parametrized(project)
    result = project.run("--collect-only", "-q")
    result.stdout.fnmatch_lines([f"search.netgent.yaml::search[[]{q}[]]" for q in QUERIES])
    result.stdout.fnmatch_lines(["3 tests collected*"])


def test_every_parametrized_item_runs_under_xdist_with_a_manifest_row_each(
    project: Project,
) -> None:
    parametrized(project)
    artifacts = project.path / "out"
    result = project.run_subprocess(
        "-n", "2", "-v", "--netgent-capture=har", f"--netgent-artifacts={artifacts}"
    )
    result.assert_outcomes(passed=3)
    ran = {m.group(1) for line in result.outlines if (m := re.search(r"PASSED (\S+)", line))}
    assert ran == {f"search.netgent.yaml::search[{q}]" for q in QUERIES}
    rows = read_rows(artifacts / "manifest.csv")
    assert sorted(r["item"] for r in rows) == sorted(ran)
    assert len({r["folder"] for r in rows}) == 3  # one artifact folder each
    for row in rows:
        har = json.loads((artifacts / row["har"]).read_text())
        query = json.loads(row["parameters"])["query"]
        assert any(f"q={query}" in e["request"]["url"] for e in har["log"]["entries"]), query


def test_two_items_of_one_node_id_are_an_error_naming_both(project: Project) -> None:
    parametrized(project)
    project.workflow(
        "search",
        (project.path / "search.netgent.yaml").read_text()
        + "---\n"
        + SEARCH_WORKFLOW.replace("name: search", "name: search[QUIC]"),
    )
    result = project.run("-v")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of workflow search[[]QUIC[]]#2*",
            "search.netgent.yaml:*: items 'search[[]QUIC[]]' (line 1) and 'search[[]QUIC[]]' "
            "(line *) would both have the node id 'search.netgent.yaml::search[[]QUIC[]]', "
            "and one of them would never run: give the workflows names and parameter values "
            "that tell their items apart",
        ]
    )


@pytest.mark.parametrize("dist", ["load", "loadgroup"])
def test_items_of_a_group_never_run_at_the_same_time(project: Project, dist: str) -> None:
    """On every scheduler, and where xdist's loadgroup no longer groups (pytest 9.2)."""
    for n in range(3):
        text = SEARCH_WORKFLOW.replace("name: search", f"name: search{n}")
        text = text.replace("states:", "group: wiki-account\nstates:", 1)
        project.states(project.workflow(f"search{n}", text), f"search{n}", SEARCH_STATES)
    free = SEARCH_WORKFLOW.replace("name: search", "name: free")
    project.states(project.workflow("free", free), "free", SEARCH_STATES)
    project.pytester.makeconftest(
        """
        import json, time
        def pytest_netgent_run_finished(item, result):
            with open("runs.jsonl", "a") as fh:
                row = {"item": item.name, "end": time.time(), "took": result.duration}
                fh.write(json.dumps(row) + "\\n")
        """
    )
    result = project.run_subprocess("-n", "2", "--dist", dist)
    result.assert_outcomes(passed=4)
    runs = [json.loads(line) for line in (project.path / "runs.jsonl").read_text().splitlines()]
    grouped = sorted(
        (r["end"] - r["took"], r["end"]) for r in runs if r["item"].startswith("search")
    )
    assert len(grouped) == 3
    for (_, end), (start, _) in itertools.pairwise(grouped):
        assert start >= end - 0.05, grouped  # one ended before the next began


def test_parameter_values_of_one_id_make_items_of_their_own(project: Project) -> None:
    project.workflow(
        "dup",
        """
        name: dup
        start_url: "{base_url}/wiki/article/quic"
        parametrize:
          topic: [QUIC, QUIC, a b, a_b]
        states:
          - name: Article
            triggers: [An article heading is shown]
            end: Read
        """,
    )
    project.states(
        project.path / "dup.netgent.yaml",
        "dup",
        {
            "Article": (
                [{"type": "element", "params": {"by": "css selector", "selector": "h1"}}],
                [],
            )
        },
    )
    result = project.run_subprocess("-n", "2", "-v")
    result.assert_outcomes(passed=4)
    for name in ("dup[QUIC0]", "dup[QUIC1]", "dup[a_b0]", "dup[a_b1]"):
        assert f"PASSED dup.netgent.yaml::{name}" in result.stdout.str()


def test_a_failure_header_names_the_item_with_its_parameters(project: Project) -> None:
    path = project.workflow(
        "users",
        """
        name: user-search
        start_url: "{base_url}/wiki/"
        parametrize:
          user: [alice]
        states:
          - name: Gone
            triggers: [The login form is visible]
            end: never
        """,
    )
    project.states(
        path, "user-search",
        {"Gone": ([{"type": "element", "params": {"by": "id", "selector": "nope"}}], [])},
    )  # fmt: skip
    result = project.run("-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["UI drift in workflow 'user-search[[]alice[]]' (users.netgent.yaml:*)"]
    )
