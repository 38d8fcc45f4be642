"""Finding the element a target names on an observed page: scored by accessible name,
label, placeholder, visible text and role, the best unique one wins; and the locator a
check or action keeps for it."""

from __future__ import annotations

import re
from typing import Any

from ..workflow.automaton import ACTION_PARAMS, Action
from . import Context, NotOnPage, Unresolved
from .observation import Heading, Observation, ObservedElement, Selector
from .words import GENERIC_NOUNS, TEXT_INPUT_TYPES, Target, canon, tokens, varies_with


def element_kind(el: ObservedElement) -> str:
    tag, role = el.tag, el.role
    if tag == "select" or role in ("combobox", "listbox"):
        return "select"
    if (
        tag == "textarea"
        or role in ("textbox", "searchbox")
        or el.attrs.get("contenteditable") == "true"
    ):
        return "text"
    if tag == "input":
        kind = el.attrs.get("type", "").lower()
        if kind in TEXT_INPUT_TYPES:
            return "text"
        if kind in ("checkbox", "radio"):
            return "checkbox"
        return "button"
    if tag == "a" or role == "link":
        return "link"
    return "button" if tag in ("button", "summary") or role in ("button", "tab") else "other"


def _fields(el: ObservedElement) -> list[str]:
    out = [el.name, el.label, el.text]
    for attr in ("placeholder", "aria-label", "title", "value", "name", "id", "data-testid"):
        if attr in el.attrs:
            out.append(el.attrs[attr].replace("-", " ").replace("_", " "))
    return [f for f in out if f]


def _score(target: Target, texts: list[str]) -> float:
    phrase = canon(target.phrase)
    want = tokens(target.phrase)
    best = 0.0
    for raw in texts:
        field = canon(raw)
        if not field:
            continue
        if field == phrase:
            score = 100.0
        elif phrase and re.search(rf"(^| ){re.escape(phrase)}( |$)", field):
            score = 80.0 - min(15.0, (len(field) - len(phrase)) / 4)
        elif len(field) >= 3 and re.search(rf"(^| ){re.escape(field)}( |$)", phrase):
            score = 65.0
        elif want:
            have = tokens(raw)
            score = 55.0 * len(want & have) / len(want) if want & have else 0.0
        else:
            score = 0.0
        best = max(best, score)
    return best


def _role_fit(target: Target, el: ObservedElement) -> float:
    kind = element_kind(el)
    if not target.role:
        return 0.0
    if target.role == el.role and target.role not in ("button", "link"):
        return 20.0  # "the Catalogue tab": the element the page calls a tab, over a button
    if target.role == kind or (target.role == "button" and kind == "link" and el.role):
        return 15.0
    if target.role == "text" and kind != "text":
        return -40.0
    if target.role == "select" and kind != "select":
        return -40.0
    if target.role == "form":
        return 15.0 if el.region == "form" else -10.0
    return -15.0


def _pick(
    scored: list[tuple[float, ObservedElement]], what: str, page: Observation
) -> ObservedElement:
    scored = sorted(scored, key=lambda p: (-p[0], p[1].mmid))
    weighed = [(round(s, 1), e.mmid) for s, e in scored[:8]]
    if not scored or scored[0][0] < 40:
        near = ", ".join(e.describe() for _, e in scored[:3]) or "no candidates"
        raise NotOnPage(f"no element on {page.url} matches {what} (closest: {near})", weighed)
    best_score, best = scored[0]
    rivals = [e for s, e in scored[1:] if s >= best_score - 8]
    if rivals:
        names = ", ".join(e.describe() for e in [best, *rivals[:3]])
        raise Unresolved(
            f"{what} is ambiguous on {page.url}: {names}; name it more precisely", weighed
        )
    return best


def resolve(target: Target, page: Observation, want: str = "") -> ObservedElement:
    """The one element ``target`` names on ``page``; ``want`` filters by kind."""
    what = f"{target.phrase!r}" + (f" ({target.role})" if target.role else "")
    candidates = [e for e in page.elements if not want or element_kind(e) == want]
    if target.owner:
        return _resolve_owned(target, candidates, page, what)
    if target.ordinal is not None:
        return _resolve_ordinal(target, candidates, page, what)
    return _pick(_sized(target, _scored(target, candidates)), what, page)


SIZES = {"large": 1, "big": 1, "huge": 1, "larger": 1, "bigger": 1, "small": -1, "little": -1,
         "tiny": -1, "smaller": -1}  # fmt: skip
"""Words that tell like elements apart by their size on the screen."""


def _area(el: ObservedElement) -> int:
    return el.box.width * el.box.height if el.box is not None else 0


def _sized(
    target: Target, scored: list[tuple[float, ObservedElement]]
) -> list[tuple[float, ObservedElement]]:
    """``scored``, where the phrase says a size ("the large Play button") and the best
    candidates tie: the one drawn at least twice the area of each other (or half, for
    "small") comes first, clear of them. The words say how it looks, not which it is
    by name; a size no element clearly has leaves the tie as it was."""
    sign = next((SIZES[w] for w in target.phrase.lower().split() if w in SIZES), 0)
    if not sign or not scored:
        return scored
    best = max(s for s, _ in scored)
    tied = [(s, e) for s, e in scored if s >= best - 8]
    if len(tied) < 2 or any(e.box is None for _, e in tied):
        return scored
    by_area = sorted(tied, key=lambda p: -sign * _area(p[1]))
    first, second = _area(by_area[0][1]), _area(by_area[1][1])
    if (sign > 0 and first < 2 * second) or (sign < 0 and 2 * first > second):
        return scored
    winner = by_area[0][1]
    return [(best + 10 if e is winner else s, e) for s, e in scored]


def _scored(
    target: Target, candidates: list[ObservedElement]
) -> list[tuple[float, ObservedElement]]:
    """Each candidate that ``target``'s words name, with its score (a kind of element
    alone, "the editor", names every element of that kind)."""
    scored = []
    for el in candidates:
        if target.role_only:
            if element_kind(el) == target.role or el.role == target.role:
                scored.append((60.0, el))
            continue
        score = _score(target, _fields(el))
        if score > 0:
            score += _role_fit(target, el) + _container_fit(target, el)
            if target.quoted and score < 95:
                score -= 10  # a quoted name should match as written
            scored.append((score, el))
    return scored


def _container_fit(target: Target, el: ObservedElement) -> float:
    """ "... in the navigation": elements in a region, host, frame or list so named."""
    if not target.container:
        return 0.0
    where = " ".join([el.region, el.within, el.group.selector if el.group else ""])
    return 12.0 if tokens(target.container) & tokens(re.sub(r"[^A-Za-z]+", " ", where)) else 0.0


def _resolve_owned(
    target: Target, candidates: list[ObservedElement], page: Observation, what: str
) -> ObservedElement:
    """ "the first row's View link": the elements the name fits best, the ordinal-th of
    them in page order (without an ordinal, the only one)."""
    what += f" of a {target.owner}"
    scored = _scored(target, candidates)
    if target.ordinal is None:
        return _pick(scored, what, page)
    best = max((score for score, _ in scored), default=0.0)
    named = sorted((e for score, e in scored if score >= max(40.0, best - 8)), key=lambda e: e.mmid)
    if not named:
        near = ", ".join(e.describe() for _, e in sorted(scored, key=lambda p: -p[0])[:3])
        raise NotOnPage(f"no element on {page.url} matches {what} (closest: {near or 'none'})")
    if not -len(named) <= target.ordinal < len(named):
        raise Unresolved(f"{what}: {page.url} has only {len(named)} of them")
    return named[target.ordinal]


def _resolve_ordinal(
    target: Target, candidates: list[ObservedElement], page: Observation, what: str
) -> ObservedElement:
    groups: dict[str, list[ObservedElement]] = {}
    for el in candidates:
        if el.group is not None:
            groups.setdefault(el.group.selector, []).append(el)
    if not groups:
        raise NotOnPage(f"no list of similar items on {page.url} for {what}")
    noun = tokens(target.phrase) - GENERIC_NOUNS

    def score(items: list[ObservedElement]) -> tuple[float, int]:
        sel = items[0].group.selector if items[0].group else ""
        words = tokens(re.sub(r"[^A-Za-z]+", " ", sel)) | tokens(" ".join(_fields(items[0])))
        s = 50.0 * len(noun & words) / len(noun) if noun else 30.0
        s += 20.0 if items[0].region == "main" else 0.0
        s += 10.0 if element_kind(items[0]) in ("link", "button") else 0.0
        return s, len(items)

    ranked = sorted(groups.values(), key=lambda g: score(g), reverse=True)
    if score(ranked[0])[0] < 50:
        raise Unresolved(
            f"no list on {page.url} looks like {what} (lists: "
            + ", ".join(repr(g[0].group.selector) for g in ranked[:3] if g[0].group)
            + ")"
        )
    if len(ranked) > 1 and score(ranked[0]) == score(ranked[1]):
        raise Unresolved(
            f"{what} is ambiguous on {page.url}: lists "
            + ", ".join(repr(g[0].group.selector) for g in ranked[:3] if g[0].group)
        )
    items = ranked[0]
    index = target.ordinal if target.ordinal is not None else 0
    if not -len(items) <= index < len(items):
        raise Unresolved(f"{what}: the list on {page.url} has only {len(items)} items")
    return items[index]


def locator(el: ObservedElement, *, in_list: bool = False) -> dict[str, object]:
    """``by``/``selector`` params for ``el``; with ``in_list`` (an ordinal target, or an
    element without a stable selector of its own) its list's selector and ``index``."""
    if el.group is not None and (in_list or el.best is None or not el.best.stable):
        return {"by": "css selector", "selector": el.group.selector, "index": el.group.index}
    best = el.best
    if best is None:
        raise Unresolved(f"no unique selector for {el.describe()}")
    return {"by": best.by, "selector": best.selector}


MAX_ALTERNATIVES = 3
"""How many other locators an action keeps for healing."""


def with_alternatives(action: Action, page: Observation, ctx: Context) -> Action:
    """``action`` with its element's other stable locators as ``alternatives`` (as the
    page was observed when synthesis chose it), which a heal tries before synthesising:
    none for an element found by its place in a list, none that carries a parameter's
    value (it would name this item's element only) or a secret."""
    params = action.params
    optional = ACTION_PARAMS.get(action.type, ((), ()))[1]
    if "alternatives" not in optional or "alternatives" in params or "index" in params:
        return action
    if "selector" not in params:
        return action
    primary = (params.get("by", "css selector"), params["selector"])
    el = next(
        (e for e in page.elements if primary in {(s.by, s.selector) for s in e.selectors}), None
    )
    if el is None:
        return action
    others = [
        {"by": s.by, "selector": s.selector}
        for s in el.selectors
        if s.stable
        and (s.by, s.selector) != primary
        and ctx.redact(s.selector) == s.selector
        and varies_with({"selector": s.selector}, ctx) is None
    ][:MAX_ALTERNATIVES]
    named = with_role(params, el, page, ctx)
    if not others:
        return action if named is params else action.model_copy(update={"params": named})
    return action.model_copy(update={"params": {**named, "alternatives": others}})


def with_role(
    params: dict[str, Any], el: ObservedElement, page: Observation, ctx: Context
) -> dict[str, Any]:
    """``params`` with ``el``'s role and accessible name (the page model's, as replay will
    compute them) put first, when no other element of the page has both: replay finds it
    so, its selector kept as the fallback, and a cosmetic change of ids and classes does
    not lose it. Not for a name that carries a parameter's value or a secret."""
    entries = [e for e in page.aria if e.get("role") and e.get("name")]
    mine = next((e for e in entries if e.get("mmid") == el.mmid), None)
    if mine is None or mine["role"] in ("text", "iframe", "generic"):
        return params
    same = [e for e in entries if (e["role"], e["name"]) == (mine["role"], mine["name"])]
    name = str(mine["name"])
    if len(same) != 1 or ctx.redact(name) != name or varies_with({"name": name}, ctx) is not None:
        return params
    return {"role": mine["role"], "name": name, **params}


def previously(ctx: Context) -> str:
    """The state's actions as cached before the page changed, each with the other
    locators record kept for its element (``alternatives``), for a heal: the model looks
    for the same elements under their new names. ``(none: a new state)`` otherwise."""
    lines = []
    for action in ctx.before:
        line = "- " + action.describe()
        known = action.params.get("alternatives")
        others = [
            f"{a.get('by', 'css selector')}={a['selector']!r}"
            for a in (known if isinstance(known, list) else [])
            if isinstance(a, dict) and "selector" in a
        ]
        if others:
            line += " (its element was also " + ", ".join(others) + ")"
        lines.append(ctx.redact(line))
    return "\n".join(lines) or "(none: a new state)"


def locate(target: Target, page: Observation, want: str = "") -> dict[str, object]:
    """Resolve ``target`` and return its locator params (group and index for ordinals)."""
    listed = target.ordinal is not None and not target.owner  # the owned: its own selector
    loc = locator(resolve(target, page, want), in_list=listed)
    if listed:
        loc["index"] = target.ordinal  # "the last result" stays the last one
    return loc


def heading_for(target: Target, page: Observation) -> tuple[Heading, bool]:
    """The heading ``target`` names by its text (True), or for "the heading" (role only,
    or a description like "an article heading"), the page's only top heading (False)."""
    scored = [(_score(target, [h.text]), h) for h in page.headings]
    scored = [p for p in scored if p[0] >= 60]
    if scored:
        scored.sort(key=lambda p: -p[0])
        return scored[0][1], True
    tops = [h for h in page.headings if h.tag == "h1"] or page.headings[:1]
    if target.role == "heading" and len(tops) == 1:
        return tops[0], False
    raise Unresolved(f"no heading on {page.url} matches {target.phrase!r}")


# ------------------------------------------------------------------------ templates


def first_stable(selectors: list[Selector]) -> Selector | None:
    return next((s for s in selectors if s.stable), None)
