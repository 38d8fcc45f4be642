"""Where the run loop stands between ticks: the state that fired last and on which page,
how often it fired there in a row, how often each state fired on the current page, and
the deadlines the loop checks (:class:`~pytest_netgent.replay.engine.Engine` keeps one
per run)."""

from __future__ import annotations

from dataclasses import dataclass, field

Page = tuple[str, str]
"""A page as the loop tells pages apart: its document id and its URL."""


class DurationOver(Exception):
    """The run's duration ended before an action could start (the loop decides)."""


@dataclass
class Position:
    """The loop's place in a run."""

    deadline: float
    """When the workflow's timeout runs out (monotonic seconds)."""
    end_at: float | None = None
    """When the run's ``duration`` runs out, if it has one."""
    state_deadline: float = 0.0
    """When waiting for a state to match gives up (drift, or a heal in record mode)."""
    last_fired: int | None = None
    """Index of the state that fired last."""
    last_page: Page = ("", "")
    """The page it fired on."""
    repeats: int = 0
    """How often in a row it fired on that same page, after its first time."""
    fires: dict[int, int] = field(default_factory=dict)
    """How often each state fired on :attr:`fires_page`."""
    fires_page: Page = ("", "")

    @property
    def actions_deadline(self) -> float:
        """When actions must stop: the timeout, or the duration's end if sooner."""
        return self.deadline if self.end_at is None else min(self.deadline, self.end_at)

    def repeating(self, index: int, page: Page) -> int:
        """:attr:`repeats` if state ``index`` fires now on ``page``."""
        again = index == self.last_fired and page == self.last_page
        return self.repeats + 1 if again else 0

    def fired(self, index: int, page: Page) -> None:
        """State ``index`` ran on ``page``: it is the one a repeat is counted against."""
        self.last_fired, self.last_page = index, page

    def count_fire(self, index: int, page: Page) -> int:
        """Count a firing of state ``index`` on ``page``; how often it fired there."""
        if page != self.fires_page:
            self.fires_page, self.fires = page, {}
        self.fires[index] = self.fires.get(index, 0) + 1
        return self.fires[index]

    def inserted(self, index: int) -> None:
        """A state was inserted at ``index`` (record mode): states from there on moved one
        place down, and what is known of them moves with them."""
        if self.last_fired is not None and self.last_fired >= index:
            self.last_fired += 1
        self.fires = {(i + 1 if i >= index else i): n for i, n in self.fires.items()}
