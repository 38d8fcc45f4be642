"""The compiled automaton: states with concrete checks and browser actions.

Field names follow NetGent's state repository (``name``, ``checks``, ``actions``,
``end_state``, check and action ``type``/``params``) so that its files load as they are.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .netgent_formats import legacy_action, legacy_check, repository_states
from .vocabulary import (
    ACTION_PARAMS,
    ACTION_TYPES,
    CHECK_PARAMS,
    CHECK_TYPED,
    CHECK_TYPES,
    CSS_ONLY,
    FORMAT_2_ACTIONS,
    FORMAT_2_CHECKS,
    FORMAT_2_PARAMS,
    LOCATED,
    SELECTOR_CHAIN,
    ActionText,
    ActionType,
    check_schema,
    typed_params,
    validate_params,
)

__all__ = [
    "ACTION_PARAMS",
    "ACTION_TYPES",
    "CSS_ONLY",
    "Action",
    "ActionType",
    "Automaton",
    "Check",
    "State",
    "Synthesis",
    "parse_automaton",
]

FORMAT = 2
"""The newest version of the cache document this package reads and writes. A file is
written at the lowest version that holds it (:meth:`Automaton.needed_format`): a cache
without this version's check types stays format 1, readable by earlier releases."""


class Check(BaseModel):
    """One condition of a state's trigger, evaluated in the page."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=check_schema)

    type: str = Field(json_schema_extra={"enum": list(CHECK_TYPES)})
    params: dict[str, Any] = Field(default_factory=dict, description=SELECTOR_CHAIN)

    @model_validator(mode="after")
    def _required(self) -> Check:
        validate_params("check", self.type, self.params, CHECK_PARAMS)
        typed_params("check", self.type, self.params, CHECK_TYPED[self.type])
        return self

    @property
    def presence_only(self) -> bool:
        """Whether the check asks only for presence (``visible: false``, NetGent's
        ``check_visibility: false``), not visibility."""
        return self.params.get("visible") is False or self.params.get("check_visibility") is False

    def describe(self) -> str:
        """A one-line description for reports, with placeholders as written."""
        said = self._described()
        return f"not: {said}" if self.params.get("negate") is True else said

    def _described(self) -> str:
        p = self.params
        if self.type == "role":
            return _role_described(p)
        if self.type == "media":
            parts = [p.get("selector", "video or audio"), p.get("state", "")]
            if "min_height" in p:
                parts.append(f"at least {p['min_height']} px high")
            if "advanced" in p:
                parts.append(f"advancing {p['advanced']} s")
            return "media " + " ".join(str(x) for x in parts if x)
        if self.type == "url":
            return f"url {p.get('match', 'exact')} {p['url']!r}"
        if self.type == "element":
            vis = ""
            if self.presence_only:
                vis = " (present, may be hidden)"
            elif p.get("check_visibility") is True:
                vis = " (visible in the viewport)"
            return f"element {p['by']}={p['selector']!r}{vis}{_counted(p)}" + (
                f" with text {p['text']!r}" if "text" in p else ""
            )
        if self.type == "text":
            return f"text contains {p['text']!r}" + (" in any case" if p.get("ignore_case") else "")
        if self.type == "title":
            return f"title {p.get('match', 'contains')} {p['title']!r}"
        if self.type == "always_true":
            return "always true"
        return f"script {p['script']!r}"


def _counted(p: dict[str, Any]) -> str:
    if "count" in p:
        return f" (exactly {p['count']})"
    return f" (at least {p['at_least']})" if "at_least" in p else ""


def _role_described(p: dict[str, Any]) -> str:
    """``role button 'Apply' (disabled)``, as a role check reads."""
    out = f"role {p['role']}"
    if "name" in p:
        how = p.get("match", "exact")
        out += f" {p['name']!r}" if how == "exact" else f" named {how} {p['name']!r}"
    states = p.get("state")
    if states:
        out += f" ({', '.join([states] if isinstance(states, str) else states)})"
    if "value" in p:
        out += f" value {p.get('value_match', 'exact')} {p['value']!r}"
    if "text" in p:
        out += f" with text {p['text']!r}"
    if "within" in p:
        out += f" within {p['within']!r}"
    return out + _counted(p)


def check_format(check: Check) -> int:
    """The cache format a file holding ``check`` needs (1: any reader of the package)."""
    p = check.params
    if check.type in FORMAT_2_CHECKS or (FORMAT_2_PARAMS - {"text"}) & set(p):
        return 2
    return 2 if check.type == "element" and "text" in p else 1


class Action(BaseModel):
    """One browser action of a state, from the action registry."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(json_schema_extra={"enum": list(ACTION_TYPES)})
    params: dict[str, Any] = Field(default_factory=dict, description=SELECTOR_CHAIN)

    @model_validator(mode="after")
    def _required(self) -> Action:
        validate_params("action", self.type, self.params, ACTION_PARAMS)
        typed_params("action", self.type, self.params, ActionText)
        p = self.params
        named = "selector" in p or "role" in p
        if self.type in LOCATED and not named and not ("x" in p and "y" in p):
            raise ValueError(
                f"{self.type} action needs 'role' and 'name', or 'by' and 'selector' (or 'x' "
                "and 'y')"
            )
        if self.type in ("select", "set_value") and not named:
            raise ValueError(f"{self.type} action needs 'role' and 'name', or 'by' and 'selector'")
        if self.by_role is False and ("within" in p or "name" in p):
            raise ValueError(f"{self.type} action: 'name' and 'within' go with a 'role'")
        if "selector" in p and "by" not in p and self.type not in CSS_ONLY:
            raise ValueError(f"{self.type} action needs 'by' with 'selector'")
        return self

    @property
    def by_role(self) -> bool | None:
        """Whether the action names its element by role (None: it names none that way)."""
        if "role" not in ACTION_PARAMS[self.type][1]:
            return None
        return "role" in self.params

    def describe(self) -> str:
        """A one-line description for reports and timelines, placeholders unresolved."""
        p = self.params
        target = ""
        if self.by_role:
            target = f" {p['role']}" + (f" {p['name']!r}" if "name" in p else "")
            target += f" within {p['within']!r}" if "within" in p else ""
        if "selector" in p:
            target += " or" if target else ""
            target += f" {p.get('by', 'css selector')}={p['selector']!r}"
        elif "x" in p and not target:
            target = f" at ({p['x']}, {p['y']})"
        if "index" in p and self.type != "select":
            target += f"[{p['index']}]"
        skip: tuple[str, ...] = ("by", "selector", "x", "y", "alternatives")
        skip += ("role", "name", "within") if self.by_role is not None else ()
        skip += ("index",) if self.type != "select" else ()
        rest = {k: v for k, v in p.items() if k not in skip}
        args = " " + " ".join(f"{k}={v!r}" for k, v in rest.items()) if rest else ""
        return f"{self.type}{target}{args}"


CONTINUOUS = 1_000_000
"""``repeat`` of a NetGent ``continuous`` state: it may fire on the same page indefinitely
(bounded by the workflow's ``duration``, ``max_steps`` and ``timeout``)."""


class State(BaseModel):
    """A compiled state: checks that all hold when it applies, actions it performs.

    NetGent's own fields are kept as they are, so a repository round-trips unchanged:
    ``config`` (``continuous: true`` means the state may fire again and again on the same
    page: ``repeat`` without bound; ``config.repeat`` a bounded one), ``executed`` (the
    states synthesis made under it), and ``terminate`` actions (which do nothing here: a
    state's actions end with its list).
    """

    model_config = ConfigDict(extra="allow")  # NetGent's other keys (save_content), kept

    name: str
    description: str = ""
    checks: list[Check] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)
    end_state: str = ""
    repeat: int = Field(0, ge=0)
    prompt_hash: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    """NetGent's state config (``continuous``), kept for the round trip."""
    executed: list[Any] = Field(default_factory=list)
    """NetGent's record of states synthesised under this one, kept for the round trip."""

    @model_validator(mode="before")
    @classmethod
    def _from_netgent(cls, data: Any) -> Any:
        """Read NetGent's ``config.continuous`` (and ``config.repeat``) as ``repeat``."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        config = data.get("config")
        if config is None:
            data.pop("config", None)
        elif isinstance(config, dict) and "repeat" not in data:
            if config.get("continuous"):
                data["repeat"] = CONTINUOUS
            elif isinstance(config.get("repeat"), int):
                data["repeat"] = config["repeat"]
        if data.get("end_state") is None:
            data["end_state"] = ""
        if data.get("executed") is None:
            data.pop("executed", None)
        if isinstance(data.get("checks"), list):
            data["checks"] = [legacy_check(c) for c in data["checks"]]
        if isinstance(data.get("actions"), list):
            data["actions"] = [legacy_action(a) for a in data["actions"]]
        return data

    @property
    def continuous(self) -> bool:
        """Whether the state may fire on the same page without bound (NetGent's
        ``continuous``)."""
        return self.repeat >= CONTINUOUS

    def to_netgent(self) -> dict[str, Any]:
        """The state in NetGent's repository format and field names (``name``,
        ``description``, ``checks``, ``actions``, ``end_state``, ``executed``, ``config``),
        which NetGent's own loader accepts."""
        config = dict(self.config)
        if self.continuous:
            config["continuous"] = True
        elif self.repeat:
            config["repeat"] = self.repeat
        checks = []
        for check in self.checks:
            params = dict(check.params)
            if params.pop("visible", True) is False:
                params.setdefault("check_visibility", False)
            checks.append({"type": check.type, "params": params})
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "checks": checks,
            "actions": [a.model_dump(mode="json") for a in self.actions],
            "end_state": self.end_state,
            "executed": list(self.executed),
        }
        if config:
            out["config"] = config
        out.update((k, v) for k, v in (self.model_extra or {}).items() if k not in out)
        return out


class Synthesis(BaseModel):
    """How a cache document was made."""

    model_config = ConfigDict(extra="allow")

    model: str = ""
    llm_calls: int = 0
    at: str = ""


class Automaton(BaseModel):
    """The cache document of one workflow (``__netgent__/<stem>/<workflow>.json``)."""

    model_config = ConfigDict(extra="ignore")

    format: int = 1
    workflow: str = ""
    prompt_hash: str = ""
    window: str = ""
    """The browser window (``1280x900``) the states were recorded at; replay uses it
    unless the workflow or ``--netgent-window-size`` says otherwise."""
    states: list[State] = Field(default_factory=list)
    synthesis: Synthesis | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_repository(cls, data: Any) -> Any:
        """Any of NetGent's file shapes (:mod:`.netgent_formats`): take its states."""
        return repository_states(data)

    @model_validator(mode="after")
    def _readable(self) -> Automaton:
        if not isinstance(self.format, int) or not 1 <= self.format <= FORMAT:
            raise ValueError(
                f"format: {self.format!r} is written by a newer pytest-netgent (this one reads "
                f"formats 1 to {FORMAT}): upgrade pytest-netgent, or record the workflow again"
            )
        return self

    def needed_format(self) -> int:
        """The lowest format that holds these states (see :data:`FORMAT`)."""
        checks = (check_format(c) for s in self.states for c in s.checks)
        actions = (
            2 if a.type in FORMAT_2_ACTIONS or a.by_role else 1
            for s in self.states
            for a in s.actions
        )
        return max((*checks, *actions), default=1)

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
        data["format"] = self.needed_format()
        if not data.get("window"):
            data.pop("window", None)
        for state in data["states"]:
            for key in ("prompt_hash", "description", "repeat", "config", "executed"):
                if not state.get(key):
                    state.pop(key, None)
            if state.get("repeat") == CONTINUOUS:  # written as NetGent writes it
                state.pop("repeat")
                state["config"] = {**state.get("config", {}), "continuous": True}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def parse_automaton(data: Any) -> Automaton:
    """Validate loaded JSON as a cache document or NetGent repository.

    Raises :class:`ValueError` with a one-line reason naming the state, the check or
    action (numbered from 1, with its type) and the field at fault.
    """
    try:
        return Automaton.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        where = ""
        if len(loc) >= 2 and loc[0] == "states" and isinstance(loc[1], int):
            states = data["states"] if isinstance(data, dict) else data
            raw: Any = None
            try:
                raw = states[loc[1]]
                where = f"state {raw.get('name', loc[1])!r}: "
            except (AttributeError, IndexError, KeyError, TypeError):
                where = f"state {loc[1]}: "
            loc = loc[2:]
            if len(loc) >= 2 and loc[0] in ("actions", "checks") and isinstance(loc[1], int):
                where += f"{loc[0][:-1]} {loc[1] + 1}"
                with contextlib.suppress(KeyError, IndexError, TypeError):
                    where += f" ({raw[loc[0]][loc[1]]['type']})"
                where += ": "
                loc = loc[2:]
        field = ".".join(str(p) for p in loc)
        msg = err["msg"].removeprefix("Value error, ")
        raise ValueError(f"{where}{field}: {msg}" if field else f"{where}{msg}") from None
