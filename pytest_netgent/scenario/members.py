"""Running a scenario's members at the same time: each browser member on a browser and
profile of its own in a thread, each command in a process group of its own.

The scenario's clock starts once every browser is up. A member that fails stops the
others (workflows at their next step, commands by SIGTERM to their group, then SIGKILL);
the scenario's ``duration`` ends what still runs. Nothing outlives :meth:`Members.run`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NetgentError, display_path, heal_command
from ..replay.run import RunResult, TimelineEvent, substitute
from ..system.leftovers import end_marked, owned_env
from ..workflow.semantics import unset_error
from .spec import LoadedScenario, ResolvedMember

if TYPE_CHECKING:
    from ..browser.pool import BrowserPool
    from ..replay.run_settings import ReplaySettings
    from ..replay.trace import Trace
    from ..system.redaction import Secret

TAIL_BYTES = 2000
"""How much of a command's output a failure report shows (its end)."""

STOP_GRACE_S = 3.0
"""Seconds a stopped command's group has between SIGTERM and SIGKILL."""


@dataclass
class Outcome:
    """How one member ended."""

    name: str
    kind: str
    passed: bool = False
    stopped: bool = False
    """Stopped before its end: because another member failed, or by its ``stop`` (or
    the scenario's duration) before its workflow reached its end state."""
    detail: str = ""
    """Why it failed (a workflow's report, a command's exit status and output tail)."""
    result: RunResult | None = None
    runs: int = 0
    """How many times a command ran."""
    command_runs: list[RunResult] = field(default_factory=list)
    """A command's runs, one timeline each (its start and how it ended)."""
    started: float = 0.0
    ended: float = 0.0
    frames: list[tuple[float, bytes]] = field(default_factory=list)
    """A browser member's pictures (seconds, JPEG) for its video (``--netgent-video``)."""
    trace: Trace | None = None
    """A browser member's trace (``--netgent-trace``), written with the scenario's."""

    @property
    def status(self) -> str:
        return "passed" if self.passed else "stopped" if self.stopped else "failed"


@dataclass
class Members:
    """Runs the members of ``scenario`` (values filled) and reports each one's end."""

    loaded: LoadedScenario
    values: Mapping[str, Any]
    settings: ReplaySettings
    base_url: str
    pools: Mapping[str, BrowserPool]
    """The browser of each browser member, by name (started already)."""
    groups: Mapping[str, int] = field(default_factory=dict)
    """The group id each member's processes run under (empty: the caller's own)."""
    folder: Path | None = None
    """Where members write their files (``<folder>/<member>/``), if anywhere."""
    command_logs: bool = False
    """Keep each command's whole output in ``<folder>/<member>/command.log``."""
    record: Mapping[str, Any] = field(default_factory=dict)
    """Browser members that record their workflow's missing states as they run, by name:
    the synthesiser each records with (record mode)."""
    cancel: threading.Event = field(default_factory=threading.Event)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    secrets: dict[str, str | Secret] = field(default_factory=dict)
    """Every secret a workflow member used (kept out of captures)."""
    _failed: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> dict[str, Outcome]:
        """Run every member to its end (or the scenario's); returns their outcomes."""
        scenario = self.loaded.scenario
        self.t0 = time.monotonic()
        self.outcomes = {
            m.name: Outcome(m.name, m.kind) for m in self.loaded.members
        }  # in the file's order
        threads = []
        for member in self.loaded.members:
            target = self._browser if member.loaded is not None else self._command
            thread = threading.Thread(
                target=self._guarded, args=(target, member), name=f"netgent-member-{member.name}"
            )
            thread.start()
            threads.append(thread)
        limit = self.t0 + scenario.limit
        late: list[str] = []
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=0.5)
                    if time.monotonic() > limit and not late:
                        # still running at the scenario's limit: stuck, or never ending
                        late = [m.name for m, t in zip(self.loaded.members, threads, strict=True)
                                if t.is_alive()]  # fmt: skip
                        self.cancel.set()
        except BaseException:  # Ctrl-C, SIGTERM: the members end before the run unwinds
            self.cancel.set()
            for thread in threads:
                thread.join(timeout=STOP_GRACE_S * 3)
            raise
        members = {m.name: m for m in self.loaded.members}
        for name in late:
            outcome = self.outcomes[name]
            outcome.passed = outcome.stopped = False
            outcome.detail = self._late(members[name])
        return self.outcomes

    def _late(self, member: ResolvedMember) -> str:
        """Why ``member``, still running at the scenario's limit, failed: the bound that
        ended it, where that bound comes from, and how to set one."""
        scenario = self.loaded.scenario
        if member.loaded is None:
            what = f"its command {member.member.run!r} had not exited"
            fix = (
                "give the member a 'stop' (seconds after the scenario's start; a command "
                "ended by its stop has not failed), or the scenario a longer 'timeout'"
            )
        else:
            what = "its workflow had not reached its end"
            fix = "give the scenario a longer 'timeout', or the member a 'stop' to end it sooner"
        return (
            f"still running at the scenario's limit ({scenario.limit:g}s: "
            f"{scenario.limit_source}), and ended then: {what}; {fix}"
        )

    def _guarded(self, target: Callable[[ResolvedMember], None], member: ResolvedMember) -> None:
        outcome = self.outcomes[member.name]
        try:
            target(member)
        except Exception as exc:  # a member's own crash fails it, never the others' run
            outcome.passed = False
            outcome.detail = f"{type(exc).__name__}: {exc}"
        outcome.ended = outcome.ended or time.time()
        if not outcome.passed and not outcome.stopped:
            with self._lock:
                self._failed.append(member.name)
            self.cancel.set()

    def _until(self, seconds: float) -> bool:
        """Wait until ``seconds`` after the scenario's start; False if it was cancelled."""
        delay = self.t0 + seconds - time.monotonic()
        return not (delay > 0 and self.cancel.wait(delay)) and not self.cancel.is_set()

    def _end_of(self, member: ResolvedMember) -> float | None:
        """Seconds after the scenario's start at which ``member`` is ended, if ever."""
        ends = [e for e in (member.member.stop, self.loaded.scenario.duration) if e is not None]
        return min(ends) if ends else None

    def _stopped(self, outcome: Outcome) -> None:
        outcome.stopped = True
        failed = ", ".join(repr(n) for n in self._failed) or "another member"
        outcome.detail = f"stopped when member {failed} failed"

    # ------------------------------------------------------------------ browsers

    def _browser(self, member: ResolvedMember) -> None:
        from ..replay.runner import NetgentBrowser

        outcome = self.outcomes[member.name]
        assert member.loaded is not None
        if not self._until(member.member.start):
            self._stopped(outcome)
            return
        outcome.started = time.time()
        browser = NetgentBrowser(self.pools[member.name], self.settings, self.base_url)
        workflow = member.loaded.workflow
        params = member_params(member, self.values)
        end = self._end_of(member)
        duration = None if end is None else max(end - member.member.start, 0.1)
        if workflow.duration is not None:
            duration = min(duration or workflow.duration, workflow.duration)
        result = browser.run(
            member.loaded,
            params=params,
            heal=heal_command(f"{display_path(member.loaded.path)}::{workflow.name}"),
            artifacts=self.folder / member.name if self.folder else None,
            check=False,
            # members replay; in record mode, one whose workflow no other member runs
            # records its missing states in place (its actions run once, not twice)
            record="missing" if member.name in self.record else "",
            synthesiser=self.record.get(member.name),
            duration=duration,
            cancel=self.cancel,
        )
        self.secrets.update(browser.secrets)
        if browser.video is not None:
            browser.stop_video()
            outcome.frames = browser.video.frames
        outcome.trace = browser.trace
        outcome.result = result
        outcome.ended = time.time()
        outcome.passed = result.passed and result.error is None
        if outcome.passed:
            return
        error = result.error
        if self.cancel.is_set() and self._failed and _was_stopped(error):
            self._stopped(outcome)
            return
        # out of time in its states, or in a page load its stop cut short
        ran_out = getattr(error, "out_of_time", False) or (
            end is not None and time.monotonic() >= self.t0 + end - 0.05
        )
        if end is not None and ran_out:
            outcome.stopped = True
            by = "its stop" if member.member.stop == end else "the scenario's duration"
            where = f" in state {result.states_visited[-1]!r}" if result.states_visited else ""
            outcome.detail = (
                f"stopped by {by} ({end:g}s after the scenario's start){where} before "
                "reaching its end state: give it a later 'stop', or end the workflow in a "
                "continuous state to have it run until then"
            )
            return
        outcome.detail = error.report() if isinstance(error, NetgentError) else str(error)

    # ------------------------------------------------------------------ commands

    def _command(self, member: ResolvedMember) -> None:
        outcome = self.outcomes[member.name]
        spec = member.member
        assert spec.run is not None
        command = shell_fill(spec.run, self.values)
        end = self._end_of(member)
        runs = spec.repeat or 1
        log = None
        if self.folder is not None and self.command_logs:
            (self.folder / member.name).mkdir(parents=True, exist_ok=True)
            log = (self.folder / member.name / "command.log").open("ab")
        try:
            number = 0
            while True:
                due = spec.start + (number * spec.every if spec.every else 0.0)
                if end is not None and spec.every and due >= end:
                    break  # a periodic command's last run is the one before its end
                if not self._until(due):
                    if not number or self._failed:
                        self._stopped(outcome)
                    else:
                        outcome.passed = True
                    return
                outcome.started = outcome.started or time.time()
                number += 1
                outcome.runs = number
                began, t0 = datetime.now(timezone.utc), time.monotonic()
                status, tail, cut = self._once(member, command, end, log)
                # ended on purpose (at its stop, or a periodic one at the scenario's end)
                on_purpose = cut == "stop" or (cut == "end" and bool(spec.every))
                passed = on_purpose or (not cut and status == 0)
                outcome.command_runs.append(
                    _command_run(member.name, command, number, (began, t0), status, cut, passed)
                )
                if on_purpose:
                    outcome.passed = True
                    return
                if cut == "cancel":
                    self._stopped(outcome)
                    return
                if cut == "end":
                    outcome.detail = (
                        f"run {number} of {command!r} was still running when the scenario's "
                        f"duration ({self.loaded.scenario.duration:g}s) ended; give the member "
                        f"a 'stop' to end it on purpose{_tail(tail)}"
                    )
                    return
                if status != 0:
                    outcome.detail = (
                        f"run {number} of {command!r} exited with status {status}{_tail(tail)}"
                    )
                    return
                if not spec.every and number >= runs:
                    break
            outcome.passed = True
        finally:
            outcome.ended = time.time()
            if log is not None:
                log.close()

    def _once(
        self, member: ResolvedMember, command: str, end: float | None, log: Any
    ) -> tuple[int, bytes, str]:
        """Run ``command`` once: ``(exit status, output tail, why it was cut)`` where the
        cut is "" (it exited), ``stop`` (the member's stop), ``end`` (the scenario's
        duration) or ``cancel`` (another member failed)."""
        kwargs: dict[str, Any] = {}
        if member.name in self.groups:
            kwargs["group"] = self.groups[member.name]
        # every process the command starts inherits this mark, also those that leave its
        # process group (setsid, a daemon): they are found by it and ended with it
        mark = f"{os.getpid()}-{id(self)}-{member.name}"
        kwargs["env"] = owned_env({**os.environ, MARK: mark})
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.loaded.path.parent,
            start_new_session=True,
            **kwargs,
        )
        tail: deque[bytes] = deque()
        size = [0]

        def read() -> None:
            out: Any = proc.stdout
            for chunk in iter(lambda: out.read1(65536), b""):
                if log is not None:
                    log.write(chunk)
                tail.append(chunk)
                size[0] += len(chunk)
                while size[0] - len(tail[0]) >= TAIL_BYTES:
                    size[0] -= len(tail.popleft())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        cut = ""
        try:
            while proc.poll() is None:
                if self.cancel.is_set():
                    cut = "cancel"
                elif end is not None and time.monotonic() >= self.t0 + end:
                    cut = "stop" if member.member.stop == end else "end"
                if cut:
                    _end_group(proc)
                    break
                self.cancel.wait(0.05)
        finally:
            if proc.poll() is None:
                _end_group(proc)
            _end_marked(mark)  # what it left running in the background
            reader.join(timeout=5)
            if proc.stdout is not None:
                proc.stdout.close()
        return proc.returncode, b"".join(tail)[-TAIL_BYTES:], cut


def _command_run(
    name: str,
    command: str,
    number: int,
    began_at: tuple[datetime, float],
    status: int,
    cut: str,
    passed: bool,
) -> RunResult:
    """One run of a command as a timeline: its start and how it ended (``began_at``:
    wall-clock and monotonic times of its start)."""
    began, t0 = began_at
    took = round(time.monotonic() - t0, 4)
    ended = (began + timedelta(seconds=took)).isoformat(timespec="milliseconds")
    how = {
        "": f"exit status {status}",
        "stop": "ended at the member's stop",
        "end": "ended at the scenario's end" if passed else "still running at the scenario's end",
        "cancel": "stopped when another member failed",
    }[cut]
    start = began.isoformat(timespec="milliseconds")
    return RunResult(
        workflow=name,
        passed=passed,
        end_state=f"run {number}",
        duration=took,
        started_at=start,
        timeline=[
            TimelineEvent("start", start, 0.0, detail=command),
            TimelineEvent("end", ended, took, state=f"run {number}", detail=how),
        ],
    )


def member_params(member: ResolvedMember, values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a browser member's workflow runs with: the scenario's values and the
    member's own ``vars``, filled, for the names its workflow knows."""
    assert member.loaded is not None
    if unset := unset_error(member.loaded, member.member.vars):
        raise unset
    known = member.loaded.workflow.known_names()
    merged = {**values, **member.member.vars}
    return {k: substitute(v, values) for k, v in merged.items() if k in known}


def shell_fill(command: str, values: Mapping[str, Any]) -> str:
    """``command`` with its ``{name}`` placeholders filled, each value quoted for the shell
    as one word (a value cannot add commands or options of its own)."""
    from ..workflow.spec import PLACEHOLDER

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return shlex.quote(str(values[name])) if name in values else match.group(0)

    return PLACEHOLDER.sub(fill, command)


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the command's process group, SIGKILL if it has not ended soon after;
    whatever the shell started ends with it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # the group, even if the shell has exited
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_GRACE_S)


MARK = "NETGENT_SCENARIO_MEMBER"
"""The environment variable that marks every process of one command member's run."""


def _end_marked(mark: str) -> None:
    """SIGKILL every process whose environment carries ``MARK=mark``: the children a
    command put in the background or in a session of their own outlive its process
    group."""
    end_marked(MARK, mark)


def _tail(output: bytes) -> str:
    text = output.decode(errors="replace").strip()
    if not text:
        return " (no output)"
    return "; its output ended with:\n" + "\n".join(f"    {line}" for line in text.splitlines())


def _was_stopped(error: BaseException | None) -> bool:
    """A run the scenario stopped (its engine reports it with the cause ``stopped``)."""
    from ..errors import RunStopped

    return getattr(error, "cause", "") == RunStopped.cause
