"""Closed shadow roots a page's HTML declares (``<template shadowrootmode="closed">``, as
server-rendered web components write them).

The HTML parser attaches such a root without calling ``attachShadow``, so ``shadow.js``
never sees it and a page script cannot reach it; DevTools can. :func:`adopt_declared_roots`
finds every closed root of the tab's page (its frames of the same process included) with
``DOM.getDocument`` (piercing) and hands each to its window's ``__netgentRoots``, where
checks, observation and snapshots look for closed roots. It is called where a look at the
page must be whole (observation for synthesis and reports) and when a check's chain meets
a host whose root no script can see; a replay on pages without them never pays for it.
Frames of another site (Chromium runs them in a process of their own) get the same from
the browser's navigation guard, which holds a DevTools session in each: once each of
their documents has loaded (:func:`adopt_in_frame`). Actions there go through WebDriver,
which enters closed roots itself; and where no guard runs (UC mode, a Grid without a
DevTools relay), entering such a frame through WebDriver hands its closed roots over the
same way (:func:`adopt_here`, called by :meth:`Chain.enter`), so the looks that walk
frames of another site (text checks, observation, snapshots, masking) see inside.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .session import browser_gone, cdp

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

ADOPT = """function (...pairs) {
  let adopted = 0;
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const host = pairs[i], root = pairs[i + 1];
    const view = host.ownerDocument && host.ownerDocument.defaultView;
    if (!view) continue;
    if (!view.__netgentRoots) {
      Object.defineProperty(view, "__netgentRoots", {value: new WeakMap(), enumerable: false});
    }
    if (view.__netgentRoots.get(host) !== root) {
      view.__netgentRoots.set(host, root);
      adopted += 1;
    }
  }
  return adopted;
}"""
"""Keeps each ``(host, root)`` pair of its arguments in the host's window (as shadow.js
keeps the closed roots a script attaches); how many were not kept yet."""

HOSTS = 50
"""Most hosts one look at a document asks WebDriver for roots of."""
_HOSTS = f"""const kept = window.__netgentRoots, none = window.__netgentNoRoot;
const rootOf = (el) => el.shadowRoot || (kept && kept.get(el)) || null;
const hosts = [], scopes = [document];
while (scopes.length && hosts.length < {HOSTS}) {{
  for (const el of scopes.pop().querySelectorAll("*")) {{
    const root = rootOf(el);
    if (root) scopes.push(root);
    else if (el.localName.includes("-") && !(none && none.has(el))) hosts.push(el);
  }}
}}
return hosts.slice(0, {HOSTS});"""
"""The custom elements of the current document (shadow roots included, not its frames)
without a root in sight, but those known to have none."""
_KEEP = f"""const rootless = arguments[0];
if (!window.__netgentNoRoot) {{
  Object.defineProperty(window, "__netgentNoRoot", {{value: new WeakSet(), enumerable: false}});
}}
// a defined element has run its constructor: no root now, none to come from the HTML
for (const el of rootless) if (el.matches(":defined")) window.__netgentNoRoot.add(el);
return ({ADOPT})(...Array.from(arguments).slice(1));"""
""":data:`ADOPT` for the pairs after the first argument, which lists hosts without a
root (not asked again in this document once their element is defined)."""

GROUP = "netgent-declared"
"""The DevTools object group of the references made here, released after use."""


def closed_roots(node: dict[str, Any]) -> Iterator[tuple[int, int]]:
    """``(host, root)`` backend node ids of every closed shadow root under ``node`` (a
    node of ``DOM.getDocument``'s tree), in shadow roots and frame documents too."""
    stack = [node]
    while stack:
        current = stack.pop()
        for root in current.get("shadowRoots") or ():
            if root.get("shadowRootType") == "closed":
                yield int(current["backendNodeId"]), int(root["backendNodeId"])
            stack.append(root)
        stack.extend(current.get("children") or ())
        if "contentDocument" in current:
            stack.append(current["contentDocument"])


def adopt_declared_roots(driver: WebDriver) -> int:
    """Hand the page's closed shadow roots that its scripts cannot see to its windows'
    ``__netgentRoots``; how many were new. ``0`` when the browser has no DevTools to ask
    (not Chromium) or the page changed meanwhile (the next look asks again)."""
    from selenium.common.exceptions import WebDriverException

    objects: list[dict[str, str]] = []
    try:
        tree = cdp(driver, "DOM.getDocument", {"depth": -1, "pierce": True})
        for pair in closed_roots(tree["root"]) if tree else ():
            for node in pair:
                params = {"backendNodeId": node, "objectGroup": GROUP}
                objects.append(
                    {"objectId": cdp(driver, "DOM.resolveNode", params)["object"]["objectId"]}
                )
        if not objects:
            return 0
        call = {"functionDeclaration": ADOPT, "objectId": objects[0]["objectId"]}
        answer = cdp(
            driver, "Runtime.callFunctionOn", {**call, "arguments": objects, "returnByValue": True}
        )
        return int(((answer or {}).get("result") or {}).get("value") or 0)
    except WebDriverException as exc:
        if browser_gone(exc):
            raise
        return 0  # a node gone between two calls (the page moved on): looked at again later
    finally:
        if objects:
            try:
                cdp(driver, "Runtime.releaseObjectGroup", {"objectGroup": GROUP})
            except WebDriverException as exc:
                if browser_gone(exc):
                    raise


def adopt_here(driver: WebDriver, rounds: int = 5) -> int:
    """Hand the closed shadow roots of the document WebDriver is in to its window's
    ``__netgentRoots`` through WebDriver itself, which reaches closed roots (no DevTools
    needed: a frame of another site in UC mode or on a Grid without a relay, where no
    guard did it when the frame loaded); how many were new. ``rounds``: roots inside
    roots come into sight once their host's is kept."""
    from selenium.common.exceptions import NoSuchShadowRootException, WebDriverException

    adopted = 0
    try:
        for _ in range(rounds):
            pairs: list[Any] = []
            rootless = []
            for host in driver.execute_script(_HOSTS) or ():
                try:
                    pairs += [host, host.shadow_root]
                except NoSuchShadowRootException:
                    rootless.append(host)
            if not (pairs or rootless):
                break
            new = int(driver.execute_script(_KEEP, rootless, *pairs) or 0)
            adopted += new
            if not new:
                break
    except WebDriverException as exc:
        if browser_gone(exc):
            raise
    return adopted  # (a host gone meanwhile: the page moved on, the next look asks again)


Send = Callable[..., None]
"""The guard's ``_send(method, params, session, then=callback)``: a DevTools command in
one target's session, its answer's result given to ``then`` (``{}`` when it failed)."""


def _quietly(step: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """``step``, ending the hand-over quietly when an answer is not what it needs (the
    frame navigated or closed meanwhile): nothing of it may fail the guard."""

    @functools.wraps(step)
    def run(result: dict[str, Any]) -> None:
        try:
            step(result)
        except Exception:  # a frame gone between two answers: its next load asks again
            return

    return run


def adopt_in_frame(send: Send, session: str) -> None:
    """:func:`adopt_declared_roots` in the frame of another site attached as ``session``
    (its document has loaded), through the guard's connection, answers arriving on its
    thread; ``DOM.disable`` after the one look, so the frame's changes send no events."""

    def tree(result: dict[str, Any]) -> None:
        send("DOM.disable", {}, session)
        nodes = [node for pair in closed_roots(result["root"]) for node in pair]
        objects: list[dict[str, str]] = []

        def resolved(answer: dict[str, Any]) -> None:
            objects.append({"objectId": str(answer["object"]["objectId"])})
            if len(objects) == len(nodes):  # answers come in order: host, root, host...
                call = {"functionDeclaration": ADOPT, "objectId": objects[0]["objectId"]}
                release = {"objectGroup": GROUP}
                send(
                    "Runtime.callFunctionOn",
                    {**call, "arguments": objects, "returnByValue": True},
                    session,
                    then=_quietly(lambda _: send("Runtime.releaseObjectGroup", release, session)),
                )

        for node in nodes:
            params = {"backendNodeId": node, "objectGroup": GROUP}
            send("DOM.resolveNode", params, session, then=_quietly(resolved))

    send("DOM.getDocument", {"depth": -1, "pierce": True}, session, then=_quietly(tree))
