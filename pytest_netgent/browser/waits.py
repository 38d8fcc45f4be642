"""Explicit waits, and the failure an action ends in: what every action builds on.

An action waits for what it needs (an element to exist and accept the input, a tab to
open, a text to show) up to its timeout, polling at a short interval with no fixed
delay, and fails with an :class:`ActionFailed` that says what was not found where.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import NetgentError
from .session import driver_errors

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

POLL = 0.03
"""Seconds between two attempts while waiting for an element."""


class ActionFailed(NetgentError):
    """An action could not be carried out; the message says what and where."""

    cause = "UI drift"
    """What a failed run reports as its cause, unless the page tells otherwise."""

    def __init__(self, message: str, *, unloaded: bool = False) -> None:
        super().__init__(message)
        self.unloaded = unloaded
        """A page it opened did not finish loading in time (slow network or server)."""


class InvalidStep(ActionFailed):
    """The action's own parameters are at fault, whatever the page: a selector the browser
    cannot parse, a key no keyboard has. The cached state is wrong, not the site."""

    cause = "invalid cached states"


class Waits:
    """The waiting every action shares: ``timeout`` bounds each explicit wait, ``deadline``
    (a :func:`time.monotonic` time) the whole workflow, and :attr:`cancel` cuts a wait
    short."""

    def __init__(
        self,
        driver: WebDriver,
        timeout: float,
        check_url: Callable[[str], None],
        deadline: float | None = None,
    ) -> None:
        self.driver = driver
        self.timeout = timeout
        self.check_url = check_url
        """Raises when a URL is outside the run's allowed hosts."""
        self.deadline = deadline
        self.cancel: threading.Event | None = None
        """Set from another thread, it cuts a wait short (the run is being stopped)."""

    def _where(self) -> str:
        try:
            return f"on {self.driver.current_url} (title {self.driver.title!r})"
        except driver_errors():  # the page may be gone; the report still needs a sentence
            return "on the current page"

    def _until(self, what: str, attempt: Callable[[], Any], timeout: float | None = None) -> Any:
        """Retry ``attempt`` until it returns something truthy or ``timeout`` (default:
        the action timeout) passes; then fail with ``what``, where, and the last error."""
        from selenium.common.exceptions import (
            ElementClickInterceptedException,
            ElementNotInteractableException,
            InvalidElementStateException,
            NoSuchElementException,
            StaleElementReferenceException,
        )

        retry = (
            ElementClickInterceptedException,
            ElementNotInteractableException,
            InvalidElementStateException,
            NoSuchElementException,
            StaleElementReferenceException,
        )
        limit = self.timeout if timeout is None else timeout
        left = ""
        if self.deadline is not None and self.deadline - time.monotonic() < limit:
            limit = max(self.deadline - time.monotonic(), 0.0)  # no wait past the workflow's
            left = " (what was left of the workflow's timeout)"
        end = time.monotonic() + limit
        last = ""
        while True:
            try:
                result = attempt()
                if result:
                    return result
            except retry as exc:
                last = short(exc)
            if time.monotonic() >= end:
                detail = f": {last}" if last else ""
                raise ActionFailed(
                    f"{what} {self._where()} after waiting {limit:.3g}s{left}{detail}"
                )
            time.sleep(POLL)


def short(exc: Exception) -> str:
    """The first line of a WebDriver error's message."""
    msg = getattr(exc, "msg", None) or str(exc)
    return str(msg).strip().splitlines()[0] if msg else type(exc).__name__


def seconds(
    value: Any, action: str, name: str, *, zero: bool = False, unit: str = "seconds"
) -> float:
    """``value`` as a number of seconds above 0 (or 0 too, with ``zero``), else an
    :class:`ActionFailed` naming the action and the parameter."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = -1.0
    if not (number >= 0 if zero else number > 0) or number == float("inf"):
        least = "0 or more" if zero else "above 0"
        raise ActionFailed(f"{action}: {name} must be a number of {unit} {least}, got {value!r}")
    return number


def flag(value: Any, default: bool = False) -> bool:
    """A YAML or JSON flag, given as a boolean or as text (``"true"``, ``"false"``);
    ``None`` (JSON's null) is the ``default``."""
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "1", "on")
    return bool(value)
