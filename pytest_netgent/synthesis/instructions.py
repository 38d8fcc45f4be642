"""The builtin instruction rules: a literal instruction becomes browser actions.

"Navigate to {base_url}/login", "Click the 'Sign in' button", "Type {user} into the
Email field", "Search for QUIC", "Press Enter", "Wait 10 seconds", "Scroll down 3 times",
"Select 720p from the Quality menu", "Switch to the new tab", "Go back": each rule
parses the whole sentence and finds the element it names on the observed page
(:mod:`.elements`); a sentence no rule reads, or a target that is ambiguous or missing,
raises :class:`~pytest_netgent.synthesis.Unresolved`, it is never guessed.
"""

from __future__ import annotations

import re

from ..workflow.automaton import Action
from . import Context, Unresolved
from .elements import element_kind, locate, locator, resolve
from .observation import Observation, ObservedElement
from .waits import wait_actions
from .words import (
    KEY_NAMES,
    Target,
    canon,
    key_name,
    literal_form,
    parse_target,
    restore,
    stats_logging,
    templatise,
    unquote,
    video_sampling,
    webrtc_tracking,
    with_base,
)


def instruction_actions(ctx: Context, page: Observation, instruction: str) -> list[Action]:
    """The actions that carry out ``instruction`` on ``page``, its values kept as the
    placeholders they were written with; :class:`Unresolved` when no rule reads it."""
    literal, back = literal_form(instruction.strip(), ctx)
    return [
        a.model_copy(update={"params": restore(a.params, back)})
        for a in _actions(ctx, page, literal)
    ]


def _actions(ctx: Context, page: Observation, text: str) -> list[Action]:
    """Instructions about the page as a whole: navigate, wait, sample, press, scroll."""
    low = text.lower().rstrip(".")
    if re.fullmatch(r"(?:go|navigate) back|back", low):
        return [Action(type="go_back", params={})]
    if m := re.fullmatch(r"(?:navigate|go|open|visit|browse)(?: to)? (\S+)", text, re.I):
        return [Action(type="navigate", params={"url": with_base(unquote(m[1])[0], ctx)})]
    if (waits := wait_actions(text, page)) is not None:  # "Watch for 10 seconds"
        return waits
    if stats := stats_logging(text):
        return [stats]
    if sampling := video_sampling(low):
        return [sampling]
    if webrtc := webrtc_tracking(text):
        return [webrtc]
    if m := re.fullmatch(rf"press(?: the)? ({KEY_NAMES})(?: keys?)?(?: in (.+))?", low):
        params: dict[str, object] = {"key": key_name(m[1])}
        if m[2]:
            params |= locate(parse_target(text[m.start(2) :]), page)
        return [Action(type="press_key", params=params)]
    if m := re.fullmatch(
        r"scroll (down|up|left|right)(?: (\d+) times?| by (\d+) ?(?:px|pixels)?)?", low
    ):
        params = {"direction": m[1]}
        if m[2]:
            params["times"] = int(m[2])
        if m[3]:
            params["amount"] = int(m[3])
        return [Action(type="scroll", params=params)]
    if m := re.fullmatch(r"scroll to(?: the)? (.+)", text, re.I):
        return [Action(type="scroll_to", params=locate(parse_target(m[1]), page))]
    return _element_actions(ctx, page, text)


def _element_actions(ctx: Context, page: Observation, text: str) -> list[Action]:
    """Instructions that name an element: type, search, select, hover, switch, click."""
    low = text.lower().rstrip(".")
    if m := re.fullmatch(
        r"(?:search(?: for)?|look up) (.+?)(?: (?:in|on|using|with) (the .+))?", text, re.I
    ):
        # a search is typed into the page's search field (or the one named) and sent
        value = templatise(unquote(m[1])[0], ctx)
        loc = locate(parse_target(m[2] or "the search box"), page, want="text")
        return [
            Action(type="type", params={**loc, "text": value}),
            Action(type="press_key", params={"key": "Enter"}),
        ]
    if m := re.fullmatch(
        r"(?:type|enter|input|fill in|write) (.+?) (?:into|in|on) (.+)", text, re.I
    ):
        value = templatise(unquote(m[1])[0], ctx)
        loc = locate(parse_target(m[2]), page, want="text")
        return [Action(type="type", params={**loc, "text": value})]
    if m := re.fullmatch(r"(?:select|choose|pick) (.+?) (?:from|in) (.+)", text, re.I):
        return [_selection(page, unquote(m[1])[0], parse_target(m[2]))]
    if m := re.fullmatch(r"(?:hover|mouse)(?: over| on)? (.+)", text, re.I):
        return [Action(type="hover", params=locate(parse_target(m[1]), page))]
    if m := re.fullmatch(
        r"switch to(?: the)? (new|newest|last|latest|first|next|\d+)(?:st|nd|rd|th)? tab", low
    ):
        index = {"first": 0}.get(m[1], -1)
        if m[1].isdigit():
            index = int(m[1]) - 1
        return [Action(type="switch_tab", params={"index": index})]
    if m := re.fullmatch(r"(tick|check|untick|uncheck|clear)(?: the)? (.+)", text, re.I):
        return [_ticked(page, m[1].lower() in ("tick", "check"), parse_target(m[2]))]
    if m := re.fullmatch(r"(?:click|tap|press|open|select|choose)(?: on)? (.+)", text, re.I):
        return [Action(type="click", params=locate(parse_target(m[1]), page))]
    raise Unresolved(f"not a literal instruction the builtin synthesiser knows: {text!r}")


def _selection(page: Observation, option: str, target: Target) -> Action:
    """Choosing ``option`` from the menu ``target`` names (or the one menu offering it)."""
    el = _menu(target, option, page)
    if not el.options and el.role == "combobox" and el.tag != "select":
        # a combobox whose options exist only while it is open: replay opens it, waits for
        # them and picks this one by name (``browser/widgets.py``), or fails saying so
        return Action(type="select", params={**locator(el), "text": option})
    choice = next((o for o in el.options or [] if canon(o.text) == canon(option)), None)
    if choice is None:
        names = ", ".join(o.text for o in el.options or [])
        raise Unresolved(f"{el.describe()} has no option {option!r} (options: {names})")
    return Action(type="select", params={**locator(el), "text": choice.text})


def _ticked(page: Observation, ticked: bool, target: Target) -> Action:
    """Ticking (or clearing) the checkbox ``target`` names: a click, when the page model
    shows it the other way (a click on a box already so would undo it)."""
    el = resolve(target, page, want="checkbox")
    entry = next((e for e in page.aria if e.get("mmid") == el.mmid), None)
    if entry is None:
        raise Unresolved(f"the page model does not say whether {el.describe()} is ticked")
    if ("checked" in entry.get("states", ())) == ticked:
        said = "ticked" if ticked else "clear"
        raise Unresolved(f"{el.describe()} is {said} already: the instruction changes nothing")
    return Action(type="click", params=locate(target, page, want="checkbox"))


def _menu(target: Target, option: str, page: Observation) -> ObservedElement:
    menus = [e for e in page.elements if element_kind(e) == "select"]
    having = [e for e in menus if any(canon(o.text) == canon(option) for o in e.options or [])]
    if len(having) == 1:
        return having[0]
    return resolve(target, page, want="select")
