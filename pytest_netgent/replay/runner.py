"""The object behind the ``netgent_browser`` fixture: a browser that runs workflows.

Workflow items use it, and so can Python tests::

    def test_search(netgent_browser):
        result = netgent_browser.run("example_suites/wiki/search.netgent.yaml", "wiki-search")
        assert result.passed
        netgent_browser.driver.find_element("css selector", "h1")
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..browser.pool import BrowserPool
from ..browser.waits import InvalidStep
from ..errors import (
    HEAL_COMMAND,
    BrowserError,
    CacheError,
    NetgentError,
    ReplayError,
    WorkflowSpecError,
    display_path,
)
from ..synthesis import Synthesiser
from ..synthesis.picks import picks_path
from ..system.redaction import Redactor, Secret
from ..workflow import store
from ..workflow.automaton import Automaton, State
from ..workflow.secrets import env_values, resolve_secrets
from ..workflow.spec import BadDocument, LoadedWorkflow, Scalar, Workflow, load_workflows
from ..workflow.window import parse_window, window_text
from .preflight import GIVEN, heal_fix, vet
from .record_picks import after_record, forget_step
from .recorder import StatesProposed, SynthesisFailed, save
from .run import EndWatcher, PicturesWatcher, RunResult, RunSettings, TimelineEvent, Watcher
from .run_settings import ReplaySettings
from .verify import Seen, answered_otherwise, misjudged, recorded_path, unwritten
from .wiring import Recording, Wired, run_states

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..browser.guard import NavigationGuard
    from ..browser.screencast import FrameRecorder, Pictures
    from .trace import Trace


def find_workflow(path: Path, name: str | None) -> LoadedWorkflow:
    """Load the workflow ``name`` (or the file's only one) from ``path``."""
    found: list[LoadedWorkflow] = []
    for doc in load_workflows(path):
        if isinstance(doc, BadDocument):
            if name is None or doc.name == name:
                raise doc.error
            continue
        found.append(doc)
    if name is None:
        if len(found) != 1:
            names = ", ".join(repr(d.workflow.name) for d in found)
            raise WorkflowSpecError(path, None, f"holds several workflows ({names}): pass name=")
        return found[0]
    for doc in found:
        if doc.workflow.name == name:
            return doc
    names = ", ".join(repr(d.workflow.name) for d in found) or "none"
    raise WorkflowSpecError(path, None, f"no workflow named {name!r} (found: {names})")


class NetgentBrowser:
    """A browser reset for this test, able to run workflows on it.

    ``driver`` is the Selenium WebDriver; :meth:`run` replays a workflow from its file and
    cached states (or from a :class:`Workflow` and explicit states) and returns the
    :class:`RunResult`.
    """

    def __init__(self, pool: BrowserPool, settings: ReplaySettings, base_url: str = "") -> None:
        self._pool = pool
        self.settings = settings
        self.base_url = base_url
        self.origins: set[str] = set()
        self.results: list[RunResult] = []
        """The results of the runs of this test, in order."""
        self.secrets: dict[str, str | Secret] = {}
        """Every secret the runs of this test used (kept out of captures)."""
        self.before_run: Callable[[LoadedWorkflow, str], None] | None = None
        """Called with each workflow and its base URL before it runs (captures use it)."""
        self.network = ""
        """The link condition on this browser's traffic (set by the network plugin)."""
        self.trace: Trace | None = None
        """What the runs of this test did, tick by tick (``--netgent-trace``)."""
        if settings.trace != "off":
            from .trace import Trace

            self.trace = Trace()
        self.video: FrameRecorder | None = None
        """The pictures of the runs of this test, for its video (``--netgent-video``)."""
        if settings.video != "off":
            from ..browser.screencast import FrameRecorder

            self.video = FrameRecorder()

    @property
    def driver(self) -> WebDriver:
        """The Selenium WebDriver of this worker's browser."""
        return self._pool.driver

    def window_for(self, spec: Workflow, automaton: Automaton | None) -> tuple[int, int]:
        """The window a run of ``spec`` uses: ``--netgent-window-size``, else the
        workflow's ``window:``, else the size its states were recorded at, else the
        browser's default."""
        if self.settings.window is not None:
            return self.settings.window
        if spec.window:
            return parse_window(spec.window)
        return _window_of(automaton) or self._pool.options.window_size

    def run(
        self,
        workflow: str | Path | Workflow | LoadedWorkflow,
        name: str | None = None,
        *,
        params: Mapping[str, Scalar] | None = None,
        states: list[State] | Automaton | None = None,
        base_url: str | None = None,
        heal: str = "",
        artifacts: Path | None = None,
        check: bool = True,
        record: str | None = None,
        synthesiser: Synthesiser | None = None,
        duration: float | None = None,
        cancel: threading.Event | None = None,
        on_end: Callable[[TimelineEvent], None] | None = None,
    ) -> RunResult:
        """Replay a workflow and return its result.

        ``workflow`` is a workflow file (with ``name`` when it holds several), a loaded
        workflow, or a :class:`Workflow` object (then pass ``states``). ``params`` sets
        parameters and overrides vars. ``record`` (``missing``, ``all`` or ``propose``;
        default: ``--netgent-record``) synthesises states with ``synthesiser`` (default:
        builtin) and writes the cache after a passing run. With ``check`` (the default) a
        failed run raises its :class:`NetgentError`; otherwise it is on ``result.error``.
        ``duration`` replaces the workflow's own; setting ``cancel`` stops the run at its
        next step (:class:`~pytest_netgent.errors.RunStopped`). ``on_end`` is called with
        the ``end`` event the moment the end state is reached, the browser still on its
        page (before a recording's verification replay leaves it).
        """
        __tracebackhide__ = True
        loaded = _loaded(workflow, name)
        spec = loaded.workflow
        heal = heal or HEAL_COMMAND
        record_mode = self.settings.record if record is None else record
        cache_file = store.cache_path(loaded.path, spec.name)
        plan = _plan(spec, cache_file, record_mode, states, heal)
        window = self.window_for(spec, plan.automaton)
        secrets = {**resolve_secrets(loaded), **env_values(plan.replay)}
        self.secrets.update(secrets)
        self._pool.secret_logs.add(secrets)
        values = self._values(loaded, plan.replay, params, base_url)
        source = cache_file if states is None else GIVEN  # where the states come from
        redact = Redactor(secrets)
        vet(self.driver, plan.replay, {**values, **secrets}, redact, source, heal)
        if self.before_run is not None:
            self.before_run(loaded, str(values.get("base_url", "")))
        self._pool.size_window(window)
        guard = self._pool.checked_guard()  # no run starts whose navigations are unconfined
        pictures = self._pictures()  # the live page's, the video's
        for follower in pictures:
            follower.begin(spec.name, hidden=bool(secrets))
        previous = plan.previous
        cached = {s.name for s in previous.states} if previous and plan.mode != "all" else set()
        wired = run_states(
            self.driver,
            spec.name,
            plan.replay,
            values,
            secrets,
            self._run_settings(spec, artifacts, duration, cancel),
            order=[s.name for s in spec.states],
            recording=_recording(plan, spec, synthesiser, cached, cache_file, window),
            guard=guard,
            trace=self.trace,
            watchers=self._watchers(pictures, on_end),
            redact=redact,
        )
        result = wired.result
        for follower in pictures:
            follower.end("passed" if result.passed and result.error is None else "failed")
        self.results.append(result)
        self.origins |= result.origins
        if isinstance(result.error, BrowserError):
            self._pool.close()  # dead: the next item starts a fresh one
        if wired.recorder is not None:
            if result.passed and wired.recorder.report.changed:
                self._verify(wired, spec, previous, values, secrets, guard, window)
            self._keep_record(wired, spec.name, previous, cache_file, plan.mode)
            settings = self.settings
            after_record(wired.recorder, result, self.driver, artifacts, cache_file, heal, settings)
        elif artifacts is not None and result.passed and result.error is None:
            forget_step(artifacts)
        result.error = _named(result.error, loaded, source, heal)
        if check and result.error is not None:
            raise result.error
        return result

    def _watchers(
        self, pictures: list[Pictures], on_end: Callable[[TimelineEvent], None] | None
    ) -> tuple[Watcher, ...]:
        """What follows a run besides its trace: the pictures, and who waits for its end."""
        ends = [EndWatcher(on_end)] if on_end is not None else []
        return (*(PicturesWatcher(p, self._current_tab) for p in pictures), *ends)

    def _current_tab(self) -> str:
        return str(self.driver.current_window_handle)

    def stop_video(self) -> None:
        """The test is over: its video takes no more pictures (the reset's blank page
        is not part of it)."""
        if self.video is not None:
            self.video.stop()

    def _pictures(self) -> list[Pictures]:
        """What follows the browser's pictures during a run (each started now if
        needed): the live page's stream (``--netgent-live PORT``), the item's video
        (``--netgent-video``)."""
        wanted = [self._pool.live, self.video]
        return [self._pool.follow(p) for p in wanted if p is not None]

    def _values(
        self,
        loaded: LoadedWorkflow,
        replay: list[State],
        params: Mapping[str, Scalar] | None,
        base_url: str | None,
    ) -> dict[str, Any]:
        """The values a run's ``{name}`` placeholders take: vars, params, then base_url."""
        spec = loaded.workflow
        values: dict[str, Any] = {**spec.vars, **(params or {})}
        url = self.base_url if base_url is None else base_url
        if url:
            values["base_url"] = url.rstrip("/")
        elif "{base_url}" in spec.start_url or _uses_base_url(replay):
            raise NetgentError(
                f"{display_path(loaded.path)}:{loaded.line}: workflow {spec.name!r} uses "
                "{base_url} but "
                "none is set: pass --netgent-base-url URL, set the ini key netgent_base_url, "
                "or define a 'base_url' fixture"
            )
        return values

    def _run_settings(
        self,
        spec: Workflow,
        artifacts: Path | None,
        duration: float | None,
        cancel: threading.Event | None,
    ) -> RunSettings:
        """What the engine needs of the workflow, the options and this browser."""
        return RunSettings(
            state_timeout=spec.state_timeout or self.settings.state_timeout,
            timeout=spec.timeout,
            max_steps=spec.max_steps,
            allow_multiple_states=spec.allow_multiple_states,
            allowed_hosts=spec.allowed_hosts,
            start_url=spec.start_url,
            screenshot_dir=artifacts,
            duration=spec.duration if duration is None else duration,
            output_dir=artifacts,
            cancel=cancel,
            watch_requests=not self._pool.options.uc,
            network=self.network,
        )

    def _verify(
        self,
        wired: Wired,
        spec: Workflow,
        previous: Automaton | None,
        values: dict[str, Any],
        secrets: Mapping[str, str | Secret],
        guard: NavigationGuard | None,
        window: tuple[int, int],
    ) -> None:
        """Replay what a recording run made, from a reset browser as the next item would,
        before anything is written: states that passed the recording by a guess (a model
        that took one page for another) fail it here, and nothing is written."""
        assert wired.recorder is not None
        result = wired.result
        doc = wired.recorder.document(wired.engine, previous)
        made = ", ".join(repr(n) for n in sorted(wired.recorder.made))
        if why := unwritten(spec, doc.states):
            self._declined(wired, made, why)
            return
        self._pool.reset(result.origins)
        self._pool.size_window(window)
        seen = Seen()
        check = run_states(
            self.driver,
            spec.name,
            doc.states,
            values,
            secrets,
            # as many steps as the recording took, and a few more: a replay that loops
            # where the recording did not ends soon
            replace(
                self._run_settings(spec, None, None, None),
                max_steps=min(spec.max_steps, 2 * result.steps + 5),
            ),
            order=[s.name for s in spec.states],
            guard=guard,
            watchers=(seen,),
        ).result
        self.origins |= check.origins
        recorded = recorded_path(result.timeline)
        if check.passed:
            if why := misjudged(spec, doc.states, recorded, check, seen):
                self._declined(wired, made, why)
                return
            wired.engine.event("record", detail="the states made replay to the end")
            return
        why = getattr(check.error, "reason", "") or str(check.error)
        if answered := answered_otherwise(result.timeline, check.timeline):
            # the same states took the same steps, and the site answered them otherwise
            # (an action with a lasting effect: adding a name that now exists)
            if wrong := misjudged(spec, doc.states, recorded, check, seen, walked=False):
                self._declined(wired, made, wrong)
                return
            wired.engine.event("record", detail=f"{answered}; the replay then failed: {why}")
            return
        result.passed = False
        result.error = ReplayError(
            f"the states recorded ({made}) reached the end, but replaying them does not "
            f"({why}); nothing was written. The synthesiser took one page for another: "
            "make the triggers of these states literal (\"The page says '...'\"), or "
            "record with a stronger model",
            getattr(check.error, "context", None),
            cause=SynthesisFailed.cause,
        )

    @staticmethod
    def _declined(wired: Wired, made: str, why: str) -> None:
        """The recording reached its end state, but what it made is not confirmed: a
        decline, and nothing is written."""
        result = wired.result
        result.passed = False
        result.error = ReplayError(
            f"the recording reached its end state, but the states made ({made}) are not "
            f"verified: {why}; nothing was written. Write the triggers literally, saying "
            'what tells each page apart ("The page says \'...\'", "The URL contains '
            "'...'\"), or record with a stronger model",
            cause=SynthesisFailed.cause,
        )

    def _keep_record(
        self,
        wired: Wired,
        name: str,
        previous: Automaton | None,
        cache_file: Path,
        mode: str,
    ) -> None:
        """Write what a recording run synthesised: the cache, or a proposal to review."""
        result, recorder = wired.result, wired.recorder
        assert recorder is not None
        recorder.report.usage = recorder.synth.usage
        result.record = recorder.report
        # proposals mirror the repository, so the folder can be copied over it
        try:
            relative = cache_file.resolve().relative_to(self.settings.rootdir.resolve())
        except ValueError:
            relative = Path(cache_file.parent.name) / cache_file.name
        proposal = self.settings.artifacts / "proposed" / relative
        save(recorder, wired.engine, result, previous, cache_file, mode, proposal)
        if recorder.report.proposed and result.error is None:
            result.passed = False
            result.error = StatesProposed(
                f"{display_path(cache_file)}: states of workflow {name!r} were "
                f"healed into {display_path(recorder.report.proposed)} for review "
                "(--netgent-record=propose); copy that file over the cached one to "
                "accept them"
            )


@dataclass
class _Plan:
    """The states a run replays, the automaton they came from and the record mode."""

    replay: list[State]
    automaton: Automaton | None = None
    previous: Automaton | None = None
    """The cache as it was before a recording run (what a heal is compared with)."""
    mode: str = ""


def _named(
    error: NetgentError | None, loaded: LoadedWorkflow, source: Path, heal: str
) -> NetgentError | None:
    """A failed run's error with its workflow, file and heal command; an invalid step
    (a selector the browser cannot parse) becomes the cache file's error, as
    :func:`.preflight.vet` reports it: no page and no heal makes it work."""
    if not isinstance(error, ReplayError):
        return error
    if error.cause == InvalidStep.cause:
        fix = heal_fix(heal, source)
        return CacheError(source, f"invalid cached states: {error.reason}", heal=fix)
    location = f"{display_path(loaded.path)}:{loaded.line}"
    return error.with_details(workflow=loaded.workflow.name, location=location, heal=heal)


def _recording(
    plan: _Plan,
    spec: Workflow,
    synthesiser: Synthesiser | None,
    cached: set[str],
    cache_file: Path,
    window: tuple[int, int],
) -> Recording | None:
    """What a run needs to synthesise states, when its plan records."""
    if not plan.mode:
        return None
    picks = picks_path(cache_file)
    return Recording(spec, synthesiser, frozenset(cached), picks, window_text(window))


def _loaded(workflow: str | Path | Workflow | LoadedWorkflow, name: str | None) -> LoadedWorkflow:
    if isinstance(workflow, (str, Path)):
        return find_workflow(Path(workflow), name)
    if isinstance(workflow, Workflow):
        return LoadedWorkflow(workflow, Path(f"<{workflow.name}>"), 1, 0)
    return workflow


def _plan(
    spec: Workflow,
    cache_file: Path,
    record_mode: str,
    states: list[State] | Automaton | None,
    heal: str,
) -> _Plan:
    """Which states a run replays: explicit ones, the cache's, or (recording) the fresh ones."""
    stale = f"run {heal} to synthesise the missing and stale states"
    if record_mode and states is None:
        previous = store.load(cache_file)  # a corrupt file fails, untouched
        fresh = store.cached_states(spec, previous, strict=True)[0]
        # with 'all' every state is made anew
        replay = [] if record_mode == "all" else fresh
        return _Plan(replay, previous, previous, record_mode)
    if states is None:
        automaton = store.load(cache_file)
        return _Plan(store.replay_states(spec, automaton, cache_file, stale), automaton)
    if isinstance(states, Automaton):
        replay = store.replay_states(spec, states, Path("<automaton>"), stale)
        return _Plan(replay, states, mode=record_mode)  # explicit states may be healed
    return _Plan(list(states), mode=record_mode)


def _window_of(automaton: Automaton | None) -> tuple[int, int] | None:
    if automaton is None or not automaton.window:
        return None
    try:
        return parse_window(automaton.window)
    except ValueError:
        return None  # an unreadable size is not a reason to fail a replay: the default


def _uses_base_url(states: list[State]) -> bool:
    params = [c.params for s in states for c in s.checks]
    params += [a.params for s in states for a in s.actions]
    return any("{base_url}" in str(p) for p in params)
