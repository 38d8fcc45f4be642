"""The builtin's readings of what the page model says of one element: its states and its
value, as a person says them ("the Delete button is disabled", "the menu is expanded",
"the Newsletter box is checked", "the volume slider is at 7", "the title field is
empty").

The element is the one the sentence names (:func:`~.elements.resolve`); what it is in the
page model (its role, accessible name, states and value, :mod:`~..browser.aria`) gives a
``role`` check of exactly that, which replay evaluates as the page model reads it. A
state or value the page does not show raises :class:`NotHolding`; an element the page
model did not read, or one whose role and name another element shares, is
:class:`~. Unresolved` (the attribute readings of :mod:`.triggers` may still read it).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from ..workflow.automaton import Check
from . import Unresolved
from .elements import resolve
from .observation import Observation, ObservedElement
from .words import parse_target, tokens

STATE_WORDS: dict[str, tuple[str, str]] = {
    "checked": ("checked", "unchecked"),
    "ticked": ("checked", "unchecked"),
    "unchecked": ("unchecked", "checked"),
    "selected": ("selected", "unselected"),
    "pressed": ("pressed", "unpressed"),
    "disabled": ("disabled", "enabled"),
    "enabled": ("enabled", "disabled"),
    "expanded": ("expanded", "collapsed"),
    "open": ("expanded", "collapsed"),
    "collapsed": ("collapsed", "expanded"),
    "closed": ("collapsed", "expanded"),
    "focused": ("focused", ""),
    "required": ("required", ""),
    "invalid": ("invalid", ""),
    "busy": ("busy", ""),
}
"""A state word of a sentence, and the state (then its opposite, for "not") a ``role``
check asks for."""

_STATES = "|".join(STATE_WORDS)
_STATE_SENTENCE = re.compile(rf"(?:the )?(.+?) (?:is|are) (not )?({_STATES})", re.I)
_VALUE_SENTENCE = re.compile(
    r"(?:the )?(.+?) (?:is|are) (?:at|set to) (?:(-?\d+(?:\.\d+)?)|['\"‘“]([^'\"’”]+)['\"’”])",
    re.I,
)
"""A value said as a number or in quotes ("is at 7", "is set to 'Rome'"): "is at the login
page" says no value."""
_EMPTY_SENTENCE = re.compile(r"(?:the )?(.+?) (?:is|are) (not )?empty", re.I)


class NotShown(Unresolved):
    """The element is there, not in the state or with the value the sentence says."""


def perceived_trigger(text: str, page: Observation) -> tuple[Check, set[str]] | None:
    """A ``role`` check for a sentence about one element's state or value, with the
    sentence's words the reading itself stands for; None when the sentence is of
    another kind."""
    if m := _STATE_SENTENCE.fullmatch(text):
        state, opposite = STATE_WORDS[m[3].lower()]
        wanted = opposite if m[2] else state
        if not wanted:
            raise Unresolved(f"{m[3]!r}, negated, is no state a check can ask for")
        entry, params, region = _entry(m[1], page)
        if not _has(entry, wanted):
            raise NotShown(f"{_said(entry)} is not {wanted}")
        return Check(type="role", params={**params, "state": wanted}), {
            m[3],
            *(m[2] or "").split(),
            *region,
        }
    if m := _EMPTY_SENTENCE.fullmatch(text):
        entry, params, region = _entry(m[1], page)
        value = str(entry.get("value", ""))
        if bool(value) != bool(m[2]):
            raise NotShown(
                f"{_said(entry)} holds {value!r}" if value else f"{_said(entry)} is empty"
            )
        check = Check(type="role", params={**params, "value": "", "negate": True} if m[2]
                      else {**params, "value": ""})  # fmt: skip
        return check, {"empty", *(m[2] or "").split(), *region}
    if m := _VALUE_SENTENCE.fullmatch(text):
        entry, params, region = _entry(m[1], page)
        if "value" not in entry and entry.get("role") not in ("slider", "spinbutton"):
            return None  # "the page is showing results": not a value
        value = (m[2] or m[3]).strip()
        if not _same(str(entry.get("value", "")), value):
            raise NotShown(f"{_said(entry)} is at {entry.get('value', '')!r}, not {value!r}")
        return Check(type="role", params={**params, "value": value}), {"at", "set", *region}
    return None


_REGION = re.compile(r"(.+?) (?:in|inside|within) (?:the |a |an )?([\w' ]+)", re.I)
"""An element said with the region it is in: "the Search box in the sidebar"."""


def _entry(phrase: str, page: Observation) -> tuple[dict[str, Any], dict[str, Any], set[str]]:
    """The page model's entry of the element ``phrase`` names, and its role and name as a
    check's parameters (its role and name shared by no other element), with the region
    it is said to be in ("in the sidebar": ``within`` that region's name); and the words
    of the region that name its kind (``sidebar``), stood for by this reading."""
    if (m := _REGION.fullmatch(phrase)) and (found := _in_region(m[1], m[2], page)):
        return found
    entry = _named(resolve(parse_target(phrase), page), page)
    role, name = entry.get("role"), entry["name"]
    if sum(1 for e in page.aria if e.get("role") == role and e.get("name") == name) > 1:
        raise Unresolved(f"several elements of the page are a {role} named {name!r}")
    return entry, {"role": role, "name": name}, set()


def _named(el: ObservedElement, page: Observation) -> dict[str, Any]:
    """The page model's entry of ``el``, which must have a name."""
    entry = next((e for e in page.aria if e.get("mmid") == el.mmid), None)
    if entry is None or not entry.get("name"):
        raise Unresolved(f"the page model has no name for {el.describe()}")
    return entry


REGION_ROLES: dict[str, tuple[str, ...]] = {
    "sidebar": ("complementary", "region"),
    "header": ("banner",),
    "footer": ("contentinfo",),
    "navigation": ("navigation",),
    "menu": ("navigation", "menu", "menubar"),
    "dialog": ("dialog", "alertdialog"),
    "popup": ("dialog", "alertdialog"),
    "form": ("form",),
    "toolbar": ("toolbar",),
}
"""A region a sentence names by its kind, and the roles it has."""


def _in_region(
    phrase: str, region: str, page: Observation
) -> tuple[dict[str, Any], dict[str, Any], set[str]] | None:
    """The element ``phrase`` names among those of the region ``region`` names (by its
    name, "the Filters group", or by its kind, "the sidebar"); None when no region of
    the page model so named holds one (the whole phrase may still name it)."""
    words = tokens(region)
    kinds = REGION_ROLES.get(region.split()[-1].lower(), ())
    aria = page.aria
    for i, around in enumerate(aria):
        name = str(around.get("name", ""))
        if not name or not (words <= tokens(name) or around.get("role") in kinds):
            continue
        inside = {e.get("mmid") for j, e in enumerate(aria) if i in page.around(j)}
        members = [el for el in page.elements if el.mmid in inside]
        with contextlib.suppress(Unresolved):
            sub = page.model_copy(update={"elements": members})
            entry = _named(resolve(parse_target(phrase), sub), page)
            kind = set() if words <= tokens(name) else set(region.split())
            return entry, {"role": entry["role"], "name": entry["name"], "within": name}, kind
    return None


CHECKABLE = {"checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"}
SELECTABLE = {"option", "tab", "row", "gridcell", "treeitem", "cell"}


def _has(entry: dict[str, Any], state: str) -> bool:
    """Whether the element is in ``state``. A negative state needs an element that can
    have the positive one (``browser/roles.js`` asks the same): a plain button is neither
    pressed nor "not pressed", and whether a button is a toggle the page model does not
    say, so "not pressed" is left to the readings of its attributes."""
    states = set(entry.get("states", ()))
    role = entry.get("role")
    if state == "unpressed":
        raise Unresolved("whether a button is a toggle the page model does not say")
    if state == "unchecked" and role not in CHECKABLE:
        raise Unresolved(f"a {role} is not checked or unchecked")
    if state == "unselected" and role not in SELECTABLE:
        raise Unresolved(f"a {role} is not selected or unselected")
    negative = {"unchecked": "checked", "unselected": "selected", "enabled": "disabled"}
    if state in negative:
        return negative[state] not in states and "mixed" not in states
    return state in states


def _same(actual: str, wanted: str) -> bool:
    try:
        return float(actual) == float(wanted)
    except ValueError:
        return " ".join(actual.split()) == " ".join(wanted.split())


def _said(entry: dict[str, Any]) -> str:
    return f"{entry.get('role')} {entry.get('name')!r}"
