"""The compiled automaton: states with concrete checks and browser actions.

Field names follow NetGent's state repository (``name``, ``checks``, ``actions``,
``end_state``, check and action ``type``/``params``) so that its files load as they are.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

FORMAT = 1
"""Version of the cache document written by this package."""

BY_VALUES = (
    "css selector",
    "xpath",
    "id",
    "name",
    "class name",
    "tag name",
    "link text",
    "partial link text",
)

# Required parameters of each check and action; anything else is optional and documented
# in docs of the engine (browser/actions.py, browser/checks.js).
_CHECK_REQUIRED: dict[str, tuple[str, ...]] = {
    "url": ("url",),
    "element": ("by", "selector"),
    "text": ("text",),
    "title": ("title",),
    "script": ("script",),
}
_ACTION_REQUIRED: dict[str, tuple[str, ...]] = {
    "navigate": ("url",),
    "click": (),
    "type": ("text",),
    "press_key": ("key",),
    "scroll": (),
    "scroll_to": ("by", "selector"),
    "hover": ("by", "selector"),
    "select": ("by", "selector"),
    "wait": ("seconds",),
    "switch_tab": (),
    "go_back": (),
    "start_video_sampling": (),
    "stop_video_sampling": (),
}


def _check_by(kind: str, params: dict[str, Any]) -> None:
    by = params.get("by")
    if by is not None and by not in BY_VALUES:
        raise ValueError(f"{kind}: unknown 'by' {by!r}; use one of {', '.join(BY_VALUES)}")


class Check(BaseModel):
    """One condition of a state's trigger, evaluated in the page."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["url", "element", "text", "title", "script"]
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _required(self) -> Check:
        missing = [p for p in _CHECK_REQUIRED[self.type] if p not in self.params]
        if missing:
            raise ValueError(f"{self.type} check needs params {missing}")
        _check_by(f"{self.type} check", self.params)
        return self

    def describe(self) -> str:
        """A one-line description for reports, with placeholders as written."""
        p = self.params
        if self.type == "url":
            return f"url {p.get('match', 'exact')} {p['url']!r}"
        if self.type == "element":
            vis = "" if p.get("visible", True) else " (present, may be hidden)"
            return f"element {p['by']}={p['selector']!r}{vis}"
        if self.type == "text":
            return f"text contains {p['text']!r}"
        if self.type == "title":
            return f"title {p.get('match', 'contains')} {p['title']!r}"
        return f"script {p['script']!r}"


class Action(BaseModel):
    """One browser action of a state, from the action registry."""

    model_config = ConfigDict(extra="forbid")

    type: Literal[
        "navigate",
        "click",
        "type",
        "press_key",
        "scroll",
        "scroll_to",
        "hover",
        "select",
        "wait",
        "switch_tab",
        "go_back",
        "start_video_sampling",
        "stop_video_sampling",
    ]
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _required(self) -> Action:
        missing = [p for p in _ACTION_REQUIRED[self.type] if p not in self.params]
        if missing:
            raise ValueError(f"{self.type} action needs params {missing}")
        if (
            self.type == "click"
            and "selector" not in self.params
            and not ("x" in self.params and "y" in self.params)
        ):
            raise ValueError("click action needs 'by' and 'selector' (or 'x' and 'y')")
        if "selector" in self.params and "by" not in self.params:
            raise ValueError(f"{self.type} action needs 'by' with 'selector'")
        _check_by(f"{self.type} action", self.params)
        return self

    def describe(self) -> str:
        """A one-line description for reports and timelines, placeholders unresolved."""
        p = self.params
        if "selector" in p:
            target = f" {p.get('by', 'css selector')}={p['selector']!r}"
        elif "x" in p:
            target = f" at ({p['x']}, {p['y']})"
        else:
            target = ""
        if "index" in p:
            target += f"[{p['index']}]"
        rest = {k: v for k, v in p.items() if k not in ("by", "selector", "x", "y", "index")}
        args = " " + " ".join(f"{k}={v!r}" for k, v in rest.items()) if rest else ""
        return f"{self.type}{target}{args}"


class State(BaseModel):
    """A compiled state: checks that all hold when it applies, actions it performs."""

    model_config = ConfigDict(extra="ignore")

    name: str
    description: str = ""
    checks: list[Check] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)
    end_state: str = ""
    repeat: int = Field(0, ge=0)
    prompt_hash: str = ""

    @model_validator(mode="before")
    @classmethod
    def _from_netgent(cls, data: Any) -> Any:
        """Accept NetGent's repository fields: ``config.continuous`` and ``terminate``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        config = data.pop("config", None)
        if isinstance(config, dict) and config.get("continuous") and "repeat" not in data:
            data["repeat"] = CONTINUOUS
        actions = data.get("actions")
        if isinstance(actions, list):
            data["actions"] = [
                a for a in actions if not (isinstance(a, dict) and a.get("type") == "terminate")
            ]
        if data.get("end_state") is None:
            data["end_state"] = ""
        return data


CONTINUOUS = 1_000_000
"""``repeat`` of a NetGent ``continuous`` state: it may fire on the same page indefinitely
(bounded by the workflow's ``max_steps`` and ``timeout``)."""


class Synthesis(BaseModel):
    """How a cache document was made."""

    model_config = ConfigDict(extra="allow")

    model: str = ""
    llm_calls: int = 0
    at: str = ""


class Automaton(BaseModel):
    """The cache document of one workflow (``__netgent__/<stem>/<workflow>.json``)."""

    model_config = ConfigDict(extra="ignore")

    format: int = FORMAT
    workflow: str = ""
    prompt_hash: str = ""
    states: list[State] = Field(default_factory=list)
    synthesis: Synthesis | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_repository(cls, data: Any) -> Any:
        """A bare list is a NetGent state repository: take it as the states."""
        if isinstance(data, list):
            return {"states": data}
        return data

    def state(self, name: str) -> State | None:
        """The cached state named ``name``, if any."""
        return next((s for s in self.states if s.name == name), None)

    @property
    def trusted(self) -> bool:
        """Files without ``prompt_hash`` (imported, hand-written) are used as they are."""
        return not self.prompt_hash

    def to_json(self) -> str:
        """The document as written to disk: stable key order, two-space indent."""
        data = self.model_dump(mode="json", exclude_none=True)
        for state in data["states"]:
            if not state.get("prompt_hash"):
                state.pop("prompt_hash", None)
            if not state.get("description"):
                state.pop("description", None)
            if not state.get("repeat"):
                state.pop("repeat", None)
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def parse_automaton(data: Any) -> Automaton:
    """Validate loaded JSON as a cache document or NetGent repository.

    Raises :class:`ValueError` with a one-line reason naming the state and field at fault.
    """
    try:
        return Automaton.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        where = ""
        if len(loc) >= 2 and loc[0] == "states" and isinstance(loc[1], int):
            states = data["states"] if isinstance(data, dict) else data
            try:
                where = f"state {states[loc[1]].get('name', loc[1])!r}: "
            except (AttributeError, IndexError, KeyError, TypeError):
                where = f"state {loc[1]}: "
            loc = loc[2:]
        field = ".".join(str(p) for p in loc)
        msg = err["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}{field}: {msg}" if field else f"{where}{msg}") from None
