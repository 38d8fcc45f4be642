"""The shapes NetGent's files come in, read as states (see ``docs/netgent.md``).

- a list of states (``name``, ``description``, ``checks``, ``actions``, ``end_state``,
  ``executed``), starting on ``chrome://new-tab-page/``, ``data:,`` or ``about:blank``;
- the dump of an agent's run: ``state_repository`` (the states), ``variables`` (their
  values), ``passed_states``, ``executed_states``, ``state_prompts``...;
- a workflow of NetGent's newer engine: ``specification`` (what it does, in words),
  ``states`` (unnamed) and ``parameters`` (names its ``{{name}}`` placeholders use);
- NetGent's first format, where a check is ``{"type", "value"}`` and an action a call,
  ``"click(by='css selector', selector='...', fallback_x=...)"``;
- its Playwright-era engine's checks (``check_element``, ``check_url``, ``check_text``,
  ``check_javascript``), read as the checks of the same meaning, and actions, whose
  Playwright selectors (CSS; XPath when they start with ``//`` or ``xpath=``; ``>>>``
  into a frame) are read as a ``by`` and a ``selector``.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

ONE_PASS = "Workflow Completed"
"""The end a newer engine's workflow without an ``end_state`` reaches (its engine's own
words), once its states have run."""

_CHECK_PARAM = {"url": "url", "text": "text", "title": "title", "script": "script"}
_ACTION_NAMES = {"navigate_to": "navigate"}
_PARAM_NAMES = {"scroll_amount": "pixels"}
_DROPPED = {"button", "scroll_to", "fallback_x", "fallback_y", "fallback_width",
            "fallback_height"}  # fmt: skip
_POSITIONAL = {"terminate": "reason", "navigate": "url", "wait": "seconds",
               "press_key": "key", "type": "text"}  # fmt: skip
"""The parameter a call's one positional argument stands for: ``terminate('done')``."""


def legacy_check(check: Any) -> Any:
    """NetGent's first repository format wrote a check as ``{"type", "value"}``; its
    Playwright-era engine names checks ``check_*`` (:func:`playwright_check`)."""
    if isinstance(check, dict) and str(check.get("type", "")) in PLAYWRIGHT_CHECKS:
        return playwright_check(check)
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
    if isinstance(action, dict):
        return playwright_action(action)
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
        ends = [s for s in states if isinstance(s, dict) and s.get("end_state")]
        if states and not ends and isinstance(states[-1], dict):
            # its engine runs the states that hold once, in one pass, and is done: the
            # last one ends the workflow
            states[-1] = {**states[-1], "end_state": ONE_PASS}
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


PLAYWRIGHT_CHECKS = frozenset({"check_element", "check_url", "check_text", "check_javascript"})
"""The check types of NetGent's Playwright-era engine."""

PLAYWRIGHT_SELECTED = frozenset({"click_element", "input_text", "select_dropdown_option", "scroll"})
"""Its actions whose ``selector`` is a Playwright selector (with no ``by``)."""

_ENGINES = re.compile(
    r"^(text|role|id|data-testid|internal:[\w-]+|nth|visible)=|^[\"']|:has-text\(|"
    r":text(-is|-matches)?\(|:visible\b|:nth-match\(|:(left-of|right-of|above|below|near)\(|"
    r"(^|\s)>>(\s|$)"
)
"""Playwright's own selector engines, which no browser's CSS or XPath reads."""


def playwright_selector(selector: Any) -> tuple[str, str]:
    """``(by, selector)`` of a selector NetGent's Playwright engine reads: XPath when it
    starts with ``//``, ``/`` or ``xpath=``, else CSS (``css=`` dropped); ``A >>> B``,
    ``B`` in the frame ``A``, is this package's chain ``A >> B``. A selector only
    Playwright reads (``text=``, ``:has-text()``, a ``>>`` chain) is refused with how to
    write it."""
    text = str(selector).strip()
    if not text:
        raise ValueError("selector: is empty: give the CSS or XPath of the element")
    if _ENGINES.search(text.replace(">>>", "   ")):
        raise ValueError(
            f"selector {text!r} uses a selector engine only Playwright reads (text=, role=, "
            ":has-text(), a '>>' chain): write it as CSS or XPath (e.g. "
            "//button[normalize-space(.)='Join']), with '>>>' before a frame's part"
        )
    links = [part.strip() for part in text.split(">>>")]
    if any(part.startswith(("/", ".", "(", "xpath=")) for part in links[:-1]):
        raise ValueError(
            f"selector {text!r}: a frame before '>>>' is named by CSS (iframe#call), not XPath"
        )
    if any(not part for part in links):
        raise ValueError(
            f"selector {text!r}: a '>>>' link is empty: name the frame, then the element"
        )
    last = links[-1]
    by = "css selector"
    if last.startswith("xpath="):
        by, last = "xpath", last.removeprefix("xpath=")
    elif last.startswith(("//", ".//", "/", "(/", "..")):
        by = "xpath"
    elif last.startswith("css="):
        last = last.removeprefix("css=")
    frames = [f.removeprefix("css=") for f in links[:-1]]
    return by, " >> ".join([*frames, last])


def playwright_check(check: dict[str, Any]) -> dict[str, Any]:
    """A ``check_*`` check of NetGent's Playwright engine as the check of its meaning:
    ``check_url`` an exact URL; ``check_element`` an element in its ``state`` (visible by
    default, ``attached`` present, ``hidden`` not visible, ``detached`` absent);
    ``check_text`` text on the page, ``exact`` (its default) an element whose whole text it
    is, else contained in any case; ``check_javascript`` a script, called with ``arg`` when
    it is a function. Its ``timeout`` (how long Playwright polls) is the engine's own
    ticks here."""
    kind = str(check["type"])
    p = check.get("params") or {}
    if not isinstance(p, dict):
        return check
    if kind == "check_url":
        return {"type": "url", "params": {"url": p.get("url")}}
    if kind == "check_javascript":
        params: dict[str, Any] = {"script": p.get("script")}
        if p.get("arg") is not None:
            params["arg"] = p["arg"]
        return {"type": "script", "params": params}
    visible = _flag(p.get("check_visibility", True))
    waited = {"timeout": p["timeout"]} if "timeout" in p else {}
    if kind == "check_text":
        read = _text_check(p, visible)
        return {**read, "params": {**read["params"], **waited}}
    by, selector = playwright_selector(p.get("selector", ""))
    state = p.get("state") or ("visible" if visible else "attached")
    if state not in ("visible", "attached", "hidden", "detached"):
        raise ValueError(
            f"check_element: state {state!r} is none of visible, attached, hidden, detached"
        )
    # Playwright waits on the first match, and counts a transparent one as visible
    params = {"by": by, "selector": selector, "first": True, **waited}
    if state in ("attached", "detached"):
        params["visible"] = False
    else:
        params["transparent"] = True
    if state in ("hidden", "detached"):
        params["negate"] = True
    return {"type": "element", "params": params}


_READ = (
    "not(ancestor-or-self::head or ancestor-or-self::script or ancestor-or-self::style"
    " or ancestor-or-self::noscript or ancestor-or-self::template)"
)
"""What a page shows as text (Playwright's text engine skips the rest)."""


def _text_check(p: dict[str, Any], visible: bool) -> dict[str, Any]:
    """``check_text``: with ``exact`` (its default), an element whose whole text is
    ``text`` (spaces folded); else the page's text holds it in any case; never the head's,
    a script's or a style's text. An empty text is refused: it would hold anywhere."""
    text = p.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("check_text: text is empty: give the text the page shows")
    if not _flag(p.get("exact", True)):
        out: dict[str, Any] = {"text": text, "ignore_case": True}
        return {"type": "text", "params": out if visible else {**out, "check_visibility": False}}
    said = f"normalize-space(.)={xpath_literal(' '.join(text.split()))}"
    found = {"by": "xpath", "selector": f"//*[{_READ}][{said}]", "transparent": True}
    return {"type": "element", "params": found if visible else {**found, "visible": False}}


def playwright_action(action: dict[str, Any]) -> dict[str, Any]:
    """An action of NetGent's Playwright engine with its selector read
    (:func:`playwright_selector`) as a ``by`` and a ``selector``."""
    p = action.get("params")
    kind = action.get("type")
    if kind not in PLAYWRIGHT_SELECTED or not isinstance(p, dict) or "by" in p:
        return action
    if "selector" not in p or (kind == "scroll" and p.get("selector") is None):
        return {**action, "params": {k: v for k, v in p.items() if k != "selector"}}
    if kind == "scroll" and "down" not in p and "num_pages" not in p:
        return action  # this package's own scroll: 'by' goes with its selector
    by, selector = playwright_selector(p["selector"])
    return {**action, "params": {**p, "by": by, "selector": selector}}


def xpath_literal(value: str) -> str:
    """``value`` as an XPath string literal (``concat()`` when it holds both quotes)."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    parts = value.split("'")
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in parts) + ")"


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)
