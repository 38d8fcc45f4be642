"""The builtin synthesiser: offline and deterministic, for literal instructions.

It composes three sets of rules: the instruction rules (:mod:`.instructions`: "Navigate
to {base_url}/login", "Click the 'Sign in' button", "Type {user} into the Email field",
"Press Enter", "Wait 10 seconds", "Select 720p from the Quality menu", "Go back"), the
trigger rules (:mod:`.triggers`: "X is visible", "the page title contains X", "the URL
contains X") and the state selection (:mod:`.state_selection`: the state declared next
whose triggers hold). Targets are resolved against the page observation by accessible
name, label, placeholder, visible text and role, scored so that the best unique element
wins; an ambiguous or missing target raises
:class:`~pytest_netgent.synthesis.Unresolved`, it is never guessed. The same page and
prompt always give the same answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..workflow.automaton import Action, Check
from ..workflow.spec import StateSpec
from . import Context, Usage
from .instructions import instruction_actions
from .observation import Observation
from .state_selection import StateSelector
from .triggers import TriggerReader

if TYPE_CHECKING:
    from . import Synthesiser


class BuiltinSynthesiser:
    """Offline, deterministic synthesis of literal instructions and triggers."""

    name = "builtin"

    def __init__(self) -> None:
        self.usage = Usage()
        self.triggers = TriggerReader()
        """The trigger rules."""
        self.selector = StateSelector(self.triggers)
        """The state selection, reading triggers by the same rules."""

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        """The actions the instruction rules read in ``instruction``: all of them at once,
        so the instruction is finished; raises
        :class:`~pytest_netgent.synthesis.Unresolved`."""
        actions = instruction_actions(ctx, page, instruction)
        self.usage.builtin_steps += 1
        return actions, True

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        """Checks for ``state``'s triggers, each grounded whole by them
        (:meth:`.TriggerReader.state_checks`); raises
        :class:`~pytest_netgent.synthesis.Unresolved`."""
        checks = self.triggers.state_checks(ctx, page, state)
        self.usage.builtin_steps += 1
        return checks

    def select_state(
        self, ctx: Context, page: Observation, candidates: list[StateSpec]
    ) -> StateSpec:
        """The state that applies (:meth:`.StateSelector.select`); raises
        :class:`~pytest_netgent.synthesis.NothingApplies`."""
        choice = self.selector.select(ctx, page, candidates)
        self.usage.builtin_steps += 1
        return choice

    def verdict(self, ctx: Context, page: Observation, spec: StateSpec) -> str:
        """Whether ``spec``'s triggers hold on ``page`` (:meth:`.StateSelector.verdict`)."""
        return self.selector.verdict(ctx, page, spec)

    def confirmed(self, ctx: Context, page: Observation, spec: StateSpec) -> list[str]:
        """The triggers of ``spec`` that hold on ``page`` by what it shows
        (:meth:`.StateSelector.confirmed`)."""
        return self.selector.confirmed(ctx, page, spec)


if TYPE_CHECKING:
    _implements: type[Synthesiser] = BuiltinSynthesiser
