"""The states a run tries: kept in declared order, each with its checks filled once.

The run loop evaluates every state's checks in one browser round trip per tick; this
table holds them ready for that, substituted with the run's values (they do not change
during a run), and the wait each state's checks ask for (NetGent's per-check
``timeout``). Record mode adds and replaces states while the run goes on; a state not
declared in the workflow goes last.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from typing import Any

from ..workflow.automaton import State
from .run import substitute


class StateTable:
    """The compiled states of one run in declared order, with their filled checks.

    ``order`` is the workflow's declared state order; ``values`` fill the checks'
    placeholders (secrets among them: the filled checks never leave the browser call).
    """

    def __init__(self, order: list[str], values: Mapping[str, Any]) -> None:
        self.order = order
        self.values = values
        self.states: list[State] = []
        self.checks: list[dict[str, Any]] = []
        """Each state's filled checks and hold, as the page's evaluator takes them."""
        self._rank = {n: p for p, n in reversed(list(enumerate(order)))}
        """Each name's place in :attr:`order` (its first)."""
        self._ranks: list[int] = []
        """The rank of each of :attr:`states`, ascending."""
        self._wait: dict[str, float] = {}

    def put(self, state: State, *, replace: bool = True) -> tuple[int, bool]:
        """Add ``state`` (or replace the one of its name) in declared order: its index,
        and whether it was inserted (the states after it moved).

        ``replace=False`` keeps a state of the same name: NetGent's repositories may name
        two states alike (a synthesised state is named after the prompt it served).
        """
        # NetGent's per-check timeout: the page is given at least that long to show it,
        # and no state declared later fires on a younger page ("hold")
        waits = [float(c.params["timeout"]) for c in state.checks if "timeout" in c.params]
        checks = {
            "checks": self.filled([state])[0]["checks"],
            "hold": round(1000 * max(waits, default=0.0)),
        }
        replacing = replace and state.name in self._wait
        if not replacing:
            waits.append(self._wait.get(state.name, 0.0))
        self._wait[state.name] = max(waits, default=0.0)
        if replacing:
            index = next(i for i, s in enumerate(self.states) if s.name == state.name)
            self.states[index] = state
            self.checks[index] = checks
            return index, False
        # states stay sorted by their declared rank: the new one goes after its equals
        rank = self._rank.get(state.name, len(self.order))
        index = bisect.bisect_right(self._ranks, rank)
        self.states.insert(index, state)
        self.checks.insert(index, checks)
        self._ranks.insert(index, rank)
        return index, True

    def filled(self, states: list[State]) -> list[dict[str, Any]]:
        """``states``' checks filled with the run's values, for one evaluation."""
        return [
            {"checks": [substitute(c.model_dump(), self.values) for c in s.checks]} for s in states
        ]

    def longest_wait(self) -> float:
        """The longest ``timeout`` any state's checks ask the page to be given."""
        return max(self._wait.values(), default=0.0)
