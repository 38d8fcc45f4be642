"""Nothing a workflow file says runs as code: a mark's string condition is refused and a
mark that does not apply is named, a workflow's name is quoted in the heal command it
appears in, and a value filled into a step is never filled again."""

from __future__ import annotations

import shlex

import pytest

from .helpers import Project, good


@pytest.mark.parametrize(
    ("mark", "message"),
    [
        (
            "{skipif: [\"__import__('pathlib').Path('ran').touch() or False\"]}",
            "*mark 'skipif' has a string condition, which pytest would run as Python: "
            "workflow files hold data, not code*",
        ),
        (
            "{xfail: {condition: \"__import__('pathlib').Path('ran').touch()\", reason: r}}",
            "*mark 'xfail' has a string condition, which pytest would run as Python*",
        ),
        (
            "{usefixtures: [tmp_path]}",
            "*mark 'usefixtures' does not apply to workflow items: request the fixture from "
            "an autouse fixture in a conftest.py",
        ),
        (
            "{parametrize: [x, [1, 2]]}",
            "*mark 'parametrize' does not apply to workflow items: use the workflow's own "
            "'parametrize' key",
        ),
    ],
)
def test_marks_never_run_code_nor_vanish(project: Project, mark: str, message: str) -> None:
    project.workflow("marked", f"name: marked\nmarks: [{mark}]\nstates:\n  - {{name: A, end: d}}\n")
    good(project)
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([message])
    assert not (project.path / "ran").exists()


def test_the_heal_command_is_quoted_for_the_shell(project: Project) -> None:
    name = "x'$(touch pwned)'"
    project.workflow(
        "quoted",
        f"""
        name: "{name}"
        start_url: "{{base_url}}/wiki/"
        states:
          - name: Gone
            triggers: [The login form is visible]
            end: never
        """,
    )
    project.states(
        project.path / "quoted.netgent.yaml",
        name,
        {"Gone": ([{"type": "element", "params": {"by": "id", "selector": "nope"}}], [])},
    )
    result = project.run("-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    line = next(x for x in result.outlines if "heal with:" in x)
    command = line.split("heal with:", 1)[1].strip()
    assert shlex.split(command) == [
        "pytest",
        "--netgent-record=missing",
        f"quoted.netgent.yaml::{name}",
    ]


def test_a_filled_value_is_never_filled_again() -> None:
    """``{name}`` and NetGent's ``%name%`` are filled in one pass: a password that holds
    ``%user%`` (or a query that holds ``{user}``) is typed as it is, not filled again."""
    from pytest_netgent.replay.run import substitute

    values = {"password": "p%user%x", "query": "a{user}b", "user": "alice"}
    assert substitute("{password}", values) == "p%user%x"
    assert substitute("%password%", values) == "p%user%x"
    assert substitute("%query% by {user}", values) == "a{user}b by alice"
    assert substitute({"text": ["{query}", "%user%"]}, values) == {"text": ["a{user}b", "alice"]}
