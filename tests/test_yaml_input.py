"""Workflow files are read as plain YAML data: a document that would expand or nest
without end, or that carries a tag, fails its own file only; merge keys work; an unquoted
colon in a trigger says to quote the line."""

from __future__ import annotations

import pytest

from .helpers import Project, good

BOMB = (
    'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    + "".join(
        f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "name: bomb\nstates: [{name: A, end: done}]\n"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BOMB, "bad.netgent.yaml:1: the document expands to more than 50000 values*"),
        (
            "name: x\nstates: " + "[" * 50000 + "]" * 50000 + "\n",
            "*bad.netgent.yaml:2: lists and maps nest deeper than 64 levels here",
        ),
        (
            "name: x\nstart_url: !custom x\nstates: [{name: A, end: done}]\n",
            "*bad.netgent.yaml:2: the tag '!custom' is not plain YAML data; workflow files "
            "hold only text, numbers, lists and maps: remove the tag",
        ),
        (
            "name: x\nstart_url: !!python/name:os.system x\nstates: [{name: A, end: done}]\n",
            "*bad.netgent.yaml:2: the tag 'tag:yaml.org,2002:python/name:os.system' is not*",
        ),
    ],
    ids=["alias-bomb", "deep-nesting", "local-tag", "python-tag"],
)
def test_hostile_yaml_fails_its_own_file_only(project: Project, text: str, message: str) -> None:
    (project.path / "bad.netgent.yaml").write_text(text)
    good(project)
    result = project.run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([message])


def test_yaml_merge_keys_simply_work(project: Project) -> None:
    project.workflow(
        "merged",
        """
        x-login: &login
          triggers: [The login form is visible]
          end: Login
        name: merged
        start_url: "{base_url}/wiki/login"
        states:
          - <<: *login
            name: Login form
        """,
    )
    project.states(
        project.path / "merged.netgent.yaml",
        "merged",
        {
            "Login form": (
                [{"type": "element", "params": {"by": "id", "selector": "login-form"}}],
                [],
            )
        },
    )
    project.run().assert_outcomes(passed=1)


def test_an_unquoted_colon_in_a_trigger_says_to_quote_the_line(project: Project) -> None:
    project.workflow(
        "colon",
        """
        name: colon
        states:
          - name: Rows
            triggers:
              - The row page "cities: 1" is shown
            end: done
        """,
    )
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "colon.netgent.yaml:5: states.0.triggers.0 in state 'Rows': this line holds ': ' "
            "(in 'The row page \"cities: 1\" is shown'), which YAML reads as a key and a "
            'value, not text: put the whole line in quotes, e.g. - \'The row page "cities: 1" '
            "is shown'"
        ]
    )
