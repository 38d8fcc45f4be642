"""The ground every measurement step stands on: its params read as NetGent reads them,
its tool found and run in a process group of its own, and the failure it reports.

A step's process is waited for in short slices so that a deadline or a stop request is
honoured within a fraction of a second; then the whole process group is terminated
(``SIGTERM``, and ``SIGKILL`` two seconds later), so no tool is ever left running.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import NetgentError

SLICE = 0.2
"""The longest wait, in seconds, between two looks at the deadline and the stop event."""

KILL_GRACE = 2.0
"""Seconds a process group has between ``SIGTERM`` and ``SIGKILL``."""

TAIL_CHARS = 2000
"""At most this many characters of a tool's output go into an error message."""

NOT_GIVEN = ("", "none", "null")
"""Param values (as text, case-insensitive) that mean the param was not given."""

TRUE_WORDS = ("true", "1", "yes")
"""Texts that a flag param reads as true (case-insensitive); other texts are false."""

Redact = Callable[[str], str]


class MeasureError(NetgentError):
    """A measurement step failed; the message names the step, what failed and the fix."""


def failure(step: str, what: str, fix: str = "", output: str = "") -> MeasureError:
    """The error of ``step``: ``what`` failed, ``fix`` says what to do, ``output`` is the
    (already shortened and redacted) text the tool printed."""
    message = f"{step} step: {what}"
    if fix:
        message += f"; {fix}"
    if output:
        message += f"\n{output}"
    return MeasureError(message)


def tail(text: str, redact: Redact) -> str:
    """The last :data:`TAIL_CHARS` characters of ``text``, redacted (redaction comes
    first, so a secret cut in half by the shortening is still hidden)."""
    shown = redact(text.strip())
    return shown if len(shown) <= TAIL_CHARS else "…" + shown[-TAIL_CHARS:]


class Params:
    """The params of one step, read as NetGent reads them: values may arrive as text
    (filled from ``{{placeholders}}``), ``"none"``/``"null"`` mean not given."""

    def __init__(self, step: str, values: Mapping[str, Any]) -> None:
        self.step = step
        self.values = values

    def raw(self, name: str) -> Any:
        """The value of ``name``, or None when it is not given."""
        value = self.values.get(name)
        if isinstance(value, str) and value.strip().lower() in NOT_GIVEN:
            return None
        return value

    def text(self, name: str) -> str | None:
        """``name`` as text, or None."""
        value = self.raw(name)
        return None if value is None else str(value).strip()

    def required(self, name: str) -> str:
        """``name`` as text; a :class:`MeasureError` when it is not given."""
        value = self.text(name)
        if value is None:
            raise failure(self.step, f"the param {name!r} is missing", f"give `{name}:`")
        return value

    def integer(self, name: str, default: int | None = None, minimum: int = 0) -> int | None:
        """``name`` as a whole number (``int(float(x))``), at least ``minimum``."""
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = int(float(value))
        except (TypeError, ValueError, OverflowError):
            raise self._not_a_number(name, value) from None
        if number < minimum:
            raise failure(self.step, f"{name} is {number}", f"give at least {minimum}")
        return number

    def number(self, name: str, default: float | None = None) -> float | None:
        """``name`` as a non-negative number (``float(x)``)."""
        value = self.raw(name)
        if value is None:
            return default
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self._not_a_number(name, value) from None
        if not number >= 0 or number == float("inf"):
            raise failure(self.step, f"{name} is {value!r}", "give a number of at least 0")
        return number

    def flag(self, name: str, default: bool = False) -> bool:
        """``name`` as a bool: a bool as given, a text true when it is one of
        :data:`TRUE_WORDS`."""
        value = self.raw(name)
        if value is None:
            return default
        if isinstance(value, str):
            return value.strip().lower() in TRUE_WORDS
        return bool(value)

    def _not_a_number(self, name: str, value: Any) -> MeasureError:
        return failure(self.step, f"{name} is {value!r}, not a number", "give a number")


@dataclass(frozen=True)
class Peer:
    """Who a step talks to: ``host``, and the TCP ``port`` it connects to (None when the
    step reaches it by other means: ICMP, or UDP with ``udp``)."""

    host: str
    port: int | None = None
    udp: bool = False


def arg(number: float) -> str:
    """A number as a command-line argument: ``3``, ``0.2``."""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def find_tool(step: str, names: Sequence[str], install: str) -> str:
    """The path of the first of ``names`` on PATH; a :class:`MeasureError` saying how to
    ``install`` it when none is."""
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    listed = " or ".join(f"`{name}`" for name in names)
    raise failure(step, f"the command {listed} is not on PATH", f"install it: {install}")


def utc_now() -> str:
    """The present moment, ISO-8601 in UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Completed:
    """A tool's run to its end: its (redacted) command, exit status and output."""

    step: str
    command: list[str]
    started: str
    duration_s: float
    returncode: int
    stdout: str
    stderr: str
    redact: Redact

    def record(self) -> dict[str, Any]:
        """The fields every step's result starts with."""
        return {
            "step": self.step,
            "command": self.command,
            "started": self.started,
            "duration_s": round(self.duration_s, 6),
            "returncode": self.returncode,
        }

    def output(self) -> str:
        """The end of what the tool printed (stderr, else stdout), shortened and redacted."""
        return tail(self.stderr if self.stderr.strip() else self.stdout, self.redact)

    def fail(self, what: str, fix: str = "") -> MeasureError:
        """The error of this run: ``what`` failed, with the tool's output."""
        return failure(self.step, what, fix, self.output())

    def check(self, fix: str = "") -> None:
        """Raise when the tool exited nonzero (NetGent raises on it)."""
        if self.returncode != 0:
            raise self.fail(f"`{Path(self.command[0]).name}` exited {self.returncode}", fix)


@dataclass
class Runner:
    """How the steps of one call run: where files go, until when, and what stops them."""

    folder: Path
    deadline: float | None = None
    redact: Redact = str
    stop: threading.Event | None = None

    def run(self, step: str, argv: Sequence[str]) -> Completed:
        """Run ``argv`` to its end; on the deadline, a stop or an interrupt kill its
        process group and raise (the interrupt is raised again as it came)."""
        self._check_time(step, 0.0)
        started, begin = utc_now(), time.monotonic()
        process = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = self._wait(step, process, begin)
        finally:
            if process.returncode is None:
                end_group(process)
            _kill_leftovers(process.pid)
        return Completed(
            step=step,
            command=[self.redact(a) for a in argv],
            started=started,
            duration_s=time.monotonic() - begin,
            returncode=process.returncode,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            redact=self.redact,
        )

    def _wait(
        self, step: str, process: subprocess.Popen[bytes], begin: float
    ) -> tuple[bytes, bytes]:
        while True:
            try:
                return process.communicate(timeout=self._slice())
            except subprocess.TimeoutExpired:
                self._check_time(step, time.monotonic() - begin)

    def _slice(self) -> float:
        if self.deadline is None:
            return SLICE
        return max(0.01, min(SLICE, self.deadline - time.monotonic()))

    def _check_time(self, step: str, ran: float) -> None:
        if self.stop is not None and self.stop.is_set():
            raise failure(step, f"stopped after {ran:.1f} s (the run was stopped)")
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise failure(
                step,
                f"out of time after {ran:.1f} s (the deadline passed), the tool was stopped",
                "give the step more time, or make it shorter (fewer packets, a shorter test)",
            )


def end_group(process: subprocess.Popen[bytes]) -> None:
    """Terminate ``process`` and its whole group: ``SIGTERM``, then ``SIGKILL`` after
    :data:`KILL_GRACE` seconds; the process is reaped and its pipes drained."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.communicate(timeout=KILL_GRACE)
    except subprocess.TimeoutExpired:
        _signal_group(process.pid, signal.SIGKILL)
        process.communicate()


def _kill_leftovers(group: int) -> None:
    """What the tool started and left behind in its session (its group outlives it)."""
    _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, number)


def rate(bits_per_second: float | None) -> str:
    """A bit rate for people: ``9.41 Gbit/s``, ``12.3 Mbit/s``."""
    if bits_per_second is None:
        return "? bit/s"
    for unit, size in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
        if bits_per_second >= size:
            return f"{bits_per_second / size:.2f} {unit}"
    return f"{bits_per_second:.0f} bit/s"
