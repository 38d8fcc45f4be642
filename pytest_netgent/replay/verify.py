"""A recording is verified whole before anything is written.

A recording run that reached its end state is replayed from a reset browser, as the next
item would replay it, and judged on what that replay saw (each look at the page, each
state's check results):

- the replay walks the recording's states in the recording's order: a loop, a skipped
  state or an extra round is not written;
- every state the workflow declares is in what would be written (a passing record never
  writes a partial cache, which the next replay would refuse);
- at the page where a state ran, no other state's checks hold: each state's checks fail
  on the pages where another state applied (unless the workflow allows several);
- a state's checks do not hold on the page its predecessor ran on (taking it there would
  have been a guess), and the end state's fail on the start page and on every page
  before its predecessor's actions ran.

A recording that fails any of these is a decline: the run fails with what was seen, and
nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..browser.page import Tick
from ..workflow.automaton import State
from ..workflow.spec import Workflow
from .run import RunResult, TimelineEvent


@dataclass
class Seen:
    """A :class:`~.run.Watcher` of the verification replay: every look at the page, and
    the look at which each state ran."""

    ticks: list[Tick] = field(default_factory=list)
    fired: list[tuple[str, int]] = field(default_factory=list)
    """Each state that ran, with the index (in :attr:`ticks`) of the look it ran on."""

    def event(self, event: TimelineEvent) -> None:
        if event.event == "state" and self.ticks:
            self.fired.append((event.state, len(self.ticks) - 1))

    def tick(self, tick: Tick) -> None:
        if tick.ok:
            self.ticks.append(tick)


def holding(tick: Tick, states: list[State]) -> set[str]:
    """The names of ``states`` whose checks all hold on ``tick``'s page."""
    rows = tick.results
    return {
        s.name
        for i, s in enumerate(states)
        if i < len(rows) and rows[i] and s.checks and all(r[0] for r in rows[i])
    }


def recorded_path(timeline: list[TimelineEvent]) -> list[str]:
    """The states a recording run went through, in order: a cached state whose actions
    failed and that was healed on the spot counts once (its healed run)."""
    out: list[str] = []
    last: TimelineEvent | None = None
    for event in timeline:
        if event.event != "state":
            continue
        healing = (
            last is not None
            and last.state == event.state
            and event.detail == "synthesising"
            and last.detail != "synthesising"
        )
        if not healing:
            out.append(event.state)
        last = event
    return out


def collapsed(names: list[str]) -> list[str]:
    """``names`` with each run of one state counted once: how often a state that may
    repeat fires depends on time, and a state the recording took again on the next page
    (a guess undone, its checks made again) is one state of the path."""
    out: list[str] = []
    for name in names:
        if not (out and out[-1] == name):
            out.append(name)
    return out


def unwritten(spec: Workflow, states: list[State]) -> str:
    """Why ``states`` may not be written for ``spec``: the declared states they miss."""
    have = {s.name for s in states}
    # another end state is another goal this item did not take (alternative ends: each
    # item records its own, the cache gathers them); a state on the way is not optional
    ends = [s for s in spec.states if s.end]
    missing = [s.name for s in spec.states if s.name not in have and not (s.end and len(ends) > 1)]
    if not missing:
        return ""
    return (
        f"the workflow's states {', '.join(map(repr, missing))} were never reached, and a "
        "cache without them would not replay: the end state held before them, so its "
        "triggers do not tell the goal apart from the pages on the way"
    )


def misjudged(
    spec: Workflow,
    states: list[State],
    recorded: list[str],
    replay: RunResult,
    seen: Seen,
    *,
    walked: bool = True,
) -> str:
    """Why the verification replay of ``states`` (``seen``) does not confirm the
    recording whose states ran as ``recorded``; ``""`` when it does. ``walked``: the
    replay reached the end (else only what it saw up to its failure is judged)."""
    if walked:
        made, again = collapsed(recorded), collapsed(replay.states_visited)
        if made != again:
            return (
                f"the recording went {' > '.join(made)}, its replay "
                f"{' > '.join(again) or '(nowhere)'}: the states do not replay the way "
                "they were recorded"
            )
    if spec.allow_multiple_states:
        return ""
    return _overlaps(spec, states, seen) or _early_end(spec, states, seen, walked=walked)


def _overlaps(spec: Workflow, states: list[State], seen: Seen) -> str:
    """A state whose checks hold where another ran, or on its predecessor's page."""
    previous: tuple[str, int] | None = None
    for name, at in seen.fired:
        tick = seen.ticks[at]
        others = holding(tick, states) - {name}
        # the state that ran just before may still hold on the same document (a page
        # that changes in place): replay does not take it again there
        kept = (
            previous is not None and others == {previous[0]} and not _moved(seen, previous[1], at)
        )
        if others and not kept:
            return (
                f"on {tick.href}, where state {name!r} ran, the checks of "
                f"{', '.join(map(repr, sorted(others)))} hold too: they do not tell "
                "the pages apart"
            )
        before = seen.ticks[previous[1]] if previous is not None else None
        if (
            previous is not None
            and before is not None
            and previous[0] != name
            and name in holding(before, states)
        ):
            return (
                f"the checks of state {name!r} already held on {before.href}, where "
                f"{previous[0]!r} ran before it: taking {name!r} after {previous[0]!r} "
                "was a guess"
            )
        previous = (name, at)
    return ""


def _moved(seen: Seen, before: int, at: int) -> bool:
    """The page changed document or address between two looks (a state that ran on
    the page before may still hold on the same document while it changes)."""
    a, b = seen.ticks[before], seen.ticks[at]
    return (a.doc, a.href) != (b.doc, b.href)


def _early_end(spec: Workflow, states: list[State], seen: Seen, *, walked: bool) -> str:
    """The end state's checks holding on the start page, or before the actions of the
    state that led to it ran."""
    ends = {s.name for s in spec.states if s.end}
    if not seen.fired or not seen.ticks:
        return ""
    last = seen.fired[-1][0] if walked else ""
    upto = seen.fired[-2][1] if walked and len(seen.fired) > 1 else len(seen.ticks) - 1
    if walked and len(seen.fired) == 1 and len(spec.states) > 1:
        return (
            f"the end state {last!r} held on the start page {seen.ticks[0].href}: none of "
            "the workflow's other states ran, its triggers do not tell the goal apart"
        )
    for tick in seen.ticks[: upto + 1]:
        early = holding(tick, states) & ends
        if walked:
            early &= {last}
        if early:
            name = sorted(early)[0]
            where = "the start page" if tick is seen.ticks[0] else "a page"
            return (
                f"the checks of the end state {name!r} hold on {where} {tick.href}, before "
                "the state that leads to it ran: they do not tell the goal apart"
            )
    return ""


def answered_otherwise(recorded: list[TimelineEvent], replay: list[TimelineEvent]) -> str:
    """Where a verification replay went through the recording's states on the same
    pages, until, after the same state's actions, the site led to another page: the
    states are not at fault, the site's answer changed (``""`` when that is not so)."""

    def path(timeline: list[TimelineEvent]) -> list[tuple[str, str]]:
        return [(e.state, e.url) for e in timeline if e.event == "state"]

    made, again = path(recorded), path(replay)
    same = next((i for i, (a, b) in enumerate(zip(made, again, strict=False)) if a != b), None)
    if not same or made[same][1] == again[same][1]:
        return ""  # no common start, none differs, or another state on the same page
    return (
        f"verified by replay up to state {made[same - 1][0]!r}; after its actions the site "
        f"answered with {again[same][1]} instead of {made[same][1]}"
    )
