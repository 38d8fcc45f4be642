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
from .record_picks import with_picks
from .recorder import Recorder
from .run import RunResult, RunSettings, Watcher

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..browser.guard import NavigationGuard
    from ..workflow.automaton import State
    from ..workflow.spec import Workflow
    from .trace import Trace


@dataclass(frozen=True)
class Recording:
    """What a run that may synthesise states needs beyond what a replay needs.

    ``workflow`` is the workflow whose missing or failing states are synthesised by
    ``synthesiser`` (default: the builtin rules); ``cached`` names the states that came
    from the cache; ``picks`` is the workflow's picks file (what a person chose in the
    studio answers their instructions first); ``window`` the window size the states
    are recorded at.
    """

    workflow: Workflow
    synthesiser: Synthesiser | None = None
    cached: frozenset[str] = frozenset()
    picks: Path | None = None
    window: str = ""


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
    recording: Recording | None = None,
    guard: NavigationGuard | None = None,
    trace: Trace | None = None,
    watchers: Sequence[Watcher] = (),
    redact: Redactor | None = None,
) -> Wired:
    """Run the compiled ``states`` of workflow ``name`` to its end or a failure.

    With ``recording``, missing or failing states are synthesised as it says.
    ``values`` fill the placeholders (``base_url`` among them); ``secrets`` too, and are
    redacted (by ``redact``, made from them when not given) from everything reported and
    from what a model is shown. ``trace`` (``--netgent-trace``) watches the run, as do
    ``watchers`` (the live page's and the video's pictures).
    """
    redact = redact if redact is not None else Redactor(dict(secrets))
    recorder = None
    if recording is not None:
        spec = recording.workflow
        ctx = Context(
            workflow=spec.name,
            description=spec.description,
            order=order,
            values={k: str(v) for k, v in values.items() if k != "base_url"},
            secrets=sorted(secrets),
            base_url=str(values.get("base_url", "")),
            redact=redact,
            varying=sorted(spec.parametrize),
        )
        synth = with_picks(recording.synthesiser or build_synthesiser(), recording.picks)
        recorder = Recorder(spec, synth, ctx, set(recording.cached), window=recording.window)
    engine = Engine(
        driver,
        name,
        states,
        values,
        secrets,
        settings,
        healer=recorder,
        order=order,
        guard=guard,
        redact=redact,
    )
    engine.result.watchers.extend(watchers)
    watching = trace.start(engine) if trace is not None else None
    result = engine.run()
    if watching is not None:
        watching.finish(result)
    return Wired(result, engine, recorder)
