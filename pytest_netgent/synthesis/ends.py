"""When a synthesiser's choice of a state for a page is a guess, or would undo a state.

An end state passes the item, so a recording that takes one on the wrong page reports
success for a run that never did what the workflow says (a model that took a shop's
search results for the product page). The builtin state selection reads the states'
triggers literally (:meth:`~.state_selection.StateSelector.verdict`) and judges the
choice; a page that shows nothing else than where a state of this run was made cannot
confirm an end either (a model whose actions clicked a link to the same page, then took
the login form for "the group was added"). Nor is any state taken that would skip one
declared before it which the page shows (:func:`skipped`: a model that took a wiki's
search results for the article to like, then clicked the search button and took that
page for "liked").

A state made earlier in the run and chosen again on another page gets checks for this
page: they replace those it was made with, so in replay it would no longer take its
first page (a model that took a shop's search results for its catalog). Only checks
that its first page, as read then, also passes may stand, and each page it was chosen on
since (:func:`also_where_made`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..workflow.automaton import Check
from ..workflow.spec import StateSpec
from . import Context
from .observation import Observation, same_page
from .state_selection import StateSelector, holds_on


def end_guessed(
    ctx: Context,
    page: Observation,
    spec: StateSpec,
    candidates: list[StateSpec],
    made: Mapping[str, list[Observation]] | None = None,
) -> bool:
    """Whether taking end state ``spec`` on ``page`` is a guess: its triggers, read
    literally, do not hold here; or nothing on the page confirms them while it would end
    the run on its first page with states that lead somewhere on offer, or would skip a
    state the page shows (:func:`skipped`), or the page shows nothing else than when a
    state of this run was made on it (``made``: the pages each was made on; the actions
    since changed nothing the end could be)."""
    judge = StateSelector()
    verdict = judge.verdict(ctx, page, spec)
    if verdict in ("yes", "no"):
        return verdict == "no"
    if any(same_page(before, page) for pages in (made or {}).values() for before in pages):
        return True
    if not ctx.history:
        return any(not c.end for c in candidates)
    return bool(skipped(ctx, page, spec, candidates))


def skipped(ctx: Context, page: Observation, spec: StateSpec, candidates: list[StateSpec]) -> str:
    """The state that taking ``spec`` on ``page`` would skip although the page shows it
    ("" if none): one declared before ``spec`` and after the last state that ran, whose
    triggers, read literally, hold here; or one of whose triggers holds by what the page
    shows while none of ``spec``'s does (a model that took a wiki's search results, whose
    list is there, for the article they lead to: both read as 'this page's address').
    Nothing is skipped by a state whose own triggers hold here."""
    judge = StateSelector()
    if judge.verdict(ctx, page, spec) == "yes":
        return ""
    order = ctx.order
    last = order.index(ctx.history[-1]) if ctx.history and ctx.history[-1] in order else -1
    mine = order.index(spec.name) if spec.name in order else len(order)
    between = [
        c for c in candidates if not c.end and c.name in order and last < order.index(c.name) < mine
    ]
    for other in between:
        if judge.verdict(ctx, page, other) == "yes":
            return other.name
    if between and not judge.confirmed(ctx, page, spec):
        for other in between:
            if judge.confirmed(ctx, page, other):
                return other.name
    return ""


JUDGED = ("url", "title", "text")
"""Checks that a page as read (its address, title and text) can confirm."""


def also_where_made(ctx: Context, checks: list[Check], before: list[Observation]) -> list[Check]:
    """Of ``checks``, made for a state chosen again on another page, those that also
    hold on each page of ``before``, the pages it was made on until now (an element's
    check cannot be judged there, and is left out)."""
    return [c for c in checks if c.type in JUDGED and all(holds_on(c, b, ctx) for b in before)]
