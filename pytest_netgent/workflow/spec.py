"""Workflow files: the line-aware loader of ``*.netgent.yaml`` (the models it fills are
:mod:`.model`'s, imported from here too; the checks beyond the schema :mod:`.semantics`').

One YAML document is one :class:`Workflow`. The loader keeps the line of every key and
value, so that each validation error names ``file:line`` and a one-line fix.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ValidationError,
)

from ..errors import WorkflowSpecError
from .model import PLACEHOLDER as PLACEHOLDER  # the models live there; imported from here
from .model import RESERVED_NAMES as RESERVED_NAMES
from .model import LoadedWorkflow as LoadedWorkflow
from .model import Scalar as Scalar
from .model import StateSpec as StateSpec
from .model import Workflow as Workflow
from .model import line_of as _line_of
from .model import workflow_schema as workflow_schema
from .semantics import semantic_errors
from .traffic import TrafficExpectation
from .yamlsource import LOADER, MAX_BYTES, MAX_DEPTH, Builder, too_deep

# --------------------------------------------------------------------------- loading


@dataclass
class BadDocument:
    """A document that could not be turned into a workflow, with its error."""

    error: WorkflowSpecError
    path: Path
    line: int
    index: int
    name: str


@dataclass
class ScenarioDocument:
    """A document with a top-level ``scenario:`` list, read but not yet validated
    (:func:`pytest_netgent.scenario.spec.load_scenario` does that)."""

    data: dict[str, Any]
    path: Path
    line: int
    index: int
    name: str
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def line_of(self, *loc: Any) -> int:
        """Line of the deepest known part of ``loc`` (falls back to the document's line)."""
        return _line_of(self.lines, loc, self.line)


def load_workflows(path: Path) -> Iterator[LoadedWorkflow | BadDocument]:
    """Read every YAML document of ``path``; yield a workflow or the error of each
    (scenario documents are left out: see :func:`load_documents`)."""
    for doc in load_documents(path):
        if not isinstance(doc, ScenarioDocument):
            yield doc


def load_documents(path: Path) -> Iterator[LoadedWorkflow | ScenarioDocument | BadDocument]:
    """Read every YAML document of ``path``; yield a workflow, a scenario or the error
    of each.

    A YAML syntax error makes the whole file one :class:`BadDocument`; otherwise each
    document is validated on its own, so one bad workflow leaves the others usable.
    """
    nodes = _compose(path)
    if isinstance(nodes, BadDocument):
        yield nodes
        return
    documents = [n for n in nodes if n is not None]
    seen: dict[str, int] = {}
    for index, node in enumerate(documents):
        result = _load_document(path, node, index, len(documents))
        if isinstance(result, BadDocument):
            yield result
            continue
        kind = "scenario" if isinstance(result, ScenarioDocument) else "workflow"
        name = result.name if isinstance(result, ScenarioDocument) else result.workflow.name
        if name in seen:
            yield BadDocument(
                WorkflowSpecError(
                    path,
                    result.line_of("name"),
                    f"duplicate {kind} name {name!r} (first at line {seen[name]}): "
                    f"give each {kind} in the file its own 'name'",
                ),
                path,
                node.start_mark.line + 1,
                index,
                f"{name}#{index + 1}",
            )
            continue
        seen[name] = result.line_of("name")
        yield result


def _whole_file(path: Path, message: str, line: int | None = None) -> BadDocument:
    """The error of a file none of whose documents can be read."""
    return BadDocument(WorkflowSpecError(path, line, message), path, line or 1, 0, path.stem)


def _compose(path: Path) -> list[yaml.Node | None] | BadDocument:
    """The YAML documents of ``path`` as nodes (their lines kept), or why there are none."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return _whole_file(path, f"cannot read the file: {exc}")
    if len(text.encode()) > MAX_BYTES:
        return _whole_file(path, f"the file is larger than {MAX_BYTES // 1000} kB: split it")
    if (deep := too_deep(text)) is not None:
        return _whole_file(path, f"lists and maps nest deeper than {MAX_DEPTH} levels here", deep)
    try:
        return list(yaml.compose_all(text, Loader=LOADER))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        fix = "fix the YAML at this line"
        bad_line = text.splitlines()[line - 1] if line and line <= len(text.splitlines()) else ""
        if "flow" in str(exc.context) and PLACEHOLDER.search(bad_line):
            fix = (
                "text with {placeholders} inside [ ] must be quoted, e.g. "
                "['Type {query} into the search box'], or written as '- item' lines"
            )
        return _whole_file(path, f"YAML syntax error: {problem}{context}; {fix}", line)
    except (yaml.YAMLError, RecursionError) as exc:
        return _whole_file(path, f"YAML error: {exc}")


def _load_document(
    path: Path, node: yaml.Node, index: int, count: int
) -> LoadedWorkflow | ScenarioDocument | BadDocument:
    line = node.start_mark.line + 1
    fallback_name = path.name.split(".netgent.")[0] if count == 1 else f"document-{index + 1}"
    builder = Builder(path)
    try:
        data = builder.build(node, ())
    except WorkflowSpecError as exc:
        return BadDocument(exc, path, line, index, fallback_name)
    if not isinstance(data, dict):
        return BadDocument(
            WorkflowSpecError(
                path,
                line,
                "a workflow document must be a mapping with 'states' (and 'name', "
                f"'start_url', ...), got {type(data).__name__}",
            ),
            path,
            line,
            index,
            fallback_name,
        )
    doc_name = data.get("name") if isinstance(data.get("name"), str) else None
    name = doc_name or fallback_name
    if not data.get("name"):
        if count > 1:
            return BadDocument(
                WorkflowSpecError(
                    path, line, "this file holds several workflows: give each one a 'name'"
                ),
                path,
                line,
                index,
                name,
            )
        data["name"] = fallback_name
    # x- keys hold what anchors and merge keys reuse (as in docker-compose files)
    data = {k: v for k, v in data.items() if not str(k).startswith("x-")}
    if "scenario" in data:
        return ScenarioDocument(data, path, line, index, name, builder.lines)
    try:
        workflow = Workflow.model_validate(data)
    except ValidationError as exc:
        return BadDocument(_explain(path, exc, builder, data, line), path, line, index, name)
    loaded = LoadedWorkflow(workflow, path, line, index, builder.lines)
    problem = semantic_errors(loaded)
    if problem is not None:
        return BadDocument(problem, path, line, index, name)
    return loaded


def _explain(
    path: Path,
    exc: ValidationError,
    builder: Builder,
    data: dict[str, Any],
    doc_line: int,
) -> WorkflowSpecError:
    """The first validation error as ``file:line: message; fix``."""
    err = exc.errors()[0]
    loc = tuple(err["loc"])
    kind = err["type"]
    where = _where(loc, data)
    if kind == "extra_forbidden":
        key = str(loc[-1])
        line = builder.key_lines.get(loc) or _line_of(builder.lines, loc, doc_line)
        models: dict[str, type[BaseModel]] = {
            "states": StateSpec,
            "expect_traffic": TrafficExpectation,
        }
        model = models.get(str(loc[0]), Workflow) if len(loc) == 3 else Workflow
        if model is TrafficExpectation:
            where = f" in expect_traffic[{loc[1]}]"
        valid = list(model.model_fields)
        close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else "valid keys: " + ", ".join(valid)
        return WorkflowSpecError(path, line, f"unknown key {key!r}{where}: {hint}")
    if kind == "missing":
        line = _line_of(builder.lines, loc[:-1], doc_line)
        return WorkflowSpecError(path, line, f"missing required key {loc[-1]!r}{where}: add it")
    line = _line_of(builder.lines, loc, doc_line)
    dotted = ".".join(str(p) for p in loc)
    got = err.get("input")
    got_text = f", got {got!r}" if not isinstance(got, (dict, list)) else ""
    if loc and loc[0] == "parametrize":
        return WorkflowSpecError(
            path,
            line,
            f"{dotted}: {err['msg']}{got_text}; parametrize maps each name to a list of "
            "values, e.g. 'query: [networking, pytest]'",
        )
    if kind == "too_short" and loc == ("states",):
        return WorkflowSpecError(path, line, "'states' is empty: list at least one state")
    if kind == "string_type" and isinstance(got, dict) and len(got) == 1:
        # "- The row "cities: 1" is shown": YAML read the ': ' as a key and its value
        key, value = next(iter(got.items()))
        return WorkflowSpecError(
            path,
            line,
            f"{dotted}{where}: this line holds ': ' (in {f'{key}: {value}'!r}), which YAML "
            "reads as a key and a value, not text: put the whole line in quotes, e.g. "
            f"- '{key}: {value}'",
        )
    msg = err["msg"].removeprefix("Value error, ")
    return WorkflowSpecError(path, line, f"{dotted}{where}: {msg}{got_text}")


def _where(loc: tuple[Any, ...], data: dict[str, Any]) -> str:
    if len(loc) >= 2 and loc[0] == "states" and isinstance(loc[1], int):
        states = data.get("states")
        if isinstance(states, list) and loc[1] < len(states):
            state = states[loc[1]]
            if isinstance(state, dict) and isinstance(state.get("name"), str):
                return f" in state {state['name']!r}"
        return f" in state {loc[1] + 1}"
    return ""
