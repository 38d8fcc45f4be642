"""The error family of pytest-netgent.

Every error a user can meet derives from :class:`NetgentError` and carries the context
needed to act on it: the file and line at fault, the workflow, the step. ``repr_failure``
of workflow items prints :meth:`NetgentError.report` instead of a Python traceback.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def display_path(path: Path | str) -> str:
    """``path`` relative to the working directory when inside it, else as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


HEAL_COMMAND = "pytest --netgent-record=missing"
"""The command that records what is missing or stale (see :func:`heal_command`)."""


def heal_command(target: str = "") -> str:
    """The command that re-records ``target`` (a node id, or ``path::workflow``), as
    printed in drift reports: it works when pasted. ``--netgent-record`` takes an optional
    value, so a bare ``--netgent-record PATH`` would read the path as that value; the
    mode is given with ``=``. The target is quoted for the shell (it is the user's text)."""
    return HEAL_COMMAND + (f" {shlex.quote(target)}" if target else "")


class NetgentError(Exception):
    """Base of every error pytest-netgent raises on purpose."""

    def report(self) -> str:
        """The short, user-facing report printed in place of a traceback."""
        return str(self)


class WorkflowSpecError(NetgentError):
    """A workflow file cannot be used: YAML syntax, schema, names or placeholders.

    ``path`` and ``line`` (1-based) point at the fault; ``message`` says what is wrong
    and how to fix it, on one line.
    """

    def __init__(self, path: Path | str, line: int | None, message: str) -> None:
        self.path = Path(path)
        self.line = line
        self.message = message
        super().__init__(self.report())

    def report(self) -> str:
        shown = display_path(self.path)
        where = f"{shown}:{self.line}" if self.line else shown
        return f"{where}: {self.message}"


class CacheError(NetgentError):
    """A cached automaton is missing, stale or unreadable.

    Unreadable files are reported and left as they are: they are never overwritten.
    """

    def __init__(self, path: Path | str, message: str, *, heal: str = "") -> None:
        self.path = Path(path)
        self.message = message
        self.heal = heal
        super().__init__(self.report())

    def report(self) -> str:
        text = f"{display_path(self.path)}: {self.message}"
        if self.heal:
            text += f"\n  fix: {self.heal}"
        return text


class SecretError(NetgentError):
    """A secret's environment variable is not set."""


class BrowserError(NetgentError):
    """The browser could not be started, or stopped answering."""


class RunStopped(NetgentError):
    """The run was stopped from outside before its end (a scenario stops its other
    members when one fails)."""

    cause = "stopped"


class NavigationError(NetgentError):
    """The browser left, or tried to leave, the workflow's ``allowed_hosts``."""

    cause = "navigation blocked"


class ModelError(NetgentError):
    """The chat model failed (an exception, a rate limit, a time-out) or the item's LLM
    budget is spent: its own cause, never a browser crash or UI drift."""

    cause = "model error"


@dataclass
class CheckOutcome:
    """One check of one candidate state, as evaluated on the last tick."""

    description: str
    passed: bool
    error: str = ""


@dataclass
class StateOutcome:
    """One candidate state and its checks on the last tick."""

    name: str
    checks: list[CheckOutcome] = field(default_factory=list)

    @property
    def matched(self) -> bool:
        """Whether every check passed."""
        return all(c.passed for c in self.checks)


@dataclass
class DriftContext:
    """What the page looked like when a replay stopped matching the automaton."""

    step: int
    last_state: str
    url: str
    title: str
    candidates: list[StateOutcome] = field(default_factory=list)
    screenshot: str = ""


class ReplayError(NetgentError):
    """A replay failed on the page: UI drift, an action that found nothing, a limit.

    The report lists the step, last state reached, URL and title, every candidate
    state's checks with pass/fail, the screenshot and the command that heals it.
    """

    def __init__(
        self,
        reason: str,
        context: DriftContext | None = None,
        *,
        workflow: str = "",
        location: str = "",
        heal: str = "",
        cause: str = "UI drift",
    ) -> None:
        self.cause = cause
        """What happened: ``UI drift``, or a fault of the site or the network that no
        re-recording heals (``network error``, ``server error``, ``network
        condition``)."""
        self.out_of_time = False
        """The run's ``duration`` ended in a state that may not run it out (a scenario
        reports a member ended so by its ``stop`` as stopped)."""
        self.reason = reason
        self.context = context
        self.workflow = workflow
        self.location = location
        self.heal = heal
        self.pick = ""
        """The command that opens a step record declined in the studio, if any."""
        super().__init__(reason)

    def report(self) -> str:
        lines = []
        head = f"{self.cause} in workflow '{self.workflow}'" if self.workflow else self.cause
        if self.location:
            head += f" ({self.location})"
        lines.append(head)
        lines.append(f"  reason: {self.reason}")
        ctx = self.context
        if ctx is not None:
            lines.append(f"  step: {ctx.step}")
            lines.append(f"  last state reached: {ctx.last_state or '(none)'}")
            lines.append(f"  page: {ctx.url}")
            lines.append(f"  title: {ctx.title!r}")
            if ctx.candidates:
                lines.append("  candidate states:")
                for state in ctx.candidates:
                    mark = "MATCH" if state.matched else "no match"
                    lines.append(f"    {state.name}: {mark}")
                    for check in state.checks:
                        flag = "pass" if check.passed else "FAIL"
                        err = f" [{check.error}]" if check.error else ""
                        lines.append(f"      [{flag}] {check.description}{err}")
            if ctx.screenshot:
                lines.append(f"  screenshot: {ctx.screenshot}")
        if self.pick:
            lines.append(f"  pick the element by hand: {self.pick}")
        if self.heal and self.cause == "UI drift":
            lines.append(f"  heal with: {self.heal}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    def with_details(self, **details: Any) -> ReplayError:
        """Fill in workflow, location and heal command once the caller knows them."""
        for key, value in details.items():
            if value and not getattr(self, key):
                setattr(self, key, value)
        return self
