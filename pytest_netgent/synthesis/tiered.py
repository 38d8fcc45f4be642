"""The tiered synthesiser, the default policy: builtin rules first, a model for the rest.

Each question goes to the builtin rules (:mod:`.builtin`) first; only what they decline
goes to the model (:mod:`.llm`). A page on which no state applies yet is read again
while it may still settle before the model is asked; an instruction the model started
is finished by it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..workflow.automaton import Action, Check
from ..workflow.spec import StateSpec
from . import Context, NothingApplies, Unresolved, Usage
from .builtin import BuiltinSynthesiser
from .llm import LLMSynthesiser
from .observation import Observation

if TYPE_CHECKING:
    from . import Synthesiser


class TieredSynthesiser:
    """Builtin rules first; only what they decline goes to the LLM. The builtin decides
    whatever it would decide alone (its landmarks for a vague trigger, the state declared
    next), so an item records at least as well as with the builtin alone."""

    def __init__(self, builtin: BuiltinSynthesiser, llm: LLMSynthesiser) -> None:
        self.builtin = builtin
        self.llm = llm
        self.name = llm.name
        self.vision = llm.vision

    @property
    def usage(self) -> Usage:
        """The builtin's and the LLM's counts together."""
        total = Usage()
        total.add(self.builtin.usage)
        total.add(self.llm.usage)
        return total

    def select_state(
        self, ctx: Context, page: Observation, candidates: list[StateSpec]
    ) -> StateSpec:
        try:
            return self.builtin.select_state(ctx, page, candidates)
        except NothingApplies:
            if ctx.looked < ctx.settle:
                raise  # the page may still be loading: read it again before asking
            return self.llm.select_state(ctx, page, candidates)
        except Unresolved:
            return self.llm.select_state(ctx, page, candidates)

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        try:
            return self.builtin.define_triggers(ctx, page, state)
        except Unresolved:
            return self.llm.define_triggers(ctx, page, state)

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        try:
            if done:  # the LLM started this instruction: it finishes it
                return self.llm.resolve_instruction(ctx, page, state, instruction, done)
            return self.builtin.resolve_instruction(ctx, page, state, instruction, done)
        except Unresolved:
            return self.llm.resolve_instruction(ctx, page, state, instruction, done)


if TYPE_CHECKING:
    _implements: type[Synthesiser] = TieredSynthesiser
