"""One engine tick: every candidate state's checks evaluated in the page at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .session import browser_gone, cdp

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


@cache
def checks_source() -> str:
    """The JavaScript of ``checks.js``, read once per process."""
    return resources.files(__package__).joinpath("checks.js").read_text(encoding="utf-8")


@dataclass
class Tick:
    """What one evaluation saw: the page and each state's check results."""

    doc: str = ""
    href: str = ""
    title: str = ""
    results: list[list[tuple[bool, str]]] = field(default_factory=list)
    matched: list[int] = field(default_factory=list)
    error: str = ""
    qoe: list[dict[str, Any]] = field(default_factory=list)
    """Video quality samples the page had waiting (see :mod:`.video`)."""
    net_error: str = ""
    """Chromium's error code when it shows its own error page (``ERR_CONNECTION_REFUSED``)."""
    status: int = 0
    """The HTTP status the server answered the page's document with (0: unknown)."""
    hidden: bool = False
    """The page's tab is in the background (no animation frames: it may not render)."""
    pending: list[tuple[str, str, int]] | None = None
    """The page's requests still waiting for an answer, oldest first: method, URL and
    milliseconds waited; ``None`` when the page's requests are not watched (see
    :func:`watch_requests`)."""

    @property
    def ok(self) -> bool:
        """Whether the page answered (it may not while it navigates)."""
        return not self.error


def evaluate(
    driver: WebDriver,
    states: list[dict[str, Any]],
    exclude: dict[str, Any] | None,
    wait_ms: int,
    poll_ms: int = 50,
    *,
    fresh: bool = False,
    rows: bool = True,
) -> Tick:
    """Evaluate ``states``' checks, waiting in the page up to ``wait_ms`` for a match.

    Exactly one WebDriver command. A page that navigates away while the script waits
    answers with ``error`` set; the caller simply evaluates again on the new page.
    ``fresh``: no real page has loaded in this run yet, so a url check naming a start
    page holds on any start page (see ``checks.js``).
    """
    from selenium.common.exceptions import WebDriverException

    try:
        raw = driver.execute_async_script(
            checks_source(),
            states,
            {
                "exclude": exclude,
                "wait_ms": wait_ms,
                "poll_ms": poll_ms,
                "fresh": fresh,
                "rows": rows,
            },
        )
    except WebDriverException as exc:
        if browser_gone(exc):
            raise  # the engine reports a dead browser, not a page that does not match
        return _tick_error(exc)
    if not isinstance(raw, dict):
        return Tick(error=f"unexpected answer from the page: {raw!r}")
    if raw.get("error"):
        return Tick(error=str(raw["error"]), qoe=list(raw.get("qoe") or []))
    return Tick(
        doc=str(raw["doc"]),
        href=str(raw["href"]),
        title=str(raw["title"]),
        results=[
            [(bool(c[0]), str(c[1]) if len(c) > 1 else "") for c in row] for row in raw["results"]
        ],
        matched=[int(i) for i in raw["matched"]],
        qoe=list(raw.get("qoe") or []),
        net_error=str(raw.get("net_error") or ""),
        status=int(raw.get("status") or 0),
        hidden=bool(raw.get("hidden")),
        pending=None
        if raw.get("pending") is None
        else [(str(m), str(u), int(ms)) for m, u, ms in raw["pending"]],
    )


@cache
def _pending_source() -> str:
    return resources.files(__package__).joinpath("pending.js").read_text(encoding="utf-8")


def watch_requests(driver: WebDriver) -> None:
    """Watch the requests of every page the current tab loads from now on (and of the
    page it shows), so :attr:`Tick.pending` can tell a slow server from UI drift."""
    cdp(driver, "Page.addScriptToEvaluateOnNewDocument", {"source": _pending_source()})
    driver.execute_script(_pending_source())


def _line(exc: Exception) -> str:
    msg = getattr(exc, "msg", None) or str(exc)
    return str(msg).strip().splitlines()[0] if msg else type(exc).__name__


def _tick_error(exc: Exception) -> Tick:
    """A passing condition of the page: navigated away, alert, window closed."""
    from selenium.common.exceptions import NoSuchWindowException

    if isinstance(exc, NoSuchWindowException):
        return Tick(error="window closed: " + _line(exc))
    # "unexpected alert", "target frame detached", a script timeout and similar
    return Tick(error=_line(exc))
