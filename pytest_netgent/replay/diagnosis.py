"""What went wrong with a run, told from the page: UI drift, or a fault no re-recording
heals (the network, the server, a slow API, a page that stopped answering).

Pure functions of what the engine saw (its last tick, its states), so every cause is
decided in one place.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ..browser.chain import Chain
from ..browser.declared import adopt_declared_roots
from ..browser.page import FAR_FRAMES, script
from ..errors import CheckOutcome, StateOutcome

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from selenium.webdriver.remote.webdriver import WebDriver

    from ..browser.page import Tick
    from ..system.redaction import Redactor
    from ..workflow.automaton import State

CHECKING = "the checks of the candidate states ran"
"""What the engine is doing during a tick, as a hang report names it."""

SLOW_MS = 1000
"""A request unanswered this long when a state timed out makes the failure a slow
server's, not UI drift."""

MAY_HAVE_CHANGED = " (the UI may have changed; see the failing checks below)"
"""What the engine says of a state timeout it cannot explain; a cause read from the page
replaces it."""


def candidates(states: list[State], tick: Tick) -> list[StateOutcome]:
    """Every state with each of its checks' result on ``tick`` (failed if not there)."""
    outcomes = []
    for i, state in enumerate(states):
        row = tick.results[i] if i < len(tick.results) else []
        checks = [
            CheckOutcome(check.describe(), *(row[j] if j < len(row) else (False, "")))
            for j, check in enumerate(state.checks)
        ]
        outcomes.append(StateOutcome(state.name, checks))
    return outcomes


def page_fault(
    tick: Tick, page: str, reason: str, network: str = "", *, unloaded: bool = False
) -> tuple[str, str]:
    """The cause and reason of a failure that looked like UI drift, once the page is
    read: ``network error``, ``server error``, ``timeout`` (a slow API), ``network
    condition`` (a page still loading under the item's shaped link, ``network``) or
    still ``UI drift``. ``page`` is the address the browser tried; ``unloaded``, that a
    page it opened did not finish loading in time."""
    if tick.net_error:
        return "network error", (
            f"the page did not load: {tick.net_error} at {page} (the site is down or "
            f"unreachable; no re-recording heals this); {reason}"
        )
    if tick.status >= 500:
        return "server error", (
            f"the server answered {tick.status} for {page} (a fault of the site, not of "
            f"the workflow); {reason}"
        )
    told = reason.removesuffix(MAY_HAVE_CHANGED)
    # a page that loaded under the condition, nothing of it still on its way, and shows no
    # state is UI drift all the same
    if network and (waiting := in_flight(tick, unloaded=unloaded)):
        return "network condition", (
            f"the page did not load within the timeout under the network condition "
            f"{network}: {waiting} (a shaped link too slow for this page, not a UI change: "
            "raise 'state_timeout' (or the workflow's 'timeout') for this condition, or "
            f"choose a faster one; no re-recording heals this); {told}"
        )
    if slow := unanswered(tick):
        return "timeout", (
            f"the page was still waiting for its server: {slow} (a slow server or API, "
            f"not a UI change; raise 'state_timeout' if the site is this slow); {told}"
        )
    return "UI drift", reason


def out_of_steps(state: State, repeated: bool, max_steps: int) -> tuple[str, str] | None:
    """The cause and reason when a run passed ``max_steps`` in ``state``; ``None`` when
    that ends it normally (a continuous state, with checks, running again: NetGent's
    recursion limit)."""
    if state.continuous and repeated and state.checks:
        return None
    if state.continuous and repeated:
        # no checks: it holds on any page, so its repeats prove nothing about the page
        return "no progress", (
            f"max_steps ({max_steps}) reached in continuous state {state.name!r}, which has "
            "no checks: it holds on every page, so its repeats say nothing of where the "
            "workflow got to and the end state was never reached; give it checks (what its "
            "page shows), or a 'duration' for how long to stay"
        )
    return "UI drift", (
        f"max_steps ({max_steps}) reached without an end state: a state may be looping "
        "(raise 'max_steps' if the workflow is that long)"
    )


def no_progress(
    name: str, fires: int, url: str, others: list[str], *, made: bool
) -> tuple[str, str]:
    """The cause and reason when state ``name`` ran ``fires`` times on an unchanged page
    (with ``others`` in turn); ``made``: synthesised in this run."""
    between = f", in turn with {', '.join(repr(n) for n in others)}" if others else ""
    fix = (
        "The synthesised checks do not tell its page from the next: re-record with more "
        "specific triggers (an exact URL, a heading, a text only that page shows)"
        if made
        else "Make its checks tell its page from the page its actions lead to, or give it "
        "'repeat' if it is meant to run again"
    )
    return "synthesis failure" if made else "no progress", (
        f"state {name!r} does not advance the page: it ran {fires} times on {url} without "
        f"the page changing{between}; its checks still hold on the page its actions lead "
        f"to. {fix}"
    )


def still_loading(tick: Tick) -> bool:
    """Whether the browser shows no page of a site yet (still on its blank start page,
    the next document not arrived)."""
    return not tick.href.startswith(("http:", "https:"))


def unanswered(tick: Tick) -> str:
    """The page's requests that waited at least :data:`SLOW_MS`, described; or ``""``."""
    return _described(tick.pending or [], "unanswered")


def in_flight(tick: Tick, *, unloaded: bool = False) -> str:
    """What of the page was still on its way when the run failed, described (``""``: it
    had all come): the page itself (``unloaded``: a page it opened did not finish loading),
    its document, the next page it was leaving for, its requests unanswered or whose
    answers were still arriving after :data:`SLOW_MS`."""
    if unloaded or still_loading(tick):
        return "it was still loading"
    parts = [unanswered(tick), _described(tick.arriving, "still arriving")]
    if tick.leaving >= SLOW_MS:
        parts.insert(0, f"the next page had not come {tick.leaving / 1000:.1f}s after it left")
    if tick.ready in ("loading", "interactive"):
        parts.insert(0, f"its document was still loading (readyState {tick.ready!r})")
    return ", ".join(p for p in parts if p)


def _described(requests: list[tuple[str, str, int]], state: str) -> str:
    """``requests`` (method, URL, milliseconds) of at least :data:`SLOW_MS`, described."""
    slow = [(m, u, ms) for m, u, ms in requests if ms >= SLOW_MS]
    return ", ".join(f"{m} {u} {state} after {ms / 1000:.1f}s" for m, u, ms in slow)


def hang(doing: str, states: list[State]) -> tuple[str, str]:
    """The cause and reason of a page that stopped answering while ``doing``."""
    scripts = [repr(s.name) for s in states if any(c.type == "script" for c in s.checks)]
    if doing == CHECKING and scripts:
        suspect, cause = f"a script check (of {', '.join(scripts)}) never returns", "script error"
    elif doing == CHECKING:
        suspect, cause = "a script of the page never returns", "script error"
    else:
        suspect = "the page never finished loading or a script of it never returns"
        cause = "timeout"
    return cause, (
        f"the page stopped answering while {doing}: {suspect}; its tab was closed to stop "
        "it (fix the script, or the site)"
    )


SCREENSHOTS = "failure-step*.png"
"""The names of the screenshots :func:`screenshot` takes."""


_HIDE_SECRETS = """
const [secrets] = arguments, undo = [];
const hide = (text) => secrets.reduce((t, [value, name]) => t.split(value).join(`{${name}}`), text);
for (const scope of ngScopes(document)) {
  const doc = scope.ownerDocument || scope;
  const nodes = doc.createTreeWalker(scope, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let node = nodes.currentNode; node; node = nodes.nextNode()) {
    const key = node.nodeType === Node.TEXT_NODE ? "data"
      : ["INPUT", "TEXTAREA"].includes(node.tagName) ? "value" : null;
    if (key && typeof node[key] === "string" && hide(node[key]) !== node[key]) {
      undo.push([node, key, node[key]]);
      node[key] = hide(node[key]);
    }
  }
}
window.__netgentShowSecrets = () => { for (const [n, k, v] of undo.reverse()) n[k] = v; };
return ngFarFrames();
"""
"""Replaces each secret value in the document's text and fields (its shadow roots, open
and closed, and its frames of the same site too) by its ``{name}``;
``window.__netgentShowSecrets()`` undoes it. Returns the paths of the frames of other
sites, which the page's script cannot reach."""

_SHOW_SECRETS = "window.__netgentShowSecrets?.(); delete window.__netgentShowSecrets;"


def screenshot(
    driver: WebDriver, folder: Path | None, step: int, redact: Redactor | None = None
) -> str:
    """A screenshot of the page into ``folder`` (its path), or why there is none. With
    ``redact``, the secrets it knows are replaced by their ``{name}`` in the page (and in
    its frames of other sites, entered one by one) while the picture is taken (a
    screenshot goes into reports), then put back; a page where that fails gets none."""
    if folder is None:
        return ""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / SCREENSHOTS.replace("*", str(step))
        with secrets_hidden(driver, redact, strict=True):
            taken = driver.save_screenshot(str(path))
        if taken:
            return str(path)
    except Exception as exc:  # the report must survive a dead browser
        reason = str(exc).splitlines()[0] if str(exc) else repr(exc)
        return f"(no screenshot: {reason})"
    return ""


@contextlib.contextmanager
def secrets_hidden(
    driver: WebDriver, redact: Redactor | None, *, strict: bool = False
) -> Iterator[bool]:
    """While the block runs, the page (and its frames of other sites) shows each secret
    ``redact`` knows as its ``{name}``; then they are put back. Yields whether the page
    is free of them: False (or with ``strict``, the error) when it could not be done, and
    no picture may be taken."""
    secrets = redact.variants if redact is not None else []
    masked: list[str] = []
    try:
        try:
            if secrets:
                _hide(driver, secrets, masked)
        except Exception:  # a page or frame that cannot be masked: no picture of it
            if strict:
                raise
            yield False
            return
        yield True
    finally:
        _show(driver, masked)


def _hide(driver: WebDriver, secrets: list[tuple[str, str]], masked: list[str]) -> None:
    """Hide ``secrets`` in the page and in each of its frames of other sites, adding each
    document done to ``masked``; a frame that cannot be entered raises (no screenshot)."""
    hide = script("deep.js") + _HIDE_SECRETS
    adopt_declared_roots(driver)  # a secret typed into a closed root the HTML declared
    waiting = list(driver.execute_script(hide, secrets) or [])
    masked.append("")
    chain = Chain(driver)
    try:
        while waiting:
            path = waiting.pop(0)
            if len(masked) > FAR_FRAMES:
                raise RuntimeError(f"more than {FAR_FRAMES} frames of other sites to mask")
            if not chain.enter(path):
                raise RuntimeError(f"the frame {path!r} of another site cannot be masked")
            inner = driver.execute_script(hide, secrets) or []
            waiting += [f"{path} >> {link}" for link in inner]  # its own, nested
            masked.append(path)
            chain.leave()
    finally:
        chain.leave()


def _show(driver: WebDriver, masked: list[str]) -> None:
    """Put the secrets back where :func:`_hide` took them out ("" is the page itself)."""
    chain = Chain(driver)
    for path in masked:
        with contextlib.suppress(Exception):  # a frame gone since holds no secret to restore
            if not path or chain.enter(path):
                driver.execute_script(_SHOW_SECRETS)
        chain.leave()


def crash(exc: BaseException, step: int, state: str) -> str:
    """The report of a browser that crashed or stopped answering at ``step``."""
    text = str(getattr(exc, "msg", None) or exc).strip().splitlines()
    where = f"in state {state!r}" if state else "before any state"
    return (
        f"the browser crashed or stopped answering at step {step} {where} "
        f"({text[0] if text else type(exc).__name__}); this item fails and the next item "
        "starts a fresh browser"
    )


def clear_screenshots(folder: Path) -> None:
    """Remove the failure screenshots an earlier run left in ``folder``: a run that
    passes now leaves none there to be taken for its own."""
    for old in folder.glob(SCREENSHOTS) if folder.is_dir() else ():
        old.unlink(missing_ok=True)
