"""What a workflow's schema cannot say of it, checked once it has loaded: unique state
names and a way to end, parameters with values and names that do not collide,
``{name}`` placeholders that name a var, a parameter, a secret or ``base_url``; and a var
still without a value (a converted NetGent parameter)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from ..errors import WorkflowSpecError
from .model import PLACEHOLDER, RESERVED_NAMES, LoadedWorkflow


def semantic_errors(loaded: LoadedWorkflow) -> WorkflowSpecError | None:
    """Checks the schema cannot express: unique names, known placeholders, secrets."""
    return _shape_error(loaded) or _names_error(loaded) or _placeholder_error(loaded)


def unset_error(loaded: LoadedWorkflow, given: Iterable[str] = ()) -> WorkflowSpecError | None:
    """A var with no value (``null``) that ``given`` (a scenario member's vars) does not
    give: the workflow cannot run until it has one."""
    for key, value in loaded.workflow.vars.items():
        if value is None and key not in set(given):
            return WorkflowSpecError(
                loaded.path,
                loaded.line_of("vars", key),
                f"var {key!r} has no value: give it one here (or convert with "
                f"`netgent convert ... --var {key}=VALUE`)",
            )
    return None


def _shape_error(loaded: LoadedWorkflow) -> WorkflowSpecError | None:
    """Unique state names, and a way to end: an end state, or a duration run out."""
    wf = loaded.workflow
    path = loaded.path
    seen: dict[str, int] = {}
    for i, state in enumerate(wf.states):
        line = loaded.line_of("states", i, "name")
        if state.name in seen:
            return WorkflowSpecError(
                path,
                line,
                f"duplicate state name {state.name!r} (first at line {seen[state.name]}): "
                "state names must be unique within a workflow",
            )
        seen[state.name] = line
    if not any(s.end for s in wf.states) and not (
        wf.duration and any(s.continuous for s in wf.states)
    ):
        return WorkflowSpecError(
            path,
            loaded.line_of("states"),
            "no state has 'end': mark the state that finishes the workflow with 'end: "
            "<reason>' (or give a 'continuous: true' state and the workflow a 'duration')",
        )
    if wf.duration and not any(s.continuous for s in wf.states):
        return WorkflowSpecError(
            path,
            loaded.line_of("duration"),
            "'duration' needs a state with 'continuous: true' to run it out; without one, "
            "remove 'duration' (the workflow ends at its end state)",
        )
    return None


def _names_error(loaded: LoadedWorkflow) -> WorkflowSpecError | None:
    """Parameters with values; vars, parameters and secrets that do not collide."""
    wf = loaded.workflow
    path = loaded.path
    for key, values in wf.parametrize.items():
        if not values:
            return WorkflowSpecError(
                path,
                loaded.line_of("parametrize", key),
                f"parametrize.{key} has no values: list at least one, e.g. '{key}: [a, b]'",
            )
    for key in wf.secrets:
        if key in wf.vars or key in wf.parametrize:
            return WorkflowSpecError(
                path,
                loaded.line_of("secrets", key),
                f"secret {key!r} is also a var or parameter: rename one of them",
            )
    for key in list(wf.vars) + list(wf.parametrize) + list(wf.secrets):
        if key in RESERVED_NAMES:
            return WorkflowSpecError(
                path,
                loaded.line_of("vars", key),
                f"{key!r} is provided by pytest-netgent (--netgent-base-url): rename it",
            )
    return None


def _placeholder_error(loaded: LoadedWorkflow) -> WorkflowSpecError | None:
    """Every ``{name}`` in the workflow's text is a var, a parameter or a secret."""
    wf = loaded.workflow
    known = wf.known_names()
    texts: list[tuple[tuple[Any, ...], str]] = [(("start_url",), wf.start_url)]
    texts += [
        (("expect_traffic", i, "host"), e.host or "") for i, e in enumerate(wf.expect_traffic)
    ]
    for i, state in enumerate(wf.states):
        texts.append((("states", i, "description"), state.description))
        texts += [(("states", i, "triggers", j), t) for j, t in enumerate(state.triggers)]
        texts += [(("states", i, "actions", j), a) for j, a in enumerate(state.actions)]
    for loc, text in texts:
        for match in PLACEHOLDER.finditer(text):
            if match.group(1) not in known:
                names = sorted(known)
                close = difflib.get_close_matches(match.group(1), names, n=1)
                hint = (
                    f"did you mean {{{close[0]}}}?"
                    if close
                    else "define it under 'vars', 'parametrize' or 'secrets'"
                )
                return WorkflowSpecError(
                    loaded.path,
                    loaded.line_of(*loc),
                    f"undefined placeholder {{{match.group(1)}}}: {hint}",
                )
    return None
