"""Bad workflow files: each error names file and line, and only that file's items error."""

from __future__ import annotations

import pytest

from .helpers import Project

GOOD_STATE = """
states:
  - name: Home
    triggers: [The page is shown]
    end: Done
"""

# (file content, exact error line printed by pytest)
BAD_FILES = {
    "yaml_syntax": (
        "name: x\nstates: [\n  - name: Home\n",
        "bad.netgent.yaml:3: YAML syntax error: *",
    ),
    "flow_placeholder": (
        "name: x\nvars: {q: a}\nstates:\n  - name: Home\n    actions: [Type {q} in the box]\n"
        "    end: Done\n",
        "bad.netgent.yaml:5: YAML syntax error: did not find expected ',' or ']' (while parsing "
        "a flow sequence); text with {placeholders} inside [ ] must be quoted, e.g. "
        "['Type {query} into the search box'], or written as '- item' lines",
    ),
    "unknown_state_key": (
        "name: x\nstates:\n  - name: Home\n    trigers: [Shown]\n    end: Done\n",
        "bad.netgent.yaml:4: unknown key 'trigers' in state 'Home': did you mean 'triggers'?",
    ),
    "unknown_top_key": (
        "name: x\nstart-url: http://127.0.0.1/\n" + GOOD_STATE,
        "bad.netgent.yaml:2: unknown key 'start-url': did you mean 'start_url'?",
    ),
    "wrong_type": (
        "name: x\ntimeout: soon\n" + GOOD_STATE,
        "bad.netgent.yaml:2: timeout: Input should be a valid number, unable to parse string "
        "as a number, got 'soon'",
    ),
    "duplicate_state": (
        "name: x\nstates:\n  - name: Home\n    end: Done\n  - name: Home\n",
        "bad.netgent.yaml:5: duplicate state name 'Home' (first at line 3): state names must "
        "be unique within a workflow",
    ),
    "duplicate_workflow": (
        "name: x\n" + GOOD_STATE + "---\nname: x\n" + GOOD_STATE,
        "bad.netgent.yaml:8: duplicate workflow name 'x' (first at line 1): give each "
        "workflow in the file its own 'name'",
    ),
    "undefined_placeholder": (
        "name: x\nvars: {query: a}\nstates:\n  - name: Home\n    actions:\n"
        "      - Type {qurey} into the box\n    end: Done\n",
        "bad.netgent.yaml:6: undefined placeholder {qurey}: did you mean {query}?",
    ),
    "parametrize_shape": (
        "name: x\nparametrize:\n  query: networking\n" + GOOD_STATE,
        "bad.netgent.yaml:3: parametrize.query: Input should be a valid list, got "
        "'networking'; parametrize maps each name to a list of values, e.g. 'query: "
        "[networking, pytest]'",
    ),
    "parametrize_empty": (
        "name: x\nparametrize:\n  query: []\n" + GOOD_STATE,
        "bad.netgent.yaml:3: parametrize.query has no values: list at least one, e.g. "
        "'query: [a, b]'",
    ),
    "missing_states": (
        "name: x\ndescription: nothing to do\n",
        "bad.netgent.yaml:1: missing required key 'states': add it",
    ),
    "no_end_state": (
        "name: x\nstates:\n  - name: Home\n    actions: [Click OK]\n",
        "bad.netgent.yaml:3: no state has 'end': mark the state that finishes the workflow "
        "with 'end: <reason>' (or give a 'continuous: true' state and the workflow a "
        "'duration')",
    ),
    "not_a_mapping": (
        "- name: Home\n",
        "bad.netgent.yaml:1: a workflow document must be a mapping with 'states' (and 'name', "
        "'start_url', ...), got list",
    ),
    "duplicate_key": (
        "name: x\nname: y\n" + GOOD_STATE,
        "bad.netgent.yaml:2: duplicate key 'name': remove one of the two",
    ),
    "unnamed_in_multi": (
        GOOD_STATE + "---\nname: y\n" + GOOD_STATE,
        "bad.netgent.yaml:2: this file holds several workflows: give each one a 'name'",
    ),
    "secret_clash": (
        "name: x\nvars: {password: a}\nsecrets: {password: PW}\n" + GOOD_STATE,
        "bad.netgent.yaml:3: secret 'password' is also a var or parameter: rename one of them",
    ),
    "bad_mark": (
        "name: x\nmarks: [{skip: a, xfail: b}]\n" + GOOD_STATE,
        "bad.netgent.yaml:2: marks: a mark is a name or a one-key map like {skip: 'reason'}",
    ),
    "negative_repeat": (
        "name: x\nstates:\n  - name: Home\n    repeat: -1\n    end: Done\n",
        "bad.netgent.yaml:4: states.0.repeat in state 'Home': Input should be greater than or "
        "equal to 0, got -1",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_workflow_file_reports_file_line_and_fix(project: Project, case: str) -> None:
    content, expected = BAD_FILES[case]
    (project.path / "bad.netgent.yaml").write_text(content, encoding="utf-8")
    project.pytester.makepyfile(test_other="def test_still_runs():\n    pass\n")
    result = project.run("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([expected])
    # only the bad document errors: the rest of the session ran
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 1
    assert outcomes.get("passed") == 1


def test_one_bad_document_leaves_the_others_of_its_file(project: Project) -> None:
    project.workflow(
        "two",
        """
        name: good
        states:
          - name: Home
            end: Done
        ---
        name: bad
        timeout: -5
        states:
          - name: Home
            end: Done
        """,
    )
    result = project.run("--collect-only", "-q")
    result.stdout.fnmatch_lines(["two.netgent.yaml::good", "two.netgent.yaml::bad"])
    result = project.run("-k", "bad")
    result.stdout.fnmatch_lines(
        ["two.netgent.yaml:7: timeout: Input should be greater than 0, got -5"]
    )
    result.assert_outcomes(errors=1)


def test_schema_command_prints_the_workflow_schema(pytester: pytest.Pytester) -> None:
    import json
    import sys

    result = pytester.run(sys.executable, "-m", "pytest_netgent", "schema")
    assert result.ret == 0
    schema = json.loads(result.stdout.str())
    assert schema["additionalProperties"] is False
    assert "states" in schema["required"]
    state = schema["$defs"]["StateSpec"]
    assert set(state["properties"]) == {
        "name",
        "description",
        "triggers",
        "actions",
        "end",
        "repeat",
        "continuous",
    }
    bad = pytester.run(sys.executable, "-m", "pytest_netgent", "scheme")
    assert bad.ret == 2
    assert "usage: python -m pytest_netgent schema" in bad.stderr.str()
