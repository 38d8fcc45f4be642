"""The checks a model may choose for a state's triggers, and how its choice is judged.

The candidates are checks that hold on the page now (its address, title, headings,
elements, and the texts the state's own words quote), each listed with the element it
finds; a choice is judged by the builtin's rule (:mod:`.grounding`): the checks chosen
stand for every word of every trigger.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from ..workflow.automaton import Check
from ..workflow.spec import StateSpec
from ..workflow.vocabulary import ROLES, STATES
from . import Context, Unresolved
from .elements import locator
from .grounding import Grounding, element_of, ground
from .observation import Observation
from .words import QUOTED, literal_form, templatise, unquote, varies_with


def listing(candidates: dict[str, Check], page: Observation) -> str:
    """The candidates as a prompt lists them: an element's check shows the element it
    finds (what it is is what it stands for)."""
    return "\n".join(
        f"{key}: {check.describe()}" + (f" ({el.describe()})" if el is not None else "")
        for key, check in candidates.items()
        for el in [element_of(check, page)]
    )


def short_of(
    state: StateSpec, checks: list[Check], page: Observation, ctx: Context
) -> list[Grounding]:
    """The triggers of ``state`` that ``checks`` do not stand for whole, on ``page``."""
    from .triggers import TriggerReader

    values = {**ctx.values, "base_url": ctx.base_url}
    short = []
    for trigger in (literal_form(t, ctx)[0] for t in state.triggers):
        if (grounding := ground(trigger, checks, page, values=values)).whole:
            continue
        try:  # the rules' own reading, grounded whole by them ("at least one result")
            own = TriggerReader().read(ctx, page, trigger)
        except Unresolved:
            own = []
        if not own or any(c not in checks for c in own):
            short.append(grounding)
    return short


def candidate_checks(ctx: Context, page: Observation, said: str = "") -> dict[str, Check]:
    """Checks that hold on ``page``, numbered ``c1``, ``c2``... for the model to choose
    (none that holds only for this item's parameter values, unless the state's own words
    ``said`` name them)."""
    out: list[Check] = []
    url = templatise(page.url, ctx)
    out.append(Check(type="url", params={"url": url}))
    path = urlsplit(page.url).path
    if "?" in url:
        out.append(Check(type="url", params={"url": url.split("?")[0] + "?", "match": "prefix"}))
    elif path.count("/") >= 2 and not path.endswith("/"):
        folder = url[: url.rindex("/") + 1]
        out.append(Check(type="url", params={"url": folder, "match": "prefix"}))
    if page.title:
        out.append(Check(type="title", params={"title": page.title, "match": "exact"}))
    for heading in page.headings[:8]:
        if heading.selectors:
            sel = heading.selectors[0]
            out.append(Check(type="element", params={"by": sel.by, "selector": sel.selector}))
        out.append(Check(type="text", params={"text": heading.text}))
    for el in page.elements[:60]:
        loc = locator(el)
        loc.pop("index", None)
        out.append(Check(type="element", params=loc))
    out += _query_candidates(page, ctx)
    out += _model_candidates(page, said)
    for quoted in QUOTED.finditer(said):
        # a text the state's own words quote, where the page shows it ("The page says
        # 'Pick a tab'"): the check that stands for it
        text = literal_form(unquote(quoted[0])[0], ctx)[0]
        if text and text in page.text:
            out.append(Check(type="text", params={"text": templatise(text, ctx)}))
    unique: list[Check] = []
    for check in out:
        # a check carrying this item's parameter value would not hold for the others
        if check not in unique and varies_with(check.params, ctx, said) is None:
            unique.append(check)
    return {f"c{i}": c for i, c in enumerate(unique, 1)}


def _query_candidates(page: Observation, ctx: Context) -> list[Check]:
    """``url`` contains each of the address's query parameters (``q={query}``): a search
    results page whatever else its address holds."""
    query = urlsplit(page.url).query
    out = []
    for pair in query.split("&")[:4] if query else []:
        if "=" in pair and pair.split("=", 1)[1]:
            out.append(
                Check(type="url", params={"url": templatise(pair, ctx), "match": "contains"})
            )
    return out


MOST_MODEL_CANDIDATES = 40
"""Most checks offered from the page model (role and media checks)."""

_SAID_ROLES = {"dialog", "alertdialog", "alert", "status", "progressbar", "video", "audio"}
"""Roles a trigger may say are gone ("the dialog is closed"): offered negated when absent."""


def _model_candidates(page: Observation, said: str) -> list[Check]:
    """Role and media checks that hold on ``page`` as its users perceive it (the page
    model): each named element by role and name, with its states and value when it has
    them; the count of a list's items; each video's playback; and, for a role the state's
    words name that the page does not show, its absence."""
    out: list[Check] = []
    entries = page.aria
    seen_roles = {str(e.get("role")) for e in entries}
    words = set(re.findall(r"[a-z]+", said.lower()))
    for e in entries:
        role, name = str(e.get("role", "")), str(e.get("name", ""))
        if role in ("text", "generic", "iframe", "none") or not name or role not in ROLES:
            continue
        base: dict[str, Any] = {"role": role, "name": name[:120]}
        out.append(Check(type="role", params=base))
        states = [s for s in e.get("states", []) if s in STATES and s != "focused"]
        if states:
            out.append(Check(type="role", params={**base, "state": states}))
        if e.get("value") and e.get("editable") != "richtext":
            out.append(Check(type="role", params={**base, "value": str(e["value"])[:120]}))
    counts: dict[str, int] = {}
    for e in entries:
        if e.get("role") in ("listitem", "row", "option", "article"):
            counts[str(e["role"])] = counts.get(str(e["role"]), 0) + 1
    for role, count in counts.items():
        if count > 1:
            out.append(Check(type="role", params={"role": role, "at_least": count}))
    for e in entries:
        media = e.get("media")
        if isinstance(media, dict):
            state = "playing" if media.get("playing") else "paused" if media.get("paused") else ""
            if state:
                out.append(Check(type="media", params={"state": state}))
            if media.get("height"):
                out.append(Check(type="media", params={"min_height": int(media["height"])}))
    for role in sorted(_SAID_ROLES & words - seen_roles):
        out.append(Check(type="role", params={"role": role, "negate": True}))
    return out[:MOST_MODEL_CANDIDATES]
