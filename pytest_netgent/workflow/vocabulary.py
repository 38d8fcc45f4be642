"""The check and action types a state may use: each with its parameters, the types of
those, and how a wrong one is told (the type or name at fault, the names allowed).

One table each (:data:`CHECK_PARAMS`, :data:`ACTION_PARAMS`) that the models of
:mod:`.automaton`, the engine (``browser/checks.js``, ``browser/actions.py``) and the
docs follow.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..measure import STEP_PARAMS

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

_TARGET = ("by", "selector", "index", "alternatives", "role", "name", "within")
"""How an action names its element: by ``role`` and ``name`` (``within`` a region or
under a heading), by ``by``/``selector`` (the fallback, and NetGent's way), ``index``
among several; ``alternatives``: its other locators."""

_POINT = ("x", "y")

_COUNT = ("count", "at_least")

CHECK_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "url": (("url",), ("match", "ignore_query", "negate")),
    "element": (
        ("by", "selector"),
        (
            *("visible", "check_visibility", "timeout", "text", "first", "transparent"),
            *(*_COUNT, "negate"),
        ),
    ),
    "text": (("text",), ("check_visibility", "timeout", "ignore_case", "negate")),
    "title": (("title",), ("match", "negate")),
    "script": (("script",), ("arg", "negate")),
    "always_true": ((), ()),
    "role": (
        ("role",),
        ("name", "match", "state", "value", "value_match", "text", "within", *_COUNT, "negate"),
    ),
    "media": ((), ("selector", "state", "min_height", "advanced", "negate")),
}
"""Each check type's ``(required, optional)`` parameters; NetGent's names included
(``check_visibility``, ``timeout``). The engine's meaning of each is in the docs'
"Coming from NetGent" table (docs/netgent.md) and in ``browser/checks.js``."""

FORMAT_2_CHECKS = frozenset({"role", "media"})
"""Check types a file of format 1 cannot hold (and the parameters below)."""
FORMAT_2_PARAMS = frozenset(
    {"negate", "count", "at_least", "text", "ignore_case", "arg", "first", "transparent"}
)
"""Parameters of format 2 (``text`` on an ``element`` check: its text)."""

STATES = (
    "checked", "unchecked", "mixed", "selected", "unselected", "expanded", "collapsed",
    "pressed", "unpressed", "disabled", "enabled", "focused", "busy", "required", "readonly",
    "modal", "invalid",
)  # fmt: skip
"""The states a ``role`` check may ask for (``browser/roles.js``)."""

MEDIA_STATES = ("playing", "paused", "ended", "buffering")
"""The states a ``media`` check may ask for."""

ROLES = (
    "alert", "alertdialog", "application", "article", "banner", "blockquote", "button",
    "caption", "cell", "checkbox", "code", "columnheader", "combobox", "complementary",
    "contentinfo", "definition", "deletion", "dialog", "directory", "document", "emphasis",
    "feed", "figure", "form", "generic", "grid", "gridcell", "group", "heading", "img",
    "insertion", "link", "list", "listbox", "listitem", "log", "main", "marquee", "math",
    "meter", "menu", "menubar", "menuitem", "menuitemcheckbox", "menuitemradio", "navigation",
    "note", "option", "progressbar", "radio", "radiogroup", "region", "row", "rowgroup",
    "rowheader", "scrollbar", "search", "searchbox", "separator", "slider", "spinbutton",
    "status", "strong", "subscript", "superscript", "switch", "tab", "table", "tablist",
    "tabpanel", "term", "textbox", "time", "timer", "toolbar", "tooltip", "tree", "treegrid",
    "treeitem", "video", "audio", "iframe",
)  # fmt: skip
"""The roles a ``role`` check may name: WAI-ARIA 1.2's that a user is told of, and the
page model's own for media and frames (``browser/roles.js``)."""

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
    "set_value",
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
    "click_element",
    "input_text",
    "send_keys",
    "scroll_to_text",
    "select_dropdown_option",
    "ping",
    "iperf",
    "ndt",
    "wget",
]
"""Every action type a state may use: the one list, which the message models
(:mod:`.messages`) and the action registry (``browser/actions.py``) follow."""

ACTION_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "navigate": (("url",), ()),
    "click": ((), (*_TARGET, *_POINT, "percentage")),
    "type": (("text",), (*_TARGET, *_POINT, "clear")),
    "press_key": (("key",), _TARGET),
    "scroll": (
        (),
        ("direction", "amount", "times", "pixels", "down", "num_pages", *_TARGET, *_POINT),
    ),
    "scroll_to": ((), (*_TARGET, *_POINT)),
    "hover": ((), (*_TARGET, *_POINT, "percentage")),
    "move": ((), (*_TARGET, *_POINT, "percentage")),
    "select": ((), (*_TARGET, "text", "value")),
    "set_value": (("value",), _TARGET),
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
    "click_element": (("selector",), ("by", "timeout_ms")),
    "input_text": (("selector", "text"), ("by", "timeout_ms")),
    "send_keys": (("keys",), ()),
    "scroll_to_text": (("text",), ()),
    "select_dropdown_option": (("selector", "text"), ("by", "timeout_ms")),
    **STEP_PARAMS,
}
"""Each action type's ``(required, optional)`` parameters: the action registry
(``browser/actions.py``), with NetGent's action and parameter names (``move``,
``terminate``, ``start_stats_logging``, ``pixels``, ``percentage``, ``x``/``y``), and
NetGent's newer ones (tabs by name, stored addresses, clicks by text or accessible name,
waits, WebRTC metrics, environment values, ``play_video``), its Playwright-era engine's
(``click_element``, ``input_text``, ``send_keys``, ``scroll`` by ``num_pages``,
``scroll_to_text``, ``select_dropdown_option``) and its network measurement steps
(``ping``, ``iperf``, ``ndt``, ``wget``: :mod:`..measure`)."""

FORMAT_2_ACTIONS = frozenset(
    {"set_value", "click_element", "input_text", "send_keys", "scroll_to_text"}
    | {"select_dropdown_option", *STEP_PARAMS}
)
"""Action types a file of format 1 cannot hold."""

_Match = Literal["exact", "prefix", "contains", "pattern"] | None
"""How a url or title check compares (``checks.js``); ``None``: the check's default."""


class _Params(BaseModel):
    """The types of some parameters (what :data:`CHECK_PARAMS` and :data:`ACTION_PARAMS`
    name them); a value of another type is refused, never turned into one: a url check
    whose ``url`` is ``5`` would only ever fail on the page, as if the UI had changed."""

    model_config = ConfigDict(extra="ignore", strict=True)

    negate: bool | None = None


class _UrlCheck(_Params):
    url: str
    match: _Match = None
    ignore_query: bool | list[str] | None = None


class _ElementCheck(_Params):
    selector: str
    visible: bool | None = None
    check_visibility: bool | None = None
    text: str | None = None
    first: bool | None = None
    transparent: bool | None = None


class _TextCheck(_Params):
    text: str
    check_visibility: bool | None = None
    ignore_case: bool | None = None


class _TitleCheck(_Params):
    title: str
    match: _Match = None


class _ScriptCheck(_Params):
    script: str


_NameMatch = Literal["exact", "contains", "pattern"] | None
"""How a role check compares a name or a value: ``exact`` (spaces folded; numbers by
value), ``contains`` (any case), ``pattern`` (a regular expression)."""


class _RoleCheck(_Params):
    role: str
    name: str | None = None
    match: _NameMatch = None
    state: Literal[STATES] | list[Literal[STATES]] | None = None  # type: ignore[valid-type]
    value: str | int | float | None = None
    value_match: _NameMatch = None
    text: str | None = None
    within: str | None = None

    @model_validator(mode="after")
    def _known_role(self) -> _RoleCheck:
        if self.role not in ROLES and not _number_or_placeholder(self.role):
            raise ValueError(f"unknown role {self.role!r}{_close(self.role, ROLES)}")
        return self


class _MediaCheck(_Params):
    selector: str | None = None
    state: Literal[MEDIA_STATES] | None = None  # type: ignore[valid-type]


class ActionText(_Params):
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
    "role": _RoleCheck,
    "media": _MediaCheck,
}
"""The types of each check type's parameters (numbers: :data:`_NUMBERS`)."""
assert set(CHECK_TYPED) == set(CHECK_PARAMS), "every check type has its types"


ACTION_TYPES: tuple[str, ...] = get_args(ActionType)
"""Every action type a state may use, as a tuple."""
assert set(ACTION_TYPES) == set(ACTION_PARAMS), "every action type has its parameters"

CHECK_TYPES = tuple(CHECK_PARAMS)
"""Every check type a state may use."""

LOCATED = {"click", "scroll_to", "hover", "move"}
"""Actions that need an element (``by``/``selector``) or a point (``x``/``y``)."""

CSS_ONLY = {"wait_for_element", "play_video"}
"""Actions whose ``selector`` is always CSS (NetGent's): no ``by`` goes with it."""


def _close(name: str, allowed: Iterable[str]) -> str:
    match = difflib.get_close_matches(name, list(allowed), n=1)
    return f"; did you mean {match[0]!r}?" if match else ""


_NUMBERS = {
    *("seconds", "interval", "pixels", "amount", "times", "x", "y", "percentage", "timeout"),
    *("count", "at_least", "min_height", "advanced", "timeout_ms", "num_pages"),
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


def typed_params(kind: str, type_: str, params: dict[str, Any], model: type[_Params]) -> None:
    """Parameters of the wrong type (a number for a ``url``, text for ``visible``), with
    the type each needs."""
    try:
        model.model_validate(params)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        if not err["loc"]:  # the whole check's (an unknown role)
            raise ValueError(f"{type_} {kind}: {msg}") from None
        name = str(err["loc"][0])  # a union's member says nothing more
        raise ValueError(f"{type_} {kind}: {name}: {msg}, got {err['input']!r}") from None


def validate_params(kind: str, type_: str, params: dict[str, Any], table: Any) -> None:
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


CHECK_EXAMPLES: dict[str, dict[str, Any]] = {
    "url": {"url": "{base_url}/search?q=", "match": "prefix"},
    "element": {"by": "css selector", "selector": "ul.results > li", "at_least": 3},
    "text": {"text": "Saved", "negate": True},
    "title": {"title": "Inbox", "match": "contains"},
    "script": {"script": "document.querySelectorAll('video').length > 0"},
    "always_true": {},
    "role": {"role": "button", "name": "Apply", "state": "disabled"},
    "media": {"state": "playing", "advanced": 2, "min_height": 360},
}
"""One example of each check type's parameters (the JSON Schema and the docs show them)."""
assert set(CHECK_EXAMPLES) == set(CHECK_PARAMS), "every check type has its example"


def _param_schema(name: str, model: type[_Params]) -> dict[str, Any]:
    """One parameter's schema: its type from ``model``, a number, or anything."""
    if name in model.model_fields and name != "role":
        field = model.model_json_schema()["properties"][name]
        field.pop("default", None)
        options = [o for o in field.pop("anyOf", []) if o != {"type": "null"}]
        return {
            **field,
            **(options[0] if len(options) == 1 else {"anyOf": options} if options else {}),
        }
    if name in _NUMBERS:
        return {"anyOf": [{"type": "number"}, {"type": "string", "pattern": r"^\{\w+\}$"}]}
    if name == "by":
        return {"enum": list(BY_VALUES)}
    if name == "role":
        return {"enum": list(ROLES)}
    return {}


def check_schema(schema: dict[str, Any]) -> None:
    """The JSON Schema of a check, per check type: exactly its parameters, their types, and
    an example (``Check``'s ``json_schema_extra``)."""
    cases = []
    for type_, (required, optional) in CHECK_PARAMS.items():
        model = CHECK_TYPED[type_]
        params = {
            "type": "object",
            "properties": {n: _param_schema(n, model) for n in (*required, *optional)},
            "required": list(required),
            "additionalProperties": False,
            "examples": [CHECK_EXAMPLES[type_]],
        }
        cases.append({"if": {"properties": {"type": {"const": type_}}},
                      "then": {"properties": {"params": params}}})  # fmt: skip
    schema["allOf"] = cases
