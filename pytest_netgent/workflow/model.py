"""The pydantic models of ``*.netgent.yaml``: a :class:`Workflow` of :class:`StateSpec`
states with the settings of its run, its ``expect_traffic``, and its JSON Schema for
editors. :mod:`.spec` loads them from files, with the line of every key.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from .traffic import TrafficExpectation

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
    expect_traffic: list[TrafficExpectation] = Field(
        default_factory=list,
        description="What the item's captured packets must show for it to pass (with "
        "--netgent-capture=pcap): at least down/up bytes, flows or RTP streams each way, "
        "while a state and with a host, e.g. [{state: Watching, down: 1 MB}].",
    )

    @field_validator("expect_traffic")
    @classmethod
    def _traffic_states(
        cls, value: list[TrafficExpectation], info: ValidationInfo
    ) -> list[TrafficExpectation]:
        names = [s.name for s in info.data.get("states") or []]
        for expectation in value:
            if names and expectation.state is not None and expectation.state not in names:
                close = difflib.get_close_matches(expectation.state, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(
                    f"state {expectation.state!r} is not a state of this workflow{hint}; "
                    f"its states: {', '.join(names)}"
                )
        return value

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
        return line_of(self.lines, loc, self.line)


def line_of(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...], default: int) -> int:
    """The line of the deepest part of ``loc`` that ``lines`` knows, else ``default``."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return default
