"""Scenario documents: the models of a ``scenario:`` list and the checks that make each
member runnable, with the file and line of every fault.

A scenario is a document of a ``*.netgent.yaml`` file with a top-level ``scenario:``
list instead of ``states:``. Each member is a workflow (``workflow: PATH::NAME``,
relative to the file) or a shell command (``run:``), started ``start`` seconds after
the scenario and stopped at ``stop``.
"""

from __future__ import annotations

import difflib
import itertools
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import WorkflowSpecError
from ..workflow.spec import (
    PLACEHOLDER,
    RESERVED_NAMES,
    LoadedWorkflow,
    Scalar,
    ScenarioDocument,
    Workflow,
    load_workflows,
)

MEMBER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""A member's name: it is a folder's name in the captures."""

MEMBER_NAME_OUT = re.compile(r"[^A-Za-z0-9_.-]+")
"""What a default name (a workflow's, a program's) loses to become a member's."""


class Member(BaseModel):
    """One member of a scenario: a workflow or a shell command."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        "", description="The member's name in reports and flows.csv; default: the "
        "workflow's name or the command's program."
    )  # fmt: skip
    workflow: str | None = Field(
        None,
        description="PATH::NAME of a workflow, PATH relative to this file (NAME may be "
        "left out when the file holds one workflow).",
    )
    vars: dict[str, Scalar] = Field(
        default_factory=dict,
        description="Values for the workflow's vars and parameters (placeholders allowed).",
    )
    run: str | None = Field(
        None, description="A shell command (placeholders allowed), e.g. curl -s {base_url}/x"
    )
    repeat: int | None = Field(None, ge=1, description="Run the command this many times.")
    every: float | None = Field(
        None, gt=0, description="Run the command again every this many seconds until stop."
    )
    category: str = Field(
        "", description="Traffic label in flows.csv; default: the workflow's category."
    )
    start: float = Field(0.0, ge=0, description="Seconds after the scenario starts.")
    stop: float | None = Field(
        None, gt=0, description="Seconds after the scenario starts at which it is stopped."
    )


DEFAULT_TIMEOUT = 600.0
"""Seconds a scenario without a duration or timeout may take."""


class Scenario(BaseModel):
    """Several workflows and commands run at the same time: one test item."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("", description="Test item name; default: the file's stem.")
    description: str = Field("", description="What the scenario is.")
    category: str = Field("mixed", description="The scenario's label in the manifest.")
    duration: float | None = Field(
        None,
        gt=0,
        description="Seconds the scenario runs; required when a member has no end (a "
        "command with 'every', a workflow that ends in a continuous state).",
    )
    timeout: float | None = Field(
        None,
        gt=0,
        description="Seconds the whole scenario may take; members still running then are "
        "stopped and the item fails. Default: the duration and a minute, else 600.",
    )
    vars: dict[str, Scalar] = Field(
        default_factory=dict, description="Values usable as {name} in the members."
    )
    parametrize: dict[str, list[Scalar]] = Field(
        default_factory=dict,
        description="Each key lists values; every combination is its own test item.",
    )
    marks: list[str | dict[str, Any]] = Field(
        default_factory=list, description="pytest marks, as for workflows."
    )
    network: str | None = Field(
        None,
        description="Network condition for every member (a profile, key=value pairs or a "
        "placeholder); over --netgent-network.",
    )
    scenario: list[Member] = Field(min_length=1, description="The members.")

    @field_validator("network")
    @classmethod
    def _network(cls, value: str | None) -> str | None:
        if value is None or "{" in value:
            return value
        from ..network.conditions import parse

        parse(value, "")
        return value

    @property
    def limit(self) -> float:
        """Seconds after its start at which the scenario is ended, whatever still runs
        (a command that never exits, a workflow stuck past its own timeout)."""
        if self.timeout is not None:
            return self.timeout
        return self.duration + 60 if self.duration is not None else DEFAULT_TIMEOUT

    @property
    def limit_source(self) -> str:
        """Where :attr:`limit` comes from, as a report names it."""
        if self.timeout is not None:
            return "its 'timeout'"
        if self.duration is not None:
            return f"its 'duration' of {self.duration:g}s and a minute, as it has no 'timeout'"
        return "the default of a scenario with neither 'timeout' nor 'duration'"

    def parameter_sets(self) -> list[tuple[str, dict[str, Scalar]]]:
        """``(id, values)`` for each combination of ``parametrize``; one empty set if none."""
        if not self.parametrize:
            return [("", {})]
        keys = list(self.parametrize)
        return [
            ("-".join(str(v) for v in combo), dict(zip(keys, combo, strict=True)))
            for combo in itertools.product(*(self.parametrize[k] for k in keys))
        ]


@dataclass
class ResolvedMember:
    """A member with what it runs: its workflow (loaded) or its command."""

    member: Member
    name: str
    line: int
    loaded: LoadedWorkflow | None = None

    @property
    def kind(self) -> str:
        """``browser`` (a workflow) or ``command``."""
        return "command" if self.loaded is None else "browser"

    @property
    def category(self) -> str:
        if self.member.category:
            return self.member.category
        return self.loaded.workflow.category if self.loaded is not None else ""

    @property
    def has_end(self) -> bool:
        """Whether the member ends on its own (else the scenario's duration ends it)."""
        if self.member.stop is not None:
            return True
        if self.loaded is None:
            return self.member.every is None
        workflow = self.loaded.workflow
        return any(s.end for s in workflow.states) or workflow.duration is not None


@dataclass
class LoadedScenario:
    """A scenario read from a file, its members resolved."""

    scenario: Scenario
    path: Path
    line: int
    members: list[ResolvedMember]
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def line_of(self, *loc: Any) -> int:
        """Line of the deepest known part of ``loc`` (else the document's line)."""
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return self.line


def load_scenario(doc: ScenarioDocument) -> LoadedScenario:
    """Validate ``doc`` and resolve its members; a :class:`WorkflowSpecError` names the
    line at fault."""
    path, lines = doc.path, doc.lines
    data = {k: v for k, v in doc.data.items() if not str(k).startswith("x-")}
    data.setdefault("name", doc.name)
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise _explain(path, exc, lines, doc.line) from None
    members: list[ResolvedMember] = []
    seen: dict[str, int] = {}
    for i, member in enumerate(scenario.scenario):
        line = _line(lines, ("scenario", i), doc.line)
        if member.name and not MEMBER_NAME.fullmatch(member.name):
            raise WorkflowSpecError(
                path,
                _line(lines, ("scenario", i, "name"), line),
                f"member name {member.name!r} names the member's folder and flows: use "
                "letters, digits, '.', '_' and '-', starting with a letter or digit",
            )
        resolved = _resolve(path, scenario, member, i, line, lines)
        resolved.name = MEMBER_NAME_OUT.sub("-", resolved.name).strip("-.") or f"member-{i + 1}"
        if resolved.name in seen:
            raise WorkflowSpecError(
                path,
                line,
                f"two members are named {resolved.name!r} (first at line {seen[resolved.name]})"
                ": give each member its own 'name'",
            )
        seen[resolved.name] = line
        members.append(resolved)
    loaded = LoadedScenario(scenario, path, doc.line, members, lines)
    _check(loaded)
    return loaded


def _resolve(
    path: Path,
    scenario: Scenario,
    member: Member,
    index: int,
    line: int,
    lines: dict[tuple[Any, ...], int],
) -> ResolvedMember:
    def fail(message: str, *key: Any) -> WorkflowSpecError:
        return WorkflowSpecError(path, _line(lines, ("scenario", index, *key), line), message)

    if (member.workflow is None) == (member.run is None):
        raise fail(
            "a member is either a workflow ('workflow: PATH::NAME') or a command "
            "('run: ...'): give exactly one of the two"
        )
    if member.stop is not None and member.stop <= member.start:
        raise fail(f"stop ({member.stop:g}) must come after start ({member.start:g})", "stop")
    if member.run is not None:
        if member.repeat is not None and member.every is not None:
            raise fail("give 'repeat' (a number of runs) or 'every' (seconds), not both", "every")
        if not member.run.strip():
            raise fail("'run' is empty: give the command to run", "run")
        if member.vars:
            raise fail("'vars' are for workflow members: use the scenario's 'vars'", "vars")
        try:
            words = shlex.split(member.run)
        except ValueError as exc:
            why = f"'run' is not a valid shell command ({exc}): check its quotes"
            raise fail(why, "run") from None
        default = Path(words[0]).name if words else "command"
        return ResolvedMember(member, member.name or default, line)
    for key in ("repeat", "every"):
        if getattr(member, key) is not None:
            raise fail(f"{key!r} is for command members ('run:'), not workflows", key)
    assert member.workflow is not None
    loaded = _member_workflow(path, member.workflow, fail)
    _check_vars(scenario, member, loaded.workflow, fail)
    return ResolvedMember(member, member.name or loaded.workflow.name, line, loaded)


_Fail = Callable[..., WorkflowSpecError]
"""Makes a member's error: its message and the keys under the member it is at."""


def _member_workflow(path: Path, spec: str, fail: _Fail) -> LoadedWorkflow:
    """The workflow a member names (``PATH::NAME``, ``PATH`` or ``::NAME``)."""
    file, _, name = spec.partition("::")
    target = (path.parent / file).resolve() if file else path
    where = ("workflow",)
    if not target.is_file():
        raise fail(
            f"workflow file {file!r} not found (looked at {target}): the path is relative "
            f"to {path.name}",
            *where,
        )
    workflows: list[LoadedWorkflow] = []
    for doc in load_workflows(target):
        if isinstance(doc, LoadedWorkflow):
            workflows.append(doc)
        elif not name or doc.name == name:
            raise fail(f"workflow {spec!r} cannot be loaded: {doc.error.report()}")
    if name:
        found = [w for w in workflows if w.workflow.name == name]
    elif len(workflows) == 1:
        found = workflows
    else:
        names = ", ".join(w.workflow.name for w in workflows) or "none"
        raise fail(f"{file} holds several workflows ({names}): write {file}::NAME", *where)
    if not found:
        names = ", ".join(w.workflow.name for w in workflows) or "none"
        close = difflib.get_close_matches(name, [w.workflow.name for w in workflows], n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"its workflows: {names}"
        raise fail(f"{file} has no workflow named {name!r}: {hint}", *where)
    return found[0]


def _check_vars(scenario: Scenario, member: Member, workflow: Workflow, fail: _Fail) -> None:
    """A member's workflow gets a value for each parameter, and only vars it knows."""
    where = ("workflow",)
    given = set(member.vars) | set(scenario.vars) | set(scenario.parametrize)
    unset = [k for k in workflow.parametrize if k not in given]
    if unset:
        choices = ", ".join(f"{k}: {workflow.parametrize[k][0]!r}" for k in unset)
        raise fail(
            f"workflow {workflow.name!r} is parametrized by {', '.join(unset)}: choose a "
            f"value under the member's 'vars', e.g. vars: {{{choices}}}",
            *where,
        )
    unknown = [k for k in member.vars if k not in workflow.known_names() or k in RESERVED_NAMES]
    if unknown:
        names = ", ".join(sorted(set(workflow.vars) | set(workflow.parametrize))) or "none"
        raise fail(
            f"workflow {workflow.name!r} has no var or parameter {unknown[0]!r} (it has: {names})",
            "vars",
            unknown[0],
        )


def _check(loaded: LoadedScenario) -> None:
    scenario, path = loaded.scenario, loaded.path
    for key, values in scenario.parametrize.items():
        if not values:
            raise WorkflowSpecError(
                path,
                loaded.line_of("parametrize", key),
                f"parametrize.{key} has no values: list at least one, e.g. '{key}: [a, b]'",
            )
    for key in (*scenario.vars, *scenario.parametrize):
        if key in RESERVED_NAMES:
            raise WorkflowSpecError(
                path,
                loaded.line_of("vars", key),
                f"{key!r} is provided by pytest-netgent: rename it",
            )
    known = set(scenario.vars) | set(scenario.parametrize) | RESERVED_NAMES
    for i, resolved in enumerate(loaded.members):
        member = resolved.member
        texts: list[tuple[tuple[str, ...], str]] = [(("run",), member.run or "")]
        texts += [(("vars", k), str(v)) for k, v in member.vars.items()]
        for loc, text in texts:
            for match in PLACEHOLDER.finditer(text):
                if match.group(1) not in known:
                    raise WorkflowSpecError(
                        path,
                        loaded.line_of("scenario", i, *loc),
                        f"undefined placeholder {{{match.group(1)}}} in member "
                        f"{resolved.name!r}: define it under the scenario's 'vars' or "
                        "'parametrize'",
                    )
        if scenario.duration is None and not resolved.has_end:
            why = (
                "runs again 'every' few seconds"
                if resolved.kind == "command"
                else "ends in a continuous state"
            )
            raise WorkflowSpecError(
                path,
                loaded.line_of("scenario", i),
                f"member {resolved.name!r} {why} and has no 'stop': give the member a "
                "'stop' or the scenario a 'duration' (seconds)",
            )
        for bound in ("duration", "timeout"):
            seconds = getattr(scenario, bound)
            if seconds is not None and member.start >= seconds:
                raise WorkflowSpecError(
                    path,
                    loaded.line_of("scenario", i, "start"),
                    f"member {resolved.name!r} starts at {member.start:g}s, at or after the "
                    f"scenario's {bound} ({seconds:g}s)",
                )


def _line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...], default: int) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return default


def _explain(
    path: Path, exc: ValidationError, lines: dict[tuple[Any, ...], int], doc_line: int
) -> WorkflowSpecError:
    """The first validation error as ``file:line: message; fix``."""
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    line = _line(lines, loc, doc_line)
    if err["type"] == "extra_forbidden":
        key = str(loc[-1])
        model = Member if len(loc) == 3 and loc[0] == "scenario" else Scenario
        valid = list(model.model_fields)
        close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else "valid keys: " + ", ".join(valid)
        where = " in a member" if model is Member else " of a scenario"
        if model is Scenario and key == "states":
            hint = "a document has 'states' (a workflow) or 'scenario' (members), not both"
        return WorkflowSpecError(path, line, f"unknown key {key!r}{where}: {hint}")
    if err["type"] == "missing":
        return WorkflowSpecError(path, line, f"missing required key {loc[-1]!r}: add it")
    if err["type"] == "too_short" and loc == ("scenario",):
        return WorkflowSpecError(path, line, "'scenario' is empty: list at least one member")
    dotted = ".".join(str(p) for p in loc)
    got = err.get("input")
    got_text = f", got {got!r}" if not isinstance(got, (dict, list)) else ""
    msg = err["msg"].removeprefix("Value error, ")
    return WorkflowSpecError(path, line, f"{dotted}: {msg}{got_text}")
