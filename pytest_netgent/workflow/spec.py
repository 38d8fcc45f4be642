"""Workflow files: the pydantic models of ``*.netgent.yaml`` and their line-aware loader.

One YAML document is one :class:`Workflow`. The loader keeps the line of every key and
value, so that each validation error names ``file:line`` and a one-line fix.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import WorkflowSpecError
from .yamlsource import LOADER, MAX_BYTES, MAX_DEPTH, Builder, too_deep

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``{name}`` placeholder for a var, a parameter, a secret or ``base_url``."""

RESERVED_NAMES = frozenset({"base_url"})
"""Placeholder names the plugin provides itself."""

Scalar = str | int | float | bool


class StateSpec(BaseModel):
    """One natural-language state: when it applies (triggers) and what to do (actions)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Unique name of the state in its workflow.")
    description: str = Field("", description="What the state is, for people and the LLM.")
    triggers: list[str] = Field(
        default_factory=list,
        description="Conditions that all hold when this state applies, in plain words.",
    )
    actions: list[str] = Field(
        default_factory=list, description="What to do in this state, in order, in plain words."
    )
    end: str = Field(
        "",
        description="If set, reaching this state ends the workflow with a pass; the text is "
        "the reason recorded in the timeline.",
    )
    repeat: int = Field(
        0,
        ge=0,
        description="How many more times this state may fire in a row on an unchanged page "
        "(0: it fires once until the page changes).",
    )
    continuous: bool = Field(
        False,
        description="The state may fire again and again on the same page (NetGent's "
        "config.continuous); with the workflow's 'duration', being in it when the duration "
        "is reached passes the workflow.",
    )

    @property
    def engine_repeat(self) -> int:
        """``repeat`` as the engine reads it (``continuous``: without bound)."""
        from .automaton import CONTINUOUS

        return CONTINUOUS if self.continuous else self.repeat

    @field_validator("triggers", "actions", mode="before")
    @classmethod
    def _one_string_is_a_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def prompt_hash(self) -> str:
        """Hash of what the synthesiser reads: name, description, triggers and actions.

        ``end`` and ``repeat`` steer the engine, not synthesis, so editing them does not
        make the cached state stale.
        """
        payload = json.dumps(
            {
                "name": self.name,
                "description": self.description,
                "triggers": self.triggers,
                "actions": self.actions,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return "sha256:" + hashlib.sha256(payload.encode()).hexdigest()


class Workflow(BaseModel):
    """One workflow: a named list of states with the settings of its run."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("", description="Test item name; default: the file's stem.")
    description: str = Field("", description="What the workflow does.")
    category: str = Field(
        "",
        description="Traffic label in the capture manifest, e.g. video_on_demand, live_video, "
        "video_call, social_media, scraping.",
    )
    group: str = Field(
        "", description="Items of one group never run at the same time (xdist_group)."
    )
    metadata: dict[str, Scalar] = Field(
        default_factory=dict,
        description="Facts about the workflow kept with each of its items: in the report's "
        "properties, item.json and the dataset manifest (e.g. the NetGent registry's id, "
        "name and version of a converted workflow).",
    )
    start_url: str = Field(
        "", description="Page opened before the first state; may use {base_url} and vars."
    )
    vars: dict[str, Scalar | None] = Field(
        default_factory=dict,
        description="Values usable as {name} in prompts and start_url; null: a value still "
        "to be given (the items fail naming it, as a converted NetGent parameter).",
    )
    parametrize: dict[str, list[Scalar]] = Field(
        default_factory=dict,
        description="Each key lists values; every combination is its own test item.",
    )
    secrets: dict[str, str] = Field(
        default_factory=dict,
        description="Secret name -> environment variable holding its value. Typed by the "
        "executor, never stored or shown.",
    )
    marks: list[str | dict[str, Any]] = Field(
        default_factory=list,
        description="pytest marks: a name, or {name: reason} / {name: {kwargs}} "
        "(e.g. {skip: 'site down'}, {xfail: {reason: flaky, strict: false}}).",
    )
    timeout: float = Field(300.0, gt=0, description="Seconds for the whole workflow.")
    state_timeout: float | None = Field(
        None,
        gt=0,
        description="Seconds to wait for a state to match; default: --netgent-state-timeout.",
    )
    max_steps: int = Field(200, gt=0, description="Most states the workflow may run.")
    duration: float | None = Field(
        None,
        gt=0,
        description="Seconds the workflow runs when it ends in a continuous state rather "
        "than an end state: being in a continuous state then passes it.",
    )
    window: str | None = Field(
        None,
        description="Browser window size WIDTHxHEIGHT (e.g. 1280x900) the states hold at; "
        "recorded in the cache file; --netgent-window-size overrides it.",
    )
    network: str | None = Field(
        None,
        description="Network condition on the wire for this workflow's items: a profile "
        "(edge, 3g-slow, 3g, 4g, lte, dsl, cable, fios, satellite, lossy-wifi), key=value "
        "pairs of rate, up, delay, jitter, loss, queue (rate=2mbit,delay=40ms), or a "
        "placeholder ('{net}'); over --netgent-network.",
    )
    allowed_hosts: list[str] | None = Field(
        None,
        description="Hosts the browser may visit; default: start_url's host. '*' allows all.",
    )
    allow_multiple_states: bool = Field(
        True,
        description="If false, two states matching the same page is an error instead of "
        "the first declared one winning.",
    )
    states: list[StateSpec] = Field(min_length=1, description="The states, in priority order.")

    def state(self, name: str) -> StateSpec | None:
        """The state named ``name``, if any."""
        return next((s for s in self.states if s.name == name), None)

    def known_names(self) -> set[str]:
        """Every placeholder name this workflow may use."""
        return set(self.vars) | set(self.parametrize) | set(self.secrets) | RESERVED_NAMES

    @field_validator("window")
    @classmethod
    def _window(cls, value: str | None) -> str | None:
        from .window import parse_window, window_text

        return None if value is None else window_text(parse_window(value))

    @field_validator("network")
    @classmethod
    def _network(cls, value: str | None) -> str | None:
        if value is None or "{" in value or "%" in value:
            return value  # a placeholder: checked once its item's values fill it
        from ..network.conditions import parse

        parse(value, "")
        return value

    def prompt_hash(self) -> str:
        """Hash over every state's prompt hash, in declared order."""
        joined = "\n".join(s.prompt_hash() for s in self.states)
        return "sha256:" + hashlib.sha256(joined.encode()).hexdigest()

    def parameter_sets(self) -> list[tuple[str, dict[str, Scalar]]]:
        """``(id, values)`` for each combination of ``parametrize``; one empty set if none."""
        if not self.parametrize:
            return [("", {})]
        keys = list(self.parametrize)
        out = []
        for combo in itertools.product(*(self.parametrize[k] for k in keys)):
            values = dict(zip(keys, combo, strict=True))
            out.append(("-".join(_id_part(v) for v in combo), values))
        return out


def _id_part(value: Scalar) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    text = re.sub(r"\s+", "_", text.strip())
    return text.encode("ascii", "backslashreplace").decode() or "empty"


def workflow_schema() -> dict[str, Any]:
    """JSON Schema of one workflow document, for editors that validate YAML."""
    schema = Workflow.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pytest-netgent workflow (*.netgent.yaml)"
    return schema


# --------------------------------------------------------------------------- loading


@dataclass
class LoadedWorkflow:
    """A workflow read from a file, with where it came from."""

    workflow: Workflow
    path: Path
    line: int
    index: int
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def line_of(self, *loc: Any) -> int:
        """Line of the deepest known part of ``loc`` (falls back to the document's line)."""
        return _line_of(self.lines, loc, self.line)


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


def _line_of(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...], default: int) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return default


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
    problem = _semantic_errors(loaded, builder)
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
        model = StateSpec if len(loc) == 3 and loc[0] == "states" else Workflow
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


def _semantic_errors(loaded: LoadedWorkflow, builder: Builder) -> WorkflowSpecError | None:
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
