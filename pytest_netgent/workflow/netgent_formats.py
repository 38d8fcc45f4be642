"""The shapes NetGent's files come in, read as states (see ``docs/netgent.md``).

- a list of states (``name``, ``description``, ``checks``, ``actions``, ``end_state``,
  ``executed``), starting on ``chrome://new-tab-page/``, ``data:,`` or ``about:blank``;
- the dump of an agent's run: ``state_repository`` (the states), ``variables`` (their
  values), ``passed_states``, ``executed_states``, ``state_prompts``...;
- a workflow of NetGent's newer engine: ``specification`` (what it does, in words),
  ``states`` (unnamed) and ``parameters`` (names its ``{{name}}`` placeholders use);
- NetGent's first format, where a check is ``{"type", "value"}`` and an action a call,
  ``"click(by='css selector', selector='...', fallback_x=...)"``.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_CHECK_PARAM = {"url": "url", "text": "text", "title": "title", "script": "script"}
_ACTION_NAMES = {"navigate_to": "navigate"}
_PARAM_NAMES = {"scroll_amount": "pixels"}
_DROPPED = {"button", "scroll_to", "fallback_x", "fallback_y", "fallback_width",
            "fallback_height"}  # fmt: skip
_POSITIONAL = {"terminate": "reason", "navigate": "url", "wait": "seconds",
               "press_key": "key", "type": "text"}  # fmt: skip
"""The parameter a call's one positional argument stands for: ``terminate('done')``."""


def legacy_check(check: Any) -> Any:
    """NetGent's first repository format wrote a check as ``{"type", "value"}``."""
    if not (isinstance(check, dict) and "value" in check and "params" not in check):
        return check
    kind = str(check.get("type", ""))
    if kind == "element":
        params = {"by": "css selector", "selector": check["value"]}
    else:
        params = {_CHECK_PARAM.get(kind, kind): check["value"]}
    return {"type": kind, "params": params}


def legacy_action(action: Any) -> Any:
    """NetGent's first repository format wrote an action as a call,
    ``"click(by='css selector', selector='...', percentage=0.5, fallback_x=...)"``: read
    its literal arguments (nothing is evaluated) under today's names; a workflow
    parameter, ``parameters['SEARCH']``, is the placeholder ``%SEARCH%``. Its
    ``fallback_*`` page coordinates are not screen points, so they are left out. A call
    whose quoting Python would refuse (a quote inside a quoted selector, as NetGent wrote
    some) is read argument by argument."""
    if not isinstance(action, str):
        return action
    try:
        name, params = _call(action.strip())
    except (SyntaxError, ValueError):
        try:
            name, params = _loose_call(action.strip())
        except ValueError:
            raise ValueError(
                f"action {action[:80]!r} is neither an action object ({{'type', 'params'}}) "
                "nor a call with literal arguments, as NetGent's first format wrote them: "
                "write it as {'type': ..., 'params': {...}}"
            ) from None
    name = _ACTION_NAMES.get(name, name)
    kept = {_PARAM_NAMES.get(k, k): v for k, v in params.items() if k not in _DROPPED}
    if "" in kept:
        kept[_POSITIONAL.get(name, "value")] = kept.pop("")
    return {"type": name, "params": kept}


def _value(node: ast.expr) -> Any:
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == "parameters"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return f"%{node.slice.value}%"
    return ast.literal_eval(node)


def _call(text: str) -> tuple[str, dict[str, Any]]:
    call = ast.parse(text, mode="eval").body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or len(call.args) > 1:
        raise ValueError(text)
    params = {kw.arg: _value(kw.value) for kw in call.keywords if kw.arg is not None}
    if call.args:
        params[""] = _value(call.args[0])
    return call.func.id, params


_LOOSE = re.compile(r"(\w+)\((.*)\)", re.S)
_ARGUMENT = re.compile(r",\s*(?=\w+=)")
_PARAMETER = re.compile(r"parameters\[(['\"])(\w+)\1\]")


def _loose_call(text: str) -> tuple[str, dict[str, Any]]:
    """``name(key=value, ...)`` split at each ``, key=``: a quoted value runs from its
    first quote to the last one before the next argument, quotes inside it kept."""
    match = _LOOSE.fullmatch(text)
    if match is None:
        raise ValueError(text)
    params: dict[str, Any] = {}
    for part in _ARGUMENT.split(match[2].strip()):
        key, eq, raw = part.partition("=")
        if not eq or not key.strip().isidentifier():
            raise ValueError(text)
        raw = raw.strip()
        if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
            value: Any = raw[1:-1]
        elif parameter := _PARAMETER.fullmatch(raw):
            value = f"%{parameter[2]}%"
        else:
            try:
                value = ast.literal_eval(raw)
            except (SyntaxError, ValueError):
                raise ValueError(text) from None
        params[key.strip()] = value
    return match[1], params


def repository_states(data: Any) -> Any:
    """The cache document (or its start) any of NetGent's shapes stands for: a list of
    states, an agent's dump (its ``state_repository``), a newer engine's workflow (its
    ``states``, each unnamed one called ``State 1``, ``State 2``... in order)."""
    if isinstance(data, list):
        return {"states": data}
    if not isinstance(data, dict):
        return data
    if "states" not in data and isinstance(data.get("state_repository"), list):
        return {"states": data["state_repository"]}
    if "specification" in data and isinstance(data.get("states"), list):
        states = [
            {"name": f"State {n}", **s} if isinstance(s, dict) and "name" not in s else s
            for n, s in enumerate(data["states"], 1)
        ]
        return {"states": states}
    return data


def repository_variables(data: Any) -> dict[str, str]:
    """The values a NetGent file carries for its placeholders: an agent dump's
    ``variables``; a newer workflow's ``parameters`` when they give values (a list of
    names gives none: they are to be given, as ``--var NAME=VALUE`` or ``vars``)."""
    if not isinstance(data, dict):
        return {}
    variables = data.get("variables")
    if isinstance(variables, dict):
        return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in variables.items()}
    parameters = data.get("parameters")
    if isinstance(parameters, dict):
        return {
            str(k): "" if v is None else v if isinstance(v, str) else json.dumps(v)
            for k, v in parameters.items()
        }
    return {}
