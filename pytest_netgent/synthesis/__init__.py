"""Synthesis: natural-language states become concrete checks and actions.

A :class:`Synthesiser` answers three questions, as NetGent's state synthesis and web
agent do: which state prompt applies to the page (:meth:`~Synthesiser.select_state`),
which checks recognise it (:meth:`~Synthesiser.define_triggers`), and which browser
actions carry out one instruction of it (:meth:`~Synthesiser.resolve_instruction`). The
record loop in :mod:`pytest_netgent.replay.recorder` asks these questions and executes the
answers; implementations only decide.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..workflow.automaton import Action, Check
from ..workflow.spec import StateSpec
from .observation import Observation


class Unresolved(Exception):
    """A synthesiser could not decide; ``reason`` says what it looked for."""

    def __init__(self, reason: str, candidates: list[tuple[float, int]] | None = None) -> None:
        self.reason = reason
        self.candidates = candidates or []
        """The elements it weighed, as ``(score, mmid)``, best first (the studio shows them)."""
        super().__init__(reason)


class NotOnPage(Unresolved):
    """What an instruction names is not on the page (yet: a list loading, controls that
    show on a mouse move)."""


class NothingApplies(Unresolved):
    """No state's triggers hold on the page as it is now; it may still be loading."""


@dataclass
class Context:
    """What a synthesiser may know beyond the page.

    ``values`` maps placeholder names of vars and parameters to their values, so that
    literal values seen on the page can be stored as ``{name}``; secrets appear only by
    name (``secrets``), never by value.
    """

    workflow: str
    description: str = ""
    order: list[str] = field(default_factory=list)
    """Names of the workflow's states, in declared order."""
    history: list[str] = field(default_factory=list)
    """Names of the states that ran so far, in order."""
    values: dict[str, str] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)
    base_url: str = ""
    redact: Callable[[str], str] = field(default=lambda text: text)
    """Replaces secret values by ``{name}``: applied to everything sent to a model."""
    varying: list[str] = field(default_factory=list)
    """Names of the workflow's parameters: their values change from item to item, so a
    check that holds only for this item's value must not be recorded."""
    deadline: float | None = None
    """``time.monotonic()`` by which the run must end: no model call outlives it."""
    failed: list[str] = field(default_factory=list)
    """Actions chosen for the current instruction that the page refused, and why."""
    before: list[Action] = field(default_factory=list)
    """The state's actions as cached before the page changed (while a cached state is
    healed): their locators and the alternatives kept with them say which elements the
    state acted on, to be found again on the page as it is now."""
    looked: float = 0.0
    """Seconds synthesis has been looking at the page for the current step."""
    settle: float = 0.0
    """Seconds a page is given to settle before a state that already ran (or one declared
    before it) is taken again on less than its triggers holding: the page may still be
    on its way to the state declared next."""


@dataclass
class Usage:
    """What synthesis cost: steps each tier resolved, LLM calls and tokens."""

    builtin_steps: int = 0
    llm_steps: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    invalid_answers: int = 0
    """Model answers that did not validate or could not be used (each was retried)."""

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts to these."""
        self.builtin_steps += other.builtin_steps
        self.llm_steps += other.llm_steps
        self.llm_calls += other.llm_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.invalid_answers += other.invalid_answers


@dataclass
class RecordReport:
    """What record mode did for one item."""

    synthesised: list[str] = field(default_factory=list)
    healed: list[str] = field(default_factory=list)
    written: str = ""
    proposed: str = ""
    model: str = ""
    usage: Usage = field(default_factory=Usage)

    @property
    def made(self) -> set[str]:
        """The states synthesised or healed so far."""
        return {*self.synthesised, *self.healed}

    @property
    def changed(self) -> bool:
        """Whether any state was (re)synthesised."""
        return bool(self.synthesised or self.healed)


class Synthesiser(Protocol):
    """Decides states, triggers and actions from prompts and page observations."""

    name: str
    """Recorded in the cache document's ``synthesis.model``."""

    @property
    def usage(self) -> Usage:
        """Steps resolved, LLM calls and tokens so far."""
        ...

    def select_state(
        self, ctx: Context, page: Observation, candidates: list[StateSpec]
    ) -> StateSpec:
        """The candidate state prompt that applies to ``page``; raises :class:`Unresolved`."""
        ...

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        """Checks that hold on ``page`` and recognise ``state``; raises :class:`Unresolved`."""
        ...

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        """The next actions for ``instruction`` on ``page`` (``done``: those already taken
        for it) and whether they finish it; raises :class:`Unresolved`."""
        ...


__all__ = ["Context", "Observation", "Synthesiser", "Unresolved", "Usage"]


def build_synthesiser(
    llm: Any | None = None,
    *,
    max_calls: int | None = None,
    max_tokens: int | None = None,
    only: bool = False,
) -> Synthesiser:
    """The one way a synthesiser is made: builtin rules, then ``llm`` (a langchain-core
    chat model) for what they cannot decide (``only``: the model alone), within
    ``max_calls`` model calls and ``max_tokens`` tokens (the LLM synthesiser's defaults
    when ``None``)."""
    from .builtin import BuiltinSynthesiser

    if llm is None:
        return BuiltinSynthesiser()
    from .llm import LLMSynthesiser
    from .tiered import TieredSynthesiser

    model = LLMSynthesiser(llm)
    if max_calls is not None:
        model.max_calls = max_calls
    if max_tokens is not None:
        model.max_tokens = max_tokens
    return model if only else TieredSynthesiser(BuiltinSynthesiser(), model)
