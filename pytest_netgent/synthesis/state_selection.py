"""The builtin state selection: which declared state applies to the page.

Each candidate's triggers are read by the builtin trigger rules (:mod:`.triggers`) and
judged on the page as observed: ``yes`` (they parse and hold), ``partial`` (some hold,
the others do not parse), ``weak`` (they hold only by this very page's address),
``unknown`` (none parses) or ``no``. Workflows are written in order, so the state
declared after the last one that ran wins when its triggers may hold; an end state is
taken only when its triggers hold (a guess would be a false pass), and a state that
already ran is not taken again on less while the page may still settle
(:class:`~pytest_netgent.synthesis.NothingApplies`).
"""

from __future__ import annotations

import re
from typing import Any

from ..browser.session import NETGENT_START_PAGE, START_PAGES
from ..workflow.automaton import Check
from ..workflow.spec import PLACEHOLDER, StateSpec
from . import Context, NothingApplies, Unresolved
from .grounding import ground
from .observation import Observation
from .triggers import NotHolding, TriggerReader, check_values
from .words import literal_form


class StateSelector:
    """Chooses among candidate states by their triggers, read literally (see the
    module's doc); it keeps no state."""

    def __init__(self, reader: TriggerReader | None = None) -> None:
        self.reader = reader if reader is not None else TriggerReader()

    def select(self, ctx: Context, page: Observation, candidates: list[StateSpec]) -> StateSpec:
        """The state that applies (:class:`NothingApplies` when none does, or when a
        guess would run a state again while the page may still settle)."""
        verdicts = {spec.name: self._applies(ctx, page, spec) for spec in candidates}
        return self._choose(ctx, page, candidates, verdicts)

    def verdict(self, ctx: Context, page: Observation, spec: StateSpec) -> str:
        """Whether ``spec``'s triggers hold on ``page``, as far as these rules read them:
        ``yes``, ``partial``, ``weak``, ``unknown`` or ``no`` (see :meth:`_applies`)."""
        return self._applies(ctx, page, spec)[0]

    def confirmed(self, ctx: Context, page: Observation, spec: StateSpec) -> list[str]:
        """The triggers of ``spec`` that these rules read and that hold on ``page`` by
        what it shows (an address that holds only because it was taken from this very
        page confirms nothing); none if a trigger is read and does not hold."""
        read = self._read(ctx, page, spec)
        if any(level == "no" for _, level, _ in read):
            return []
        return [trigger for trigger, level, _ in read if level == "yes"]

    def _choose(
        self,
        ctx: Context,
        page: Observation,
        candidates: list[StateSpec],
        verdicts: dict[str, tuple[str, str]],
    ) -> StateSpec:
        level = {name: verdict for name, (verdict, _) in verdicts.items()}
        # An end state passes the item: it is chosen only when its triggers hold on this
        # page (all, or those that parse), never on a guess (that would be a false pass).
        guessed_ends = [s for s in candidates if s.end and level[s.name] in ("unknown", "no")]
        rest = [s for s in candidates if s not in guessed_ends]
        weighed = "; ".join(
            f"{s.name!r} ({level[s.name]}{', an end state' if s.end else ''}: "
            f"{verdicts[s.name][1]})"
            for s in candidates
        )
        # Workflows are written in order: the state declared after the last one that ran
        # (the first, at the start) wins when its triggers may hold.
        upcoming = _next_in_order(rest, ctx)
        if upcoming is not None and level[upcoming.name] == "yes":
            return upcoming
        if upcoming is not None and level[upcoming.name] != "no":
            # unless none of its triggers could be read and a state declared later is
            # verified (its triggers hold, all or those that parse)
            later = _later(rest, ctx)
            better = [s for v in ("yes", "partial") for s in later if level[s.name] == v]
            return better[0] if level[upcoming.name] == "unknown" and better else upcoming
        for verdict in ("yes", "partial", "weak", "unknown"):
            options = [s for s in rest if level[s.name] == verdict]
            if options:
                choice = _after_history(options, ctx)
                back = ctx.history and choice not in _later(candidates, ctx)
                if verdict != "yes" and back and ctx.looked < ctx.settle:
                    raise NothingApplies(
                        f"{choice.name!r} would run again on {page.url} ({verdict}) while "
                        f"the page may still settle; weighed {weighed}"
                    )
                return choice
        raise NothingApplies(
            f"no state applies on {page.url}; weighed {weighed} (an end state is taken only "
            "when its triggers hold: write them literally, \"The page says '...'\")"
        )

    def _read(self, ctx: Context, page: Observation, spec: StateSpec) -> list[tuple[str, str, str]]:
        """Each trigger of ``spec`` as read on ``page``, with why: ``yes`` (it holds),
        ``weak`` (only by this very page's address), ``unknown`` (it does not parse) or
        ``no`` (it does not hold; the last one read)."""
        read: list[tuple[str, str, str]] = []
        for trigger in spec.triggers:
            try:
                checks = self.reader.read(ctx, page, literal_form(trigger, ctx)[0])
            except NotHolding as exc:
                return [*read, (trigger, "no", f"{trigger!r}: {exc.reason}")]
            except Unresolved as exc:
                read.append((trigger, "unknown", f"{trigger!r}: {exc.reason}"))
                continue
            if failing := [c.describe() for c in checks if not holds_on(c, page, ctx)]:
                return [*read, (trigger, "no", f"{trigger!r}: {', '.join(failing)} does not hold")]
            read.append(
                (trigger, "weak" if self._pinned(ctx, page, trigger, checks) else "yes", trigger)
            )
        return read

    def _pinned(self, ctx: Context, page: Observation, trigger: str, checks: list[Check]) -> bool:
        """Whether ``checks`` hold on ``page`` partly by its own address, a pin that says
        none of ``trigger``'s words (the other checks stand for them all): such a trigger
        holds on this page because it was read here."""
        landmark = self.reader.url_landmark(ctx, page)
        if landmark not in checks:
            return False
        rest = [c for c in checks if c != landmark]
        text = literal_form(trigger, ctx)[0]
        return not rest or ground(text, rest, page, values=check_values(ctx)).whole

    def _applies(self, ctx: Context, page: Observation, spec: StateSpec) -> tuple[str, str]:
        """``yes`` (triggers parse and hold), ``partial`` (some hold, the others do not
        parse), ``weak`` (they hold only by landmarks taken from this very page),
        ``unknown`` (none parses) or ``no``; and why, naming the trigger."""
        if not spec.triggers:
            return "unknown", "it has no triggers"
        levels: dict[str, str] = {}
        for _, level, why in self._read(ctx, page, spec):
            if level == "no":
                return "no", why
            levels.setdefault(level, why)
        if "unknown" in levels:
            level = "partial" if "yes" in levels else "unknown"
            return level, f"{levels['unknown']}"
        if "weak" in levels:
            return "weak", f"{levels['weak']!r} holds only by this page's own address"
        return "yes", "its triggers hold"


def _later(options: list[StateSpec], ctx: Context) -> list[StateSpec]:
    """``options`` declared after the last state that ran, in declared order."""
    if not ctx.history or ctx.history[-1] not in ctx.order:
        return options
    position = ctx.order.index(ctx.history[-1])
    return [s for s in options if s.name in ctx.order and ctx.order.index(s.name) > position]


def _next_in_order(candidates: list[StateSpec], ctx: Context) -> StateSpec | None:
    later = _later(candidates, ctx)
    return later[0] if later else None


def _after_history(options: list[StateSpec], ctx: Context) -> StateSpec:
    """Prefer the first option declared after the last state that ran."""
    later = _later(options, ctx)
    return later[0] if later else options[0]


def holds_on(check: Check, page: Observation, ctx: Context) -> bool:
    """Whether ``check`` holds on ``page`` as read (not in a browser): URL, title and text
    checks judged; any other (an element's) taken to hold, as synthesis found its element
    on that very page. Ranks candidates; the recorder verifies in the page."""
    values = check_values(ctx)
    p = {
        k: PLACEHOLDER.sub(lambda m: values.get(m[1], m[0]), v) if isinstance(v, str) else v
        for k, v in check.params.items()
    }
    said = _said(check.type, p, page)
    if said is None:
        return True  # elements were resolved on this very page
    return not said if p.get("negate") is True else said


def _said(kind: str, p: dict[str, Any], page: Observation) -> bool | None:
    """Whether a URL, title or text check holds on ``page`` as read (None: another kind)."""
    if kind == "url":
        url, href, match = str(p["url"]), page.url, str(p.get("match", "exact"))
        if url == NETGENT_START_PAGE and match == "exact":
            return href in START_PAGES  # whichever start page the browser shows (checks.js)
        if p.get("ignore_query") is True and match != "pattern":
            url, href = url.split("?")[0], href.split("?")[0]
        return _compare(href, url, match)
    if kind == "title":
        return _compare(page.title, str(p["title"]), str(p.get("match", "contains")))
    if kind == "text":
        return str(p["text"]) in page.text
    return None


def _compare(actual: str, expected: str, match: str) -> bool:
    """``actual`` against ``expected`` as the engine compares them (``checks.js``)."""
    if match == "exact":
        return actual == expected
    if match == "prefix":
        return actual.startswith(expected)
    if match == "pattern":
        return re.search(expected, actual) is not None
    return expected in actual
