"""The compiled automaton: states with concrete checks and browser actions.

Field names follow NetGent's state repository (``name``, ``checks``, ``actions``,
``end_state``, check and action ``type``/``params``) so that its files load as they are.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Iterable
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .netgent_formats import legacy_action, legacy_check, repository_states

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

_TARGET = ("by", "selector", "index", "alternatives")
_POINT = ("x", "y")

CHECK_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "url": (("url",), ("match", "ignore_query")),
    "element": (("by", "selector"), ("visible", "check_visibility", "timeout")),
    "text": (("text",), ("check_visibility", "timeout")),
    "title": (("title",), ("match",)),
    "script": (("script",), ()),
    "always_true": ((), ()),
}
"""Each check type's ``(required, optional)`` parameters; NetGent's names included
(``check_visibility``, ``timeout``). The engine's meaning of each is in the docs'
"Coming from NetGent" table (docs/netgent.md) and in ``browser/checks.js``."""

ActionType = Literal[
    "navigate",
    "click",
    "type",
    "press_key",
    "scroll",
    "scroll_to",
    "hover",
    "move",
    "select",
    "wait",
    "switch_tab",
    "go_back",
    "start_video_sampling",
    "stop_video_sampling",
    "start_stats_logging",
    "stop_stats_logging",
    "terminate",
    "remember_tab",
    "store_current_url",
    "open_stored_url",
    "click_first_text",
    "click_accessible_name",
    "wait_for_element",
    "wait_for_text",
    "start_webrtc_tracking",
    "collect_webrtc_metrics",
    "set_env_value",
    "type_env",
    "click_first",
    "click_text_env",
    "play_video",
    "go_to_url",
]
"""Every action type a state may use: the one list, which the message models
(:mod:`.messages`) and the action registry (``browser/actions.py``) follow."""

ACTION_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "navigate": (("url",), ()),
    "click": ((), (*_TARGET, *_POINT, "percentage")),
    "type": (("text",), (*_TARGET, *_POINT, "clear")),
    "press_key": (("key",), _TARGET),
    "scroll": ((), ("direction", "amount", "times", "pixels", *_TARGET, *_POINT)),
    "scroll_to": ((), (*_TARGET, *_POINT)),
    "hover": ((), (*_TARGET, *_POINT, "percentage")),
    "move": ((), (*_TARGET, *_POINT, "percentage")),
    "select": (("by", "selector"), ("text", "value", "index", "alternatives")),
    "wait": (("seconds",), ()),
    "switch_tab": ((), ("index", "url", "title", "name")),
    "go_back": ((), ()),
    "start_video_sampling": ((), ("interval",)),
    "stop_video_sampling": ((), ()),
    "start_stats_logging": ((), ("out_path", "interval")),
    "stop_stats_logging": ((), ()),
    "terminate": ((), ("reason",)),
    "remember_tab": (("name",), ()),
    "store_current_url": (("name",), ("strip_query",)),
    "open_stored_url": (("name",), ("suffix", "tab_name")),
    "click_first_text": (("texts",), ("timeout",)),
    "click_accessible_name": (("names",), ("timeout",)),
    "wait_for_element": (("selector",), ("visible", "timeout")),
    "wait_for_text": (("text",), ("visible", "timeout")),
    "start_webrtc_tracking": ((), ()),
    "collect_webrtc_metrics": (("out_path",), ()),
    "set_env_value": (("env_var", "selectors"), ("timeout",)),
    "type_env": (("env_var",), (*_TARGET, *_POINT, "clear")),
    "click_first": (("selectors",), ("timeout",)),
    "click_text_env": (("env_var",), ("timeout",)),
    "play_video": ((), ("selector", "timeout")),
    "go_to_url": (("url",), ("new_tab",)),
}
"""Each action type's ``(required, optional)`` parameters: the action registry
(``browser/actions.py``), with NetGent's action and parameter names (``move``,
``terminate``, ``start_stats_logging``, ``pixels``, ``percentage``, ``x``/``y``), and
NetGent's newer ones (tabs by name, stored addresses, clicks by text or accessible name,
waits, WebRTC metrics, environment values, ``play_video``)."""

_Match = Literal["exact", "prefix", "contains", "pattern"] | None
"""How a url or title check compares (``checks.js``); ``None``: the check's default."""


class _Params(BaseModel):
    """The types of some parameters (what :data:`CHECK_PARAMS` and :data:`ACTION_PARAMS`
    name them); a value of another type is refused, never turned into one: a url check
    whose ``url`` is ``5`` would only ever fail on the page, as if the UI had changed."""

    model_config = ConfigDict(extra="ignore", strict=True)


class _UrlCheck(_Params):
    url: str
    match: _Match = None
    ignore_query: bool | list[str] | None = None


class _ElementCheck(_Params):
    selector: str
    visible: bool | None = None
    check_visibility: bool | None = None


class _TextCheck(_Params):
    text: str
    check_visibility: bool | None = None


class _TitleCheck(_Params):
    title: str
    match: _Match = None


class _ScriptCheck(_Params):
    script: str


class _ActionText(_Params):
    """Text wherever an action has it: the address to open or match, the element's
    selector."""

    url: str | None = None
    selector: str | None = None


CHECK_TYPED: dict[str, type[_Params]] = {
    "url": _UrlCheck,
    "element": _ElementCheck,
    "text": _TextCheck,
    "title": _TitleCheck,
    "script": _ScriptCheck,
    "always_true": _Params,
}
"""The types of each check type's parameters (numbers: :data:`_NUMBERS`)."""
assert set(CHECK_TYPED) == set(CHECK_PARAMS), "every check type has its types"


ACTION_TYPES: tuple[str, ...] = get_args(ActionType)
"""Every action type a state may use, as a tuple."""
assert set(ACTION_TYPES) == set(ACTION_PARAMS), "every action type has its parameters"

CHECK_TYPES = tuple(CHECK_PARAMS)
"""Every check type a state may use."""

_LOCATED = {"click", "scroll_to", "hover", "move"}
"""Actions that need an element (``by``/``selector``) or a point (``x``/``y``)."""

CSS_ONLY = {"wait_for_element", "play_video"}
"""Actions whose ``selector`` is always CSS (NetGent's): no ``by`` goes with it."""


def _close(name: str, allowed: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(allowed), n=1)
    return f"; did you mean {match[0]!r}?" if match else ""


_NUMBERS = {
    *("seconds", "interval", "pixels", "amount", "times", "x", "y", "percentage", "timeout"),
    "index",  # an element's among the matches, an option's, a tab's
}
"""Parameters that are numbers wherever they appear."""


def _number_or_placeholder(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    text = value.strip()
    if re.fullmatch(r"\{\w+\}|%\w+%|\{\{\s*\w+\s*\}\}", text):
        return True  # filled at run time
    try:
        number = float(text)
    except ValueError:
        return False
    return number == number and abs(number) != float("inf")


def _typed(kind: str, type_: str, params: dict[str, Any], model: type[_Params]) -> None:
    """Parameters of the wrong type (a number for a ``url``, text for ``visible``), with
    the type each needs."""
    try:
        model.model_validate(params)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{type_} {kind}: {name}: {err['msg']}, got {err['input']!r}") from None


def _validate(kind: str, type_: str, params: dict[str, Any], table: Any) -> None:
    """Unknown types and parameters, missing ones and bad ``by`` values, with the names
    that are allowed."""
    if type_ not in table:
        raise ValueError(
            f"unknown {kind} type {type_!r}{_close(type_, table)} "
            f"({kind} types: {', '.join(table)})"
        )
    required, optional = table[type_]
    allowed = (*required, *optional)
    for name in params:
        if name not in allowed:
            raise ValueError(
                f"{type_} {kind}: unknown parameter {name!r}{_close(name, allowed)} "
                f"({type_} takes {', '.join(allowed) or 'no parameters'})"
            )
    missing = [p for p in required if p not in params]
    if missing:
        raise ValueError(f"{type_} {kind} needs params {missing}")
    for name in _NUMBERS.intersection(params):
        value = params[name]
        finite = isinstance(value, (int, float)) and value == value and abs(value) != float("inf")
        if isinstance(value, bool) or not (finite or _number_or_placeholder(value)):
            raise ValueError(
                f"{type_} {kind}: {name} must be a number (or a {{placeholder}}), got {value!r}"
            )
    by = params.get("by")
    if by is not None and by not in BY_VALUES:
        raise ValueError(f"{type_} {kind}: unknown 'by' {by!r}; use one of {', '.join(BY_VALUES)}")
    others = params.get("alternatives", [])
    for other in others if isinstance(others, list) else [others]:
        if not (isinstance(other, dict) and set(other) == {"by", "selector"}) or (
            other["by"] not in BY_VALUES or not isinstance(other["selector"], str)
        ):
            raise ValueError(
                f"{type_} {kind}: each of 'alternatives' is {{by, selector}} (other "
                f"locators of the same element, tried when healing), got {other!r}"
            )


SELECTOR_CHAIN = (
    "A 'selector' may name the shadow hosts and frames on the way to its element, joined "
    "by ' >> ': 'ng-app >> ng-search >> input#q' (the input in ng-search's shadow root, "
    "open or closed, in ng-app's), 'iframe#player >> button.play' (in the frame's "
    "document, of this site or another). Each link is looked up in what the link before "
    "it holds; links before the last are CSS selectors; the last uses 'by' (XPath only "
    "outside shadow roots)."
)
"""How a selector reaches inside shadow roots and frames (see ``browser/chain.py``)."""


class Check(BaseModel):
    """One condition of a state's trigger, evaluated in the page."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(json_schema_extra={"enum": list(CHECK_TYPES)})
    params: dict[str, Any] = Field(default_factory=dict, description=SELECTOR_CHAIN)

    @model_validator(mode="after")
    def _required(self) -> Check:
        _validate("check", self.type, self.params, CHECK_PARAMS)
        _typed("check", self.type, self.params, CHECK_TYPED[self.type])
        return self

    @property
    def presence_only(self) -> bool:
        """Whether the check asks only for presence (``visible: false``, NetGent's
        ``check_visibility: false``), not visibility."""
        return self.params.get("visible") is False or self.params.get("check_visibility") is False

    def describe(self) -> str:
        """A one-line description for reports, with placeholders as written."""
        p = self.params
        if self.type == "url":
            return f"url {p.get('match', 'exact')} {p['url']!r}"
        if self.type == "element":
            vis = ""
            if self.presence_only:
                vis = " (present, may be hidden)"
            elif p.get("check_visibility") is True:
                vis = " (visible in the viewport)"
            return f"element {p['by']}={p['selector']!r}{vis}"
        if self.type == "text":
            return f"text contains {p['text']!r}"
        if self.type == "title":
            return f"title {p.get('match', 'contains')} {p['title']!r}"
        if self.type == "always_true":
            return "always true"
        return f"script {p['script']!r}"


class Action(BaseModel):
    """One browser action of a state, from the action registry."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(json_schema_extra={"enum": list(ACTION_TYPES)})
    params: dict[str, Any] = Field(default_factory=dict, description=SELECTOR_CHAIN)

    @model_validator(mode="after")
    def _required(self) -> Action:
        _validate("action", self.type, self.params, ACTION_PARAMS)
        _typed("action", self.type, self.params, _ActionText)
        p = self.params
        if self.type in _LOCATED and "selector" not in p and not ("x" in p and "y" in p):
            raise ValueError(f"{self.type} action needs 'by' and 'selector' (or 'x' and 'y')")
        if "selector" in p and "by" not in p and self.type not in CSS_ONLY:
            raise ValueError(f"{self.type} action needs 'by' with 'selector'")
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
        if "index" in p and self.type != "select":
            target += f"[{p['index']}]"
        skip: tuple[str, ...] = ("by", "selector", "x", "y", "alternatives")
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

    format: int = FORMAT
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
