"""The picked synthesiser: a person's picks answer first, another synthesiser the rest.

A recording run with a picks file (:mod:`.picks`) asks it first: an instruction a
person answered in the studio acts on the picked element, found on the live page by its
selectors; a state picked by one of its elements is taken where that element shows,
with the element as its trigger. Everything else goes to the inner synthesiser (the
builtin rules, a model, or both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..workflow.automaton import Action, Check
from ..workflow.spec import StateSpec
from . import Context, NotOnPage, Synthesiser, Unresolved, Usage
from .observation import Observation, Selector
from .picks import TEXT_ACTIONS, Pick, Picks


class PickedSynthesiser:
    """``inner``, except for the instructions a person answered in ``picks``: those act
    on the picked element, found on the live page by its selectors."""

    def __init__(self, inner: Synthesiser, picks: Picks) -> None:
        self.inner = inner
        self.picks = picks
        self.name = inner.name
        self.vision = bool(getattr(inner, "vision", False))
        self.used: list[Pick] = []
        self.vouched = ""
        """The state the last :meth:`select_state` took on a person's word (it is not a
        guess: an end state so chosen ends the run though its triggers' words do not
        hold)."""

    @property
    def usage(self) -> Usage:
        """The inner synthesiser's counts (a pick counts as a step the rules resolved)."""
        return self.inner.usage

    def select_state(
        self, ctx: Context, page: Observation, candidates: list[StateSpec]
    ) -> StateSpec:
        """A candidate picked by an element this page shows, else the inner choice."""
        self.vouched = ""
        for pick in self.picks.states():
            spec = next((c for c in candidates if c.name == pick.state), None)
            if spec is not None and _on_page(pick, page) is not None:
                self.vouched = spec.name
                return spec
        return self.inner.select_state(ctx, page, candidates)

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        """The picked element, shown, for a state picked by it; else the inner checks."""
        for pick in self.picks.states():
            found = _on_page(pick, page) if pick.state == state.name else None
            if found is not None:
                self._used(pick)
                return [Check(type="element", params={"by": found.by, "selector": found.selector})]
        return self.inner.define_triggers(ctx, page, state)

    def _used(self, pick: Pick) -> None:
        self.inner.usage.builtin_steps += 1
        if pick not in self.used:
            self.used.append(pick)

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        """The picked action for a picked instruction (once), else the inner answer."""
        pick = self.picks.get(state.name, instruction)
        if pick is None or done:
            return self.inner.resolve_instruction(ctx, page, state, instruction, done)
        if ctx.failed:  # the page refused the picked action: not tried again and again
            raise Unresolved(f"the action picked in the studio failed: {ctx.failed[-1]}")
        found = _on_page(pick, page)
        if found is None:
            raise NotOnPage(
                f"the element picked in the studio ({pick.description or 'no description'}; "
                f"{pick.selectors[0].selector}) is not on {page.url}: pick again with "
                "netgent studio on the new pick.json"
            )
        # (record adds the element's other locators, as for every action it makes)
        params: dict[str, object] = {"by": found.by, "selector": found.selector}
        if pick.action in TEXT_ACTIONS:
            params[TEXT_ACTIONS[pick.action]] = pick.text
        self._used(pick)
        return [Action(type=pick.action, params=params)], True


def _on_page(pick: Pick, page: Observation) -> Selector | None:
    """The selector of ``pick``'s element as the page has it now: one of its selectors
    that an element observed now has (that one is unique on the page)."""
    wanted = {(s.by, s.selector) for s in pick.selectors}
    for el in page.elements:
        for sel in el.selectors:
            if (sel.by, sel.selector) in wanted:
                return sel
    return None


if TYPE_CHECKING:
    _implements: type[Synthesiser] = PickedSynthesiser
