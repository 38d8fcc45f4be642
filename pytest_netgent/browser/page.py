"""One engine tick: every candidate state's checks evaluated in the page at once."""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .chain import Chain
from .declared import adopt_declared_roots
from .session import browser_gone, cdp

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


@cache
def script(name: str) -> str:
    """The JavaScript of ``name`` in this package, read once per process."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


@cache
def checks_source(roles: bool = False) -> str:
    """The JavaScript of ``checks.js``, with the helpers of ``deep.js`` that reach into
    shadow roots and frames; with ``roles``, also what ``role`` and ``media`` checks stand
    on (``a11y.js``, ``roles.js``: some 60 KB more to parse, sent only when a state uses
    them)."""
    if roles:
        return script("deep.js") + script("a11y.js") + script("roles.js") + script("checks.js")
    return script("deep.js") + script("checks.js")


ROLE_CHECKS = frozenset({"role", "media"})
"""The check types ``checks.js`` evaluates with ``roles.js``."""


def uses_roles(states: list[dict[str, Any]]) -> bool:
    """Whether any check of ``states`` needs ``roles.js``."""
    return any(c.get("type") in ROLE_CHECKS for s in states for c in s.get("checks", ()))


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
    unsampled: int = 0
    """While sampling: the page's frames of another site not sampled yet (added since)."""
    rtc: list[dict[str, Any]] = field(default_factory=list)
    """WebRTC samples the page had waiting (see :mod:`.webrtc`)."""
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
    arriving: list[tuple[str, str, int]] = field(default_factory=list)
    """The page's requests answered whose body is still arriving, oldest first: method,
    URL and milliseconds since each was sent (when the page's requests are watched)."""
    ready: str = ""
    """The document's ``readyState``: ``loading``, ``interactive`` or ``complete``."""
    leaving: int = 0
    """Milliseconds since the page began to leave for the next one, whose document has not
    come yet (0: it is not leaving)."""

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

    handed = _handed.get(driver)
    try:
        raw = driver.execute_async_script(
            checks_source(uses_roles(states)),
            states,
            {
                "exclude": exclude,
                "wait_ms": wait_ms,
                "poll_ms": poll_ms,
                "fresh": fresh,
                "rows": rows,
                "adopted": _handed_over(handed),
            },
        )
    except WebDriverException as exc:
        if browser_gone(exc):
            raise  # the engine reports a dead browser, not a page that does not match
        return _tick_error(exc)
    if not isinstance(raw, dict):
        return Tick(error=f"unexpected answer from the page: {raw!r}")
    if raw.get("error"):
        return Tick(
            error=str(raw["error"]),
            qoe=list(raw.get("qoe") or []),
            rtc=list(raw.get("rtc") or []),
        )
    tick = _tick(raw)
    if raw.get("unseen"):  # a check failed that a closed root declared in the HTML may hold
        hosts = int(raw["unseen"])
        adopted = adopt_declared_roots(driver)
        # the hosts left without a root in sight (those handed over have theirs now)
        _handed[driver] = (tick.doc, max(0, hosts - adopted), time.monotonic())
        if adopted:
            return evaluate(driver, states, exclude, wait_ms, poll_ms, fresh=fresh, rows=rows)
    if raw.get("maybe"):  # the page waited up to checks.js's FAR_MS for them
        tick.matched = sorted(tick.matched + _far_matches(driver, states, raw["maybe"], tick))
    return tick


_handed: weakref.WeakKeyDictionary[Any, tuple[str, int, float]] = weakref.WeakKeyDictionary()
"""Per driver: the document whose declared closed roots were last handed over, how many
custom elements without a root in sight it had then (another number: asked again), and
when (``time.monotonic()``)."""

HAND_OVER_S = 1.0
"""The least time between two hand-overs in one document (a page adding elements all the
time is not asked at every look)."""


def _handed_over(handed: tuple[str, int, float] | None) -> list[Any] | None:
    """``checks.js``'s ``adopted``: the document last handed over, its number of hosts, and
    whether that was too recently to ask again whatever the number now."""
    if handed is None:
        return None
    doc, hosts, at = handed
    return [doc, hosts, time.monotonic() - at < HAND_OVER_S]


def _tick(raw: dict[str, Any]) -> Tick:
    return Tick(
        doc=str(raw["doc"]),
        href=str(raw["href"]),
        title=str(raw["title"]),
        results=[
            [(bool(c[0]), str(c[1]) if len(c) > 1 else "") for c in row] for row in raw["results"]
        ],
        matched=[int(i) for i in raw["matched"]],
        qoe=list(raw.get("qoe") or []),
        unsampled=int(raw.get("unsampled") or 0),
        rtc=list(raw.get("rtc") or []),
        net_error=str(raw.get("net_error") or ""),
        status=int(raw.get("status") or 0),
        hidden=bool(raw.get("hidden")),
        pending=None if raw.get("pending") is None else _requests(raw["pending"]),
        arriving=_requests(raw.get("arriving") or []),
        ready=str(raw.get("ready") or ""),
        leaving=int(raw.get("leaving") or 0),
    )


def _requests(rows: list[Any]) -> list[tuple[str, str, int]]:
    """``checks.js``'s requests: method, URL, milliseconds."""
    return [(str(m), str(u), int(ms)) for m, u, ms in rows]


def _far_matches(
    driver: WebDriver, states: list[dict[str, Any]], maybe: list[Any], tick: Tick
) -> list[int]:
    """The states of ``maybe`` (index, checks in frames of another origin) whose checks
    there hold, looked at through WebDriver: a page script cannot read those frames."""
    chain = Chain(driver)
    matched = []
    try:
        for index, far in maybe:
            holds = True
            for number in far:
                ok, why = _far_check(chain, states[index]["checks"][number])
                row = tick.results[index] if index < len(tick.results) else []
                if number < len(row):
                    row[number] = (ok, why)
                holds = holds and ok
            if holds:
                matched.append(int(index))
    finally:
        chain.leave()
    return matched


def _far_check(chain: Chain, check: dict[str, Any]) -> tuple[bool, str]:
    """A check in frames of another origin: whether it holds, and why not."""
    from selenium.common.exceptions import WebDriverException

    params = check["params"]
    try:
        if check["type"] == "text":
            ok, why = _far_text(chain, str(params["text"]))
        else:
            ok, why = _far_element(chain, params)
    except WebDriverException as exc:
        if browser_gone(exc):
            raise
        return False, _line(exc)  # a check that cannot be evaluated holds negated neither
    if params.get("negate") is True:
        return (not ok), ("" if not ok else "holds, and the check says it must not")
    return ok, why


def _far_element(chain: Chain, params: dict[str, Any]) -> tuple[bool, str]:
    """An element check in frames of another origin (its ``text``, ``count`` and
    ``at_least`` as ``checks.js`` reads them)."""
    found = chain.find(params.get("by", "css selector"), str(params["selector"]))
    if "text" in params:
        found = [e for e in found if str(params["text"]) in (e.text or "")]
    if not (params.get("visible") is False or params.get("check_visibility") is False):
        found = [e for e in found if e.is_displayed()]
    if "count" in params:
        ok = len(found) == int(float(params["count"]))
    else:
        ok = len(found) >= int(float(params.get("at_least", 1)))
    if ok:
        return True, ""
    return False, (f"{len(found)} found" if found else "not found")  # as checks.js says


TOP_URL = "try { return top.location.href; } catch (e) { return ''; }"
"""A script that returns the address of the tab's page (its top document's, from any
frame of its origin; "" from a frame of another)."""

FAR_FRAMES = 20
"""Most frames of another origin one look (a text check, an observation, the video
sampler's start) enters."""


def _far_text(chain: Chain, text: str) -> tuple[bool, str]:
    """Whether a frame of another origin, anywhere in the page (in shadow roots, in other
    frames), shows ``text``."""
    chain.leave()
    queue = list(chain.driver.execute_script(script("deep.js") + "return ngFarFrames();"))
    for shown in in_far_frames(chain, queue, "ngDeepText()"):
        if text in str(shown):
            return True, ""
    return False, "not on the page nor in its frames"


def in_far_frames(
    chain: Chain, queue: list[str], look: str, *, wait: bool = False
) -> Iterator[Any]:
    """What the expression ``look`` (deep.js's helpers at hand) is in each frame of
    another origin on ``queue`` (their chains) and in those inside them, entered through
    WebDriver, at most :data:`FAR_FRAMES`; back in the page after each. With ``wait``,
    ``look`` is a promise, and what it resolves to (``None`` if it fails)."""
    if wait:
        source = script("deep.js") + (
            "const done = arguments[arguments.length - 1];"
            f"Promise.resolve().then(() => {look}).then("
            "(v) => done([v, ngFarFrames()]), () => done([null, ngFarFrames()]));"
        )
    else:
        source = script("deep.js") + f"return [{look}, ngFarFrames()];"
    run = chain.driver.execute_async_script if wait else chain.driver.execute_script
    try:
        for _ in range(FAR_FRAMES):
            if not queue:
                break
            path = queue.pop(0)
            if chain.enter(path):
                value, inner = run(source)
                chain.leave()
                queue += [f"{path} >> {link}" for link in inner]
                yield value
            chain.leave()
    finally:
        chain.leave()


@cache
def _page_scripts() -> str:
    return script("pending.js") + script("shadow.js")


def watch_requests(driver: WebDriver) -> None:
    """Watch the requests of every page the current tab loads from now on (and of the
    page it shows), so :attr:`Tick.pending` can tell a slow server from UI drift; and keep
    the closed shadow roots its pages attach, so checks and observation reach inside."""
    cdp(driver, "Page.addScriptToEvaluateOnNewDocument", {"source": _page_scripts()})
    driver.execute_script(_page_scripts())


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
