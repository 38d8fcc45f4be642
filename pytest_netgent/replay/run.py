"""What one run is: its settings, its timeline and result, and the values it
substitutes into states (``{name}`` placeholders, NetGent's ``%name%``)."""

from __future__ import annotations

import contextlib
import fnmatch
import logging
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ..browser.qoe import QoeSample
from ..browser.webrtc import WebrtcSample
from ..errors import NavigationError, NetgentError, RunStopped
from ..system import interrupts, progress
from ..system.redaction import Secret
from ..workflow.spec import PLACEHOLDER

if TYPE_CHECKING:
    from ..browser.guard import NavigationGuard
    from ..browser.page import Tick
    from ..browser.screencast import Pictures
    from ..synthesis import RecordReport

log = logging.getLogger("pytest_netgent.run")
"""Every timeline event as it happens, at INFO (``--log-cli-level=INFO`` shows a long run
live; without ``-n``, as xdist's workers send their logs with each item's report)."""


@dataclass
class TimelineEvent:
    """One entry of a run's timeline."""

    event: str
    """``start``, ``url``, ``state``, ``action``, ``end``, ``failure`` or ``record`` (what
    record mode changed in a state during the run)."""
    at: str
    """Wall-clock time, ISO 8601 UTC."""
    elapsed: float
    """Seconds since the run started (monotonic clock)."""
    state: str = ""
    action: str = ""
    url: str = ""
    detail: str = ""


class Watcher(Protocol):
    """Follows a run as it goes (see :mod:`.trace`)."""

    def event(self, event: TimelineEvent) -> None:
        """A timeline event, as it is added (its values already redacted)."""

    def tick(self, tick: Tick) -> None:
        """One look at the page: each state's check results."""


@dataclass
class RunResult:
    """The outcome of one workflow run."""

    workflow: str
    passed: bool = False
    end_state: str = ""
    final_url: str = ""
    timeline: list[TimelineEvent] = field(default_factory=list)
    steps: int = 0
    ticks: int = 0
    duration: float = 0.0
    started_at: str = ""
    origins: set[str] = field(default_factory=set)
    error: NetgentError | None = None
    record: RecordReport | None = None
    """What record mode synthesised, healed and wrote (``None`` in plain replay)."""
    qoe: list[QoeSample] = field(default_factory=list)
    """Video quality samples of ``start_video_sampling`` (see :mod:`..browser.qoe`)."""
    webrtc: list[WebrtcSample] = field(default_factory=list)
    """WebRTC samples of ``start_webrtc_tracking`` (see :mod:`..browser.webrtc`)."""
    measurements: list[dict[str, Any]] = field(default_factory=list)
    """Parsed results of the run's measurement steps (``ping``, ``iperf``, ``ndt``,
    ``wget``: see :mod:`..measure`)."""
    watchers: list[Watcher] = field(default_factory=list, repr=False, compare=False)
    """Told of every timeline event and every look at the page (``--netgent-trace``)."""

    @property
    def states_visited(self) -> list[str]:
        """Names of the states that fired, in order."""
        return [e.state for e in self.timeline if e.event == "state"]

    def note(self, event: TimelineEvent) -> None:
        """Add ``event`` (its values already redacted) to the timeline, and log it."""
        self.timeline.append(event)
        for watcher in self.watchers:
            watcher.event(event)
        logging_it = log.isEnabledFor(logging.INFO)
        if not (logging_it or progress.listening()):
            return  # the sentence is made only for someone who reads it
        said = _said(event)
        if logging_it:
            log.info("%s [%.1f s] %s", self.workflow, event.elapsed, said)
        progress.publish(doing=said)


def _said(event: TimelineEvent) -> str:
    """One timeline event as a log line says it."""
    state = f"{event.state!r}" if event.state else ""
    said = {
        "start": "started",
        "url": f"at {event.url}",
        "state": f"state {state}",
        "action": f"{state or event.detail}: {event.action}",
        "end": f"ended in state {state}",
        "failure": "failed",
        "record": f"recorded state {state}",
    }.get(event.event, event.event)
    detail = event.detail if event.event not in ("start", "action") else ""
    return f"{said}: {detail}" if detail else said


class EndWatcher:
    """Calls ``reached`` with the ``end`` event the moment a run reaches its end state,
    while the browser is still on that page (a recording's verification replay comes
    after, in the same browser)."""

    def __init__(self, reached: Callable[[TimelineEvent], None]) -> None:
        self.reached = reached

    def event(self, event: TimelineEvent) -> None:
        if event.event == "end":
            self.reached(event)

    def tick(self, tick: Tick) -> None:
        """Looks at the page are not its concern."""


class PicturesWatcher:
    """Tells a browser's pictures (``--netgent-live PORT``, ``--netgent-video``) each
    timeline event, as the log says it (values already redacted)."""

    def __init__(self, pictures: Pictures, tab: Callable[[], str]) -> None:
        self.pictures = pictures
        self.tab = tab
        """WebDriver's current window handle, asked when the run sees a new document."""
        self._doc = ""

    def event(self, event: TimelineEvent) -> None:
        """A timeline event: the state and last doing, and a picture soon."""
        self.pictures.doing(event.state, _said(event))

    def tick(self, tick: Tick) -> None:
        """A look at the page: on a new document (a page loaded, another tab switched
        to), the pictures follow the tab the run looks at."""
        if not tick.doc or tick.doc == self._doc:
            return
        self._doc = tick.doc
        with contextlib.suppress(Exception):  # a tab closing meanwhile: the next look tells
            self.pictures.looking_at(self.tab())


@dataclass
class RunSettings:
    """Limits and options of one run."""

    state_timeout: float = 10.0
    timeout: float = 300.0
    max_steps: int = 200
    allow_multiple_states: bool = True
    allowed_hosts: list[str] | None = None
    start_url: str = ""
    screenshot_dir: Path | None = None
    action_period: float = 0.0
    """Fixed pause between two actions of a state (NetGent's ``action_period``)."""
    transition_period: float = 0.0
    """Fixed pause after a state before the next is matched (``transition_period``)."""
    duration: float | None = None
    """Seconds after which a run in a continuous state ends with a pass (NetGent's
    ``duration``); ``None``: only an end state passes."""
    output_dir: Path | None = None
    """Where relative output paths of actions (``start_stats_logging``'s ``out_path``)
    are resolved; default: the current folder."""
    cancel: threading.Event | None = None
    """Set from another thread to stop the run at its next step or during a wait (a
    scenario stops its other members so when one fails)."""
    watch_requests: bool = True
    """Watch the page's requests so a slow server is not reported as UI drift (off in
    UC mode, whose pages must not see any change to ``fetch``)."""
    network: str = ""
    """The link condition on the run's traffic (``rate=8kbit,delay=2s``), if any: a page
    that did not finish loading under it is the link's doing, not UI drift."""

    def check_cancel(self, workflow: str, steps: int) -> None:
        """Raise :class:`~.errors.RunStopped` once :attr:`cancel` is set, and
        ``KeyboardInterrupt`` once this process was asked to stop (even if that
        interrupt was lost on its way: see :mod:`..system.interrupts`)."""
        interrupts.check()
        if self.cancel is not None and self.cancel.is_set():
            raise RunStopped(f"workflow {workflow!r} was stopped after {steps} steps")


NETGENT_PLACEHOLDER = re.compile(r"%([A-Za-z_][A-Za-z0-9_]*)%")
"""NetGent's own placeholder form, ``%name%``, as its executor fills variables."""
ENGINE_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""NetGent's newer engine's form, ``{{name}}``: a parameter that is nothing else keeps its
value's type (a number, a list)."""
_ANY_PLACEHOLDER = re.compile(
    f"{ENGINE_PLACEHOLDER.pattern}|{PLACEHOLDER.pattern}|{NETGENT_PLACEHOLDER.pattern}"
)


def substitute(value: Any, values: Mapping[str, Any]) -> Any:
    """Replace ``{name}`` (and NetGent's ``%name%`` and ``{{name}}``) placeholders in
    strings, recursively, by ``values[name]``.

    Unknown names are left as they are, so braces in CSS or JavaScript and percent signs
    in URLs survive.
    """
    if isinstance(value, str):
        whole = ENGINE_PLACEHOLDER.fullmatch(value.strip())
        if whole and whole[1] in values and not isinstance(values[whole[1]], Secret):
            return values[whole[1]]  # '{{seconds}}' alone: the number itself

        def fill(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2) or m.group(3)
            if name not in values:
                return m.group(0)
            value = values[name]
            return value.reveal() if isinstance(value, Secret) else str(value)

        # every form in one pass: a filled value is never read again, so a value that
        # holds '%user%' or '{user}' (a password, a query) is typed as it is
        return _ANY_PLACEHOLDER.sub(fill, value)
    if isinstance(value, dict):
        return {k: substitute(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, values) for v in value]
    return value


def host_allowed(url: str, allowed: list[str] | None) -> bool:
    """Whether ``url`` may be visited; non-network URLs (about:, data:) always may."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https", "ws", "wss") or allowed is None:
        return True
    host = parts.hostname or ""
    return any(a == "*" or fnmatch.fnmatch(host, a.lower()) for a in allowed)


def check_host(
    url: str,
    allowed: list[str] | None,
    what: str,
    redact: Callable[[str], str],
    guard: NavigationGuard | None = None,
) -> None:
    """Raise :class:`NavigationError` for a URL outside ``allowed`` (``what`` says how it
    came: "navigation to", "the browser went to"), for one the navigation ``guard``
    blocked before it was requested, or when the guard failed (closed) during the run."""
    if guard is not None and guard.fault:
        raise NavigationError(redact(guard.fault))
    if guard is not None and guard.blocked:
        raise NavigationError(
            f"the page tried to open {redact(guard.blocked[0])}, outside allowed_hosts "
            f"{allowed}: it was stopped before any request left; add the host to the "
            "workflow's 'allowed_hosts' if this is expected"
        )
    if not host_allowed(url, allowed):
        raise NavigationError(
            f"{what} {redact(url)} is outside allowed_hosts {allowed}: add the host to the "
            "workflow's 'allowed_hosts' if this is expected"
        )
