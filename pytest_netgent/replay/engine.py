"""The run loop: match a state on the page, run its actions, until an end state.

Engine rules (told to users in docs/replay.md, "How replay works"; docs/architecture.md):

- every candidate state's checks are evaluated in one browser round trip per tick, and
  the page itself waits (DOM mutations, short polling) until a state matches, so no
  sleep waits for the page (the only sleeps: NetGent's ``action_period`` and
  ``transition_period`` when a workflow asks for them, and 10 ms while a new document
  commits);
- states are tried in declared order; with ``allow_multiple_states: false`` two
  matching states are an error;
- a state that just ran does not fire again on the same page (same document and URL)
  unless it has ``repeat`` left;
- the state timeout, the workflow timeout and ``max_steps`` each end the run with a
  clear reason; reaching a state with ``end_state`` ends it with a pass;
- every state, action and URL change is recorded in a timeline with timestamps.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ..browser.actions import MOVES, ActionFailed, Actions, RunTools
from ..browser.guard import NavigationGuard
from ..browser.page import TOP_URL, Tick, evaluate, watch_requests
from ..browser.session import START_PAGES, browser_gone, driver_errors, focus_tab, origin_of
from ..browser.watchdog import Watchdog
from ..errors import BrowserError, DriftContext, NetgentError, ReplayError
from ..system.redaction import Redactor, Secret
from ..workflow.automaton import Action, State
from ..workflow.secrets import env_of
from . import diagnosis
from .position import DurationOver, Page, Position
from .run import RunResult, RunSettings, TimelineEvent, check_host, host_allowed, substitute
from .table import StateTable

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


TICK_MS = 500  # the longest in-page wait of one tick; limits are checked between ticks
HANG_S = 10.0
"""How long a tick may outlast its in-page wait before the page counts as hung (a script
that never returns); never later than the workflow timeout."""


class Healer(Protocol):
    """Record mode's hook into the loop: synthesise or repair states on the page."""

    settle: float
    """Seconds without any matching state before :meth:`no_match` is asked."""

    def no_match(self, engine: Engine) -> int | None:
        """Synthesise, run and add the state that applies now; returns its index, or
        ``None`` when no state applies yet and the page may still change (asked again)."""
        ...

    def action_failed(self, engine: Engine, index: int, error: ActionFailed) -> int:
        """Resynthesise state ``index`` after one of its actions failed; returns its index."""
        ...

    @property
    def made(self) -> set[str]:
        """Names of the states synthesised or healed in this run."""
        ...

    def preempt(self, engine: Engine, index: int) -> int | None:
        """Before state ``index`` fires: if a state declared earlier, not compiled yet,
        applies instead, synthesise and run it and return its index; else ``None``."""
        ...


class Engine:
    """Replays compiled ``states`` on ``driver``.

    ``values`` holds vars, parameters and ``base_url``; ``secrets`` the secret values,
    substituted only when an action or check runs and redacted from everything reported
    (by ``redact``, made from them when not given).
    """

    def __init__(
        self,
        driver: WebDriver,
        workflow: str,
        states: list[State],
        values: Mapping[str, Any],
        secrets: Mapping[str, str | Secret],
        settings: RunSettings,
        healer: Healer | None = None,
        order: list[str] | None = None,
        guard: NavigationGuard | None = None,
        redact: Redactor | None = None,
    ) -> None:
        self.driver = driver
        self.guard = guard if guard is not None and guard.alive else None
        """Stops the browser's own navigations outside the allowed hosts (see
        :mod:`..browser.guard`); without it, they are caught once they have happened."""
        self.workflow = workflow
        self.settings = settings
        self.values = {**values, **secrets}
        self.redact = redact if redact is not None else Redactor(secrets)
        self.healer = healer
        self.order = order or [s.name for s in states]
        self.table = StateTable(self.order, self.values)
        self._at: Position | None = None  # the loop's place: an inserted state moves it
        for state in states:
            self.put_state(state, replace=False)
        self.allowed = settings.allowed_hosts
        if self.allowed is None and settings.start_url:
            host = urlsplit(substitute(settings.start_url, self.values)).hostname
            self.allowed = [host] if host else None
        self.result = RunResult(workflow=workflow)
        self.t0 = 0.0  # time.monotonic() when the run started: its timeout counts from here
        self._last_tick = Tick()
        self._last_state = ""
        self._url = ""
        self._fresh = True  # no real page loaded yet: start-page checks hold on any
        output = settings.output_dir or Path.cwd()
        self.tools = RunTools.start(driver, self.redact, output, env_of(secrets), self.guard)
        self.sampler, self.webrtc = self.tools.sampler, self.tools.webrtc
        self.watchdog = Watchdog(driver)
        self._watched: set[str] = set()
        """Documents whose tab was told to watch its requests in this run."""

    # ------------------------------------------------------------------ bookkeeping

    def _event(self, event: str, **fields: str) -> None:
        now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        elapsed = round(time.monotonic() - self.t0, 4)
        clean = {k: self.redact(v) for k, v in fields.items()}
        self.result.note(TimelineEvent(event, now, elapsed, **clean))

    def _see_url(self, url: str) -> None:
        if url and url != self._url:
            self._url = url
            if (origin := origin_of(url)) is not None:
                self.result.origins.add(origin)
            if url not in START_PAGES:
                self._fresh = False
            self._event("url", url=url)
        self._allow(url, "the browser went to")

    def check_navigation(self, url: str) -> None:
        """Raise :class:`NavigationError` before opening a URL outside allowed hosts."""
        self._allow(url, "navigation to")

    def _allow(self, url: str, what: str) -> None:
        check_host(url, self.allowed, what, self.redact, self.guard)

    @property
    def states(self) -> list[State]:
        """The compiled states, in declared order (record mode adds to them)."""
        return self.table.states

    def put_state(self, state: State, *, replace: bool = True) -> int:
        """Add ``state`` (or replace the one of its name) in declared order; its index
        (see :meth:`.table.StateTable.put`)."""
        index, inserted = self.table.put(state, replace=replace)
        if inserted and self._at is not None:
            self._at.inserted(index)
        return index

    def evaluate_now(self, states: list[State] | None = None) -> Tick:
        """Evaluate ``states`` (default: the automaton's) once, without waiting."""
        checks = self.table.checks if states is None else self.table.filled(states)
        return evaluate(self.driver, checks, None, 0, fresh=self._fresh)

    @property
    def last_tick(self) -> Tick:
        """The last tick that saw the page."""
        return self._last_tick

    @property
    def last_state(self) -> str:
        """Name of the state that ran last ("" before the first)."""
        return self._last_state

    def event(self, event: str, **fields: str) -> None:
        """Add a timeline entry (secrets redacted)."""
        self._event(event, **fields)

    # ------------------------------------------------------------------ the loop

    def run(self) -> RunResult:
        """Run to an end state or a failure; the result's ``error`` says which."""
        self.t0 = time.monotonic()
        self.sampler.started = self.webrtc.started = time.time()  # samples count from here
        self.result.qoe = self.sampler.samples
        self.result.webrtc = self.webrtc.samples
        self.result.measurements = self.tools.measurements
        self.result.started_at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        self._event("start", detail=self.workflow)
        dead, final = False, None
        if self.guard is not None:
            self.guard.start(lambda url: host_allowed(url, self.allowed))
        try:
            self._loop()
            # a browser that died in the last actions (a wait) fails here; also: the end URL
            with self._bounded(HANG_S, "the run ended"):
                final = self.driver.execute_script(TOP_URL)
            self._hung()
        except BrowserError as exc:
            dead = True
            self._fail(exc, self.redact(str(exc)))
        except NetgentError as exc:
            error = (
                exc
                if isinstance(exc, ReplayError)
                else self._drift(str(exc), cause=getattr(exc, "cause", "UI drift"))
            )
            self._fail(error, error.reason)
        except Exception as exc:  # a dead browser ends the run; anything else is raised
            if not browser_gone(exc):
                raise
            dead = True
            gone = BrowserError(
                self.redact(diagnosis.crash(exc, self.result.steps, self.last_state))
            )
            self.result.passed = False
            self._fail(gone, str(gone))
        finally:
            if self.guard is not None:
                self.guard.stop()
            self.watchdog.close()
            self.result.duration = time.monotonic() - self.t0
            if not dead:
                self._stop_sampling()
                url = final if isinstance(final, str) and final else self._current_url()
                self.result.final_url = self.redact(url)
            else:
                self.sampler.abandon()
        return self.result

    def _stop_sampling(self) -> None:
        """Sampling and the stats log end with the run: take the last samples."""
        with contextlib.suppress(Exception):  # a page that is gone took its last samples with it
            self.sampler.close()
        with contextlib.suppress(Exception):  # so did a tab closed before the end
            self.webrtc.close()

    def _fail(self, error: NetgentError, detail: str) -> None:
        self.result.error = error
        self._event("failure", detail=detail)

    def _loop(self) -> None:
        s = self.settings
        if s.start_url:
            url = substitute(s.start_url, self.values)
            self.check_navigation(url)
            self._navigate(url)
        end_at = self.t0 + s.duration if s.duration else None
        at = self._at = Position(self.t0 + s.timeout, end_at)
        at.state_deadline = time.monotonic() + self._wait_for_state()
        while True:
            self.settings.check_cancel(self.workflow, self.result.steps)
            now = time.monotonic()
            if at.end_at is not None and now >= at.end_at:
                self._duration_reached(at.last_fired)
                return
            if now >= at.deadline:
                raise self._drift(
                    f"workflow timeout: no end state within {s.timeout:g}s "
                    "(raise 'timeout' in the workflow if it needs longer)"
                )
            if now >= at.state_deadline:
                if self._unmatched(at):
                    return
                continue
            tick = self._tick(at, now)
            if tick is not None and tick.matched and self._fire(at, tick):
                return

    def _unmatched(self, at: Position) -> bool:
        """No state matched in time: drift, or in record mode the state the page needs
        is synthesised and run. True when the run has ended."""
        if self.healer is None:
            raise self._drift(
                f"no state matched the page within {self.settings.state_timeout:g}s"
                + diagnosis.MAY_HAVE_CHANGED
            )
        page = (self._last_tick.doc, self._last_tick.href)
        if (index := self.healer.no_match(self)) is None:  # the page may still change
            at.state_deadline = time.monotonic() + self.healer.settle
            return False
        self._count_step()
        return self._healed(at, index, page)

    def _healed(self, at: Position, index: int, page: Page) -> bool:
        """State ``index``, made or chosen by the healer, ran on ``page``. True when it
        ended the run."""
        self._advances(at, index, page)
        if self.states[index].end_state:
            self._finish(self.states[index])
            return True
        at.repeats = at.repeating(index, page)
        at.fired(index, page)
        at.state_deadline = time.monotonic() + self._wait_for_state()
        return False

    def _tick(self, at: Position, now: float) -> Tick | None:
        """Evaluate every state's checks on the page, waiting in the page for one to
        match (up to a tick); the tick, or None when the page was between documents."""
        until = min(at.actions_deadline, at.state_deadline)
        wait_ms = max(int(min(TICK_MS, (until - now) * 1000)), 0)
        exclude = None
        if at.last_fired is not None and at.repeats >= self.states[at.last_fired].repeat:
            exclude = {"state": at.last_fired, "doc": at.last_page[0], "href": at.last_page[1]}
        with self._bounded(wait_ms / 1000 + HANG_S, diagnosis.CHECKING):
            tick = evaluate(
                self.driver,
                self.table.checks,
                exclude,
                wait_ms,
                fresh=self._fresh,
                rows=bool(self.result.watchers),
            )
        self._hung()
        self.result.ticks += 1
        for watcher in self.result.watchers:  # --netgent-trace
            watcher.tick(tick)
        self.webrtc.collect(tick.rtc)
        if self.sampler.see(tick.doc, tick.qoe, tick.unsampled):  # new page or frames
            with self._bounded(HANG_S, "the video sampler looked into the page's frames"):
                self.sampler.follow_frames()
            self._hung()
        if not tick.ok:
            self._recover(tick)
            return None
        self._last_tick = tick
        self._see_url(tick.href)
        if tick.pending is None and self.settings.watch_requests and tick.doc not in self._watched:
            self._watched.add(tick.doc)
            with contextlib.suppress(Exception):  # a page that navigates meanwhile
                watch_requests(self.driver)
        if tick.hidden:  # the tab the run works in went to the background: show it
            with contextlib.suppress(Exception):  # a tab that cannot be shown stays as it is
                focus_tab(self.driver, self.driver.current_window_handle)
        return tick

    def _fire(self, at: Position, tick: Tick) -> bool:
        """Run the state that matched ``tick``'s page. True when the run has ended."""
        s = self.settings
        if len(tick.matched) > 1 and not s.allow_multiple_states:
            names = ", ".join(repr(self.states[i].name) for i in tick.matched)
            raise self._drift(
                f"several states match the page ({names}) and allow_multiple_states is "
                "false: make their triggers exclusive"
            )
        index = tick.matched[0]
        page = (tick.doc, tick.href)
        chosen = self.healer.preempt(self, index) if self.healer is not None else None
        if chosen is not None:
            self._count_step()
            return self._healed(at, chosen, page)
        at.repeats = at.repeating(index, page)
        state = self.states[index]
        # a continuous state running out its duration takes no steps
        if not (at.repeats and state.continuous and at.end_at is not None):
            self.result.steps += 1
        if self.result.steps > s.max_steps:
            fault = diagnosis.out_of_steps(state, bool(at.repeats), s.max_steps)
            if fault is None:  # NetGent: recursion_limit ends a continuous state's run
                self._finish(state, f"max_steps ({s.max_steps}) reached in a continuous state")
                return True
            raise self._drift(fault[1], cause=fault[0])
        self._advances(at, index, page)
        self._last_state = self.sampler.state = self.webrtc.state = state.name
        self._event("state", state=state.name, url=tick.href)
        try:
            self.run_actions(state, at.actions_deadline)
        except DurationOver:
            self._duration_reached(index)
            return True
        except ActionFailed as exc:
            if self.healer is None:
                why = self.redact(str(exc))
                raise self._drift(why, cause=exc.cause, loading=exc.unloaded) from None
            index = self.healer.action_failed(self, index, exc)
            state = self.states[index]
        if state.end_state:
            self._finish(state)
            return True
        if s.transition_period:
            time.sleep(s.transition_period)
        at.fired(index, page)
        at.state_deadline = time.monotonic() + self._wait_for_state()
        return False

    def _advances(self, at: Position, index: int, page: Page) -> None:
        """Fail at once when state ``index`` fires on an unchanged page (same document
        and URL) more often than its ``repeat`` allows: its checks still hold after its
        own actions, alone or in turn with other states, and waiting cannot help."""
        fires = at.count_fire(index, page)
        state = self.states[index]
        if state.continuous or fires <= state.repeat + 1:
            return
        self._last_state = state.name
        others = [self.states[i].name for i in at.fires if i != index]
        made = self.healer is not None and state.name in self.healer.made
        cause, reason = diagnosis.no_progress(state.name, fires, page[1], others, made=made)
        raise self._drift(reason, cause=cause)

    def _count_step(self) -> None:
        """A state synthesised in record mode is a step like any other."""
        self.result.steps += 1
        if self.result.steps > self.settings.max_steps:
            raise self._drift(
                f"max_steps ({self.settings.max_steps}) reached without an end state while "
                "recording: the synthesised states may be looping",
                cause="synthesis failure",
            )

    def _finish(self, state: State, reason: str = "") -> None:
        self.result.passed = True
        self.result.end_state = state.end_state or reason
        self._event("end", state=state.name, detail=self.result.end_state)

    def _duration_reached(self, last_fired: int | None) -> None:
        """The run's ``duration`` is over: a pass in a continuous state, else a failure."""
        duration = self.settings.duration or 0.0
        if last_fired is not None and self.states[last_fired].continuous:
            self._finish(self.states[last_fired], f"duration {duration:g}s reached")
            return
        where = (
            f"in state {self._last_state!r}, which is not"
            if self._last_state
            else ("before any state ran, not")
        )
        error = self._drift(
            f"duration {duration:g}s reached {where} continuous: only a continuous state "
            "(config.continuous, or 'continuous: true' in the workflow) may run out the "
            "duration; other workflows end in an end state"
        )
        error.out_of_time = True
        raise error

    def _wait_for_state(self) -> float:
        """How long to wait for a state to match before reporting drift or healing: the
        state timeout, or a candidate check's longer ``timeout``."""
        wait = max(self.settings.state_timeout, self.table.longest_wait())
        if self.healer is None:
            return wait
        return min(self.healer.settle, wait)

    def run_actions(self, state: State, deadline: float | None = None) -> None:
        """Run ``state``'s actions in order; raises :class:`ActionFailed` naming the step."""
        for number, action in enumerate(state.actions, 1):
            if number > 1 and self.settings.action_period:
                time.sleep(self.settings.action_period)
            self.run_action(state.name, number, action, deadline)

    def run_action(
        self, state: str, number: int, action: Action, deadline: float | None = None
    ) -> None:
        """Run one action (placeholders substituted), recording it in the timeline."""
        __tracebackhide__ = True  # its frames below hold the filled values, secrets too
        self.settings.check_cancel(self.workflow, self.result.steps)
        given = deadline is not None
        deadline = deadline or self.t0 + self.settings.timeout
        if time.monotonic() >= deadline:
            duration = self.settings.duration
            if given and duration and time.monotonic() >= self.t0 + duration:
                raise DurationOver  # the run loop's deadline: it ends the run
            raise self._drift(
                f"workflow timeout ({self.settings.timeout:g}s) during state {state!r}"
            )
        actions = self._actions(deadline)
        actions.cancel = self.settings.cancel
        self._event("action", state=state, action=action.describe())
        doing = f"state {state!r} ran action {number} ({action.describe()})"
        try:
            with self._bounded(deadline - time.monotonic() + 1.0, doing):
                actions.run(action.type, substitute(action.params, self.values))
            self._hung()
        except ActionFailed as exc:
            raise type(exc)(  # the same kind: an invalid step is the cache's fault
                f"state {state!r}, action {number} ({action.describe()}) failed: "
                f"{self.redact(str(exc))}",
                unloaded=exc.unloaded,
            ) from None
        if action.type in MOVES:
            url = self._current_url()
            if url:
                self._see_url(url)

    def _actions(self, deadline: float) -> Actions:
        return Actions(
            self.driver, self.settings.state_timeout, self.check_navigation, deadline, self.tools
        )

    def _navigate(self, url: str) -> None:
        deadline = self.t0 + self.settings.timeout
        actions = self._actions(deadline)
        self._event("action", action=f"navigate {self.redact(url)!r}", detail="start_url")
        try:
            with self._bounded(deadline - time.monotonic() + 1.0, "the start_url loaded"):
                actions.navigate({"url": url})
            self._hung()
        except ActionFailed as exc:
            raise self._drift(f"start_url: {self.redact(str(exc))}", loading=exc.unloaded) from None
        self._see_url(self._current_url())

    def _recover(self, tick: Tick) -> None:
        """A tick that failed: the page navigated, or its window was closed."""
        if tick.error.startswith("window closed"):
            handles = self.driver.window_handles
            if handles:
                focus_tab(self.driver, handles[-1])
        else:
            time.sleep(0.01)  # the next document is loading; let it commit

    def _current_url(self) -> str:
        try:
            return str(self.driver.current_url)
        except driver_errors():  # a closed window or dead browser still ends the run cleanly
            return self._url

    # ------------------------------------------------------------------ hangs

    def _bounded(self, seconds: float, doing: str) -> contextlib.AbstractContextManager[None]:
        """Arm the watchdog for a WebDriver call, never past the workflow timeout."""
        left = self.t0 + self.settings.timeout - time.monotonic() + 1.0
        return self.watchdog.guard(min(seconds, left), doing)

    def _hung(self) -> None:
        """Raise if the watchdog had to stop the last call: the page never answered."""
        doing = self.watchdog.fired
        if not doing:
            return
        cause, reason = diagnosis.hang(doing, self.states)
        context = DriftContext(
            step=self.result.steps,
            last_state=self._last_state,
            url=self.redact(self._url),
            title=self.redact(self._last_tick.title),
        )
        raise ReplayError(reason, context, workflow=self.workflow, cause=cause)

    # ------------------------------------------------------------------ reporting

    def page_error(self, reason: str) -> ReplayError:
        """The page's failure now, its cause read from it (:func:`.diagnosis.page_fault`)."""
        return self._drift(reason)

    def _drift(self, reason: str, *, cause: str = "UI drift", loading: bool = False) -> ReplayError:
        """A :class:`ReplayError` with the candidate states' checks and a screenshot.

        The page is evaluated once more with every check's result (one round trip, only
        on failure): the run loop's ticks carry only which states matched, and an action
        may have changed the page since.
        """
        tick = self._last_tick
        again = evaluate(self.driver, self.table.checks, None, 0, fresh=self._fresh)
        if again.ok:
            tick = again
        page = tick.href or self._current_url()
        # only a page-side failure is re-read from the page; the model's or synthesis's own
        # faults keep their cause
        if cause == "UI drift":
            if tick.net_error:
                page = self._current_url()  # the address it tried, not chrome-error://
            cause, reason = diagnosis.page_fault(
                tick, page, reason, self.settings.network, unloaded=loading
            )
        context = DriftContext(
            step=self.result.steps,
            last_state=self._last_state,
            url=self.redact(page),
            title=self.redact(tick.title),
            candidates=diagnosis.candidates(self.states, tick),
            screenshot=diagnosis.screenshot(
                self.driver, self.settings.screenshot_dir, self.result.steps, self.redact
            ),
        )
        return ReplayError(self.redact(reason), context, workflow=self.workflow, cause=cause)
