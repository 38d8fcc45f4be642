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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..browser.pool import BrowserPool
from ..errors import (
    HEAL_COMMAND,
    BrowserError,
    NetgentError,
    ReplayError,
    WorkflowSpecError,
    display_path,
)
from ..synthesis import Synthesiser
from ..system.redaction import Secret
from ..workflow import store
from ..workflow.automaton import Automaton, State
from ..workflow.secrets import resolve_secrets
from ..workflow.spec import BadDocument, LoadedWorkflow, Scalar, Workflow, load_workflows
from ..workflow.window import parse_window, window_text
from .recorder import StatesProposed, save
from .run import RunResult, RunSettings
from .settings import ReplaySettings
from .wiring import run_states

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


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
    ) -> RunResult:
        """Replay a workflow and return its result.

        ``workflow`` is a workflow file (with ``name`` when it holds several), a loaded
        workflow, or a :class:`Workflow` object (then pass ``states``). ``params`` sets
        parameters and overrides vars. ``record`` (``missing``, ``all`` or ``propose``;
        default: ``--netgent-record``) synthesises states with ``synthesiser`` (default:
        builtin) and writes the cache after a passing run. With ``check`` (the default) a
        failed run raises its :class:`NetgentError`; otherwise it is on ``result.error``.
        ``duration`` replaces the workflow's own; setting ``cancel`` stops the run at its
        next step (:class:`~pytest_netgent.errors.RunStopped`).
        """
        __tracebackhide__ = True
        if isinstance(workflow, (str, Path)):
            loaded = find_workflow(Path(workflow), name)
        elif isinstance(workflow, Workflow):
            loaded = LoadedWorkflow(workflow, Path(f"<{workflow.name}>"), 1, 0)
        else:
            loaded = workflow
        spec = loaded.workflow
        heal = heal or HEAL_COMMAND
        record_mode = self.settings.record if record is None else record
        cache_file = store.cache_path(loaded.path, spec.name)
        previous: Automaton | None = None
        automaton: Automaton | None = None
        if record_mode and states is None:
            previous = automaton = store.load(cache_file)  # a corrupt file fails, untouched
            # with 'all' every state is made anew
            fresh = store.cached_states(spec, previous, strict=True)[0]
            replay = [] if record_mode == "all" else fresh
        elif states is None:
            record_mode = ""
            text = f"run {heal} to synthesise the missing and stale states"
            automaton = store.load(cache_file)
            replay = store.replay_states(spec, automaton, cache_file, text)
        elif isinstance(states, Automaton):
            text = f"run {heal} to synthesise the missing and stale states"
            automaton = states
            replay = store.replay_states(spec, states, Path("<automaton>"), text)
        else:
            replay = list(states)
        window = self.window_for(spec, automaton)
        secrets = resolve_secrets(loaded)
        self.secrets.update(secrets)
        self._pool.secret_logs.add(secrets)
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
        if self.before_run is not None:
            self.before_run(loaded, str(values.get("base_url", "")))
        self._pool.size_window(window)
        guard = self._pool.checked_guard()  # no run starts whose navigations are unconfined
        settings = RunSettings(
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
        cached = {s.name for s in previous.states} if previous and record_mode != "all" else set()
        wired = run_states(
            self.driver,
            spec.name,
            replay,
            values,
            secrets,
            settings,
            order=[s.name for s in spec.states],
            record=spec if record_mode else None,
            synthesiser=synthesiser,
            cached=cached,
            window=window_text(window),
            guard=guard,
        )
        result, engine, recorder = wired.result, wired.engine, wired.recorder
        self.results.append(result)
        self.origins |= result.origins
        if isinstance(result.error, BrowserError):
            self._pool.close()  # dead: the next item starts a fresh one
        if recorder is not None:
            recorder.report.usage = recorder.synth.usage
            result.record = recorder.report
            # proposals mirror the repository, so the folder can be copied over it
            try:
                relative = cache_file.resolve().relative_to(self.settings.rootdir.resolve())
            except ValueError:
                relative = Path(cache_file.parent.name) / cache_file.name
            proposal = self.settings.artifacts / "proposed" / relative
            save(recorder, engine, result, previous, cache_file, record_mode, proposal)
            if recorder.report.proposed and result.error is None:
                result.passed = False
                result.error = StatesProposed(
                    f"{display_path(cache_file)}: states of workflow {spec.name!r} were "
                    f"healed into {display_path(recorder.report.proposed)} for review "
                    "(--netgent-record=propose); copy that file over the cached one to "
                    "accept them"
                )
        if isinstance(result.error, ReplayError):
            result.error.with_details(
                workflow=spec.name, location=f"{display_path(loaded.path)}:{loaded.line}", heal=heal
            )
        if check and result.error is not None:
            raise result.error
        return result


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
