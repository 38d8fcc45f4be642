"""States in their declared order: each is placed where the workflow declares it, whatever
order it comes in, and forty thousand that never match are placed and replayed in time."""

from __future__ import annotations

import time

from pytest_netgent.workflow.automaton import State

from .helpers import HUNG, Project


def test_forty_thousand_never_matching_states_replay(project: Project) -> None:
    path = project.workflow("big", HUNG.replace("hung", "big").replace("timeout: 6\n", ""))
    never = [
        {"name": f"Never {n}", "checks": [{"type": "element",
         "params": {"by": "css selector", "selector": f"#never-{n}"}}]}
        for n in range(40_000)
    ]  # fmt: skip
    home = {"name": "Home", "checks": [{"type": "text", "params": {"text": "Featured"}}],
            "end_state": "Home"}  # fmt: skip
    project.raw_states(path, "big", [*never, home])
    started = time.monotonic()
    project.run().assert_outcomes(passed=1)
    # every state used to be placed by scanning all placed before it: over 100 s here
    assert time.monotonic() - started < 60


def test_states_keep_their_declared_order_whatever_order_they_come_in() -> None:
    from pytest_netgent.replay.engine import Engine
    from pytest_netgent.replay.run import RunSettings

    def named(name: str) -> State:
        return State.model_validate({"name": name, "checks": []})

    engine = Engine(
        None,  # type: ignore[arg-type]  # placing states talks to no browser
        "w",
        [named("C"), named("A")],
        {},
        {},
        RunSettings(),
        order=["A", "B", "C", "D"],
    )
    engine.put_state(named("D"))
    engine.put_state(named("B"))
    engine.put_state(named("X"))  # not declared: last
    engine.put_state(named("B"), replace=False)  # a second of one name: after the first
    assert [s.name for s in engine.states] == ["A", "B", "B", "C", "D", "X"]
    assert engine.put_state(named("C")) == 3  # replaced where it is
