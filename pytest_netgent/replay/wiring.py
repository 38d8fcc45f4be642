"""One run, wired: the engine on a browser, with the recorder when states are to be
synthesised. The ``netgent_browser`` fixture (:mod:`.runner`), the SDK
(:mod:`pytest_netgent.compat.sdk`) and through it the ``netgent`` command all run
workflows through :func:`run_states`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..synthesis import Context, Synthesiser, build_synthesiser
from ..system.redaction import Redactor, Secret
from .engine import Engine
from .picking import with_picks
from .recorder import Recorder
from .run import RunResult, RunSettings, Watcher

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..browser.guard import NavigationGuard
    from ..workflow.automaton import State
    from ..workflow.spec import Workflow
    from .trace import Trace


@dataclass
class Wired:
    """A finished run: its result, the engine that ran it (its states as they ended)
    and the recorder, if states were synthesised."""

    result: RunResult
    engine: Engine
    recorder: Recorder | None


def run_states(
    driver: WebDriver,
    name: str,
    states: list[State],
    values: Mapping[str, Any],
    secrets: Mapping[str, str | Secret],
    settings: RunSettings,
    *,
    order: list[str],
    record: Workflow | None = None,
    synthesiser: Synthesiser | None = None,
    cached: set[str] | None = None,
    window: str = "",
    guard: NavigationGuard | None = None,
    trace: Trace | None = None,
    watchers: Sequence[Watcher] = (),
    picks: Path | None = None,
) -> Wired:
    """Run the compiled ``states`` of workflow ``name`` to its end or a failure.

    With ``record`` (the workflow whose states may be synthesised), missing or
    failing states are synthesised by ``synthesiser`` (default: builtin rules);
    ``cached`` names the states that came from the cache. ``values`` fill the
    placeholders (``base_url`` among them); ``secrets`` too, and are redacted from
    everything reported and from what a model is shown. ``trace`` (``--netgent-trace``)
    watches the run, as do ``watchers`` (the live page's and the video's pictures).
    In record mode, the picks a person made in the studio (the workflow's ``picks``
    file) answer their instructions first.
    """
    recorder = None
    if record is not None:
        ctx = Context(
            workflow=record.name,
            description=record.description,
            order=order,
            values={k: str(v) for k, v in values.items() if k != "base_url"},
            secrets=sorted(secrets),
            base_url=str(values.get("base_url", "")),
            redact=Redactor(dict(secrets)),
            varying=sorted(record.parametrize),
        )
        synth = with_picks(synthesiser or build_synthesiser(), picks)
        recorder = Recorder(record, synth, ctx, cached or set(), window=window)
    engine = Engine(
        driver, name, states, values, secrets, settings, healer=recorder, order=order, guard=guard
    )
    engine.result.watchers.extend(watchers)
    watching = trace.start(engine) if trace is not None else None
    result = engine.run()
    if watching is not None:
        watching.finish(result)
    return Wired(result, engine, recorder)
