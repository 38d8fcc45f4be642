"""Every navigation of the browser confined to the run's allowed hosts, before it leaves.

Checking a URL before the engine opens it is not enough: a page's own script, a link,
a form or a redirect may take the browser elsewhere, and by the time the engine sees the
new URL the request has gone. :class:`NavigationGuard` holds a DevTools connection of
its own to the browser (ChromeDriver does not pass events on): every tab's top-level
document requests pause there (``Fetch.requestPaused``) until it lets them go on, or
fails them with ``BlockedByClient`` when their host is not allowed. Subresources and
frames are not paused: ``allowed_hosts`` is about where the browser goes.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

from .declared import adopt_in_frame
from .watchdog import devtools_endpoint

Allow = Callable[[str], bool]
"""Whether the browser may open a URL."""

_DOCUMENTS = [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]
_HOLD_NEW = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
"""New targets attach to the guard's connection, held at their start until it lets them run."""


class NavigationGuard:
    """Pauses each tab's document requests and lets through only what :attr:`allow`
    accepts; what it stopped is in :attr:`blocked`.

    ``allow`` is ``None`` between runs: everything goes (the reset's blank page).
    """

    def __init__(
        self, endpoint: str, frame_scripts: tuple[str, ...] = (), *, hold: bool = True
    ) -> None:
        import websocket  # selenium's own dependency

        self.hold = hold
        """Whether navigations are held and judged; without, the connection only runs
        scripts in frames of other sites (:class:`FramesOnDemand`)."""

        self.frame_scripts = frame_scripts
        """Scripts run in every tab and every frame of another site before their own
        scripts, new tabs' first documents included (Chromium runs such frames as targets
        of their own, which a tab's scripts do not reach): closed shadow roots are kept
        this way."""
        self.allow: Allow | None = None
        self.blocked: list[str] = []
        self.fault = ""
        """Why this guard failed during the run, if it did: it fails closed (the request
        it could not judge is stopped, a tab it could not watch stays paused), and the
        run fails with this message."""
        self._ws = websocket.create_connection(endpoint, timeout=10, suppress_origin=True)
        self._ws.settimeout(None)
        self._send_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._tabs: dict[str, str] = {}
        """Each watched tab's session and its target (its main frame's) id."""
        self._pending: dict[int, Callable[[dict[str, Any]], None]] = {}
        self._frames: set[str] = set()
        """The sessions of the frames of other sites attached now."""
        self._run_scripts: dict[str, dict[str, str]] = {}
        """Scripts a run added for frames of other sites (:meth:`add_frame_script`), and
        each frame session's identifier of it."""
        self._thread = threading.Thread(target=self._read, name="netgent-guard", daemon=True)
        self._thread.start()
        # new tabs and windows pause until their requests are watched; existing tabs join
        self._send("Target.setAutoAttach", _HOLD_NEW)
        self._send("Target.getTargets", {}, then=self._attach_pages)

    @property
    def alive(self) -> bool:
        """Whether the connection to the browser still stands."""
        return self._thread.is_alive()

    def start(self, allow: Allow) -> None:
        """A run starts: from now on only what ``allow`` accepts may load."""
        self.blocked = []
        self.fault = ""
        self.allow = allow

    def stop(self) -> None:
        """The run is over: everything may load again (the reset's blank page)."""
        self.allow = None

    def close(self) -> None:
        """Drop the connection: the browser lets any request still paused go on."""
        with contextlib.suppress(Exception):  # closing a connection already gone
            self._ws.close()
        self._thread.join(timeout=5)

    def add_frame_script(self, source: str) -> None:
        """Run ``source`` in every frame of another site, before its own scripts, until
        :meth:`drop_frame_script`: in those attached now (at once, and in their next
        documents) and in those to come (a tab's own frames get it from the tab)."""
        if source in self._run_scripts:
            return
        self._run_scripts[source] = {}
        for session in list(self._frames):
            self._add_script(session, source)

    def drop_frame_script(self, source: str) -> None:
        """No more of ``source`` in the frames' next documents (the run is over)."""
        for session, identifier in self._run_scripts.pop(source, {}).items():
            if session in self._frames:
                params = {"identifier": identifier}
                self._send("Page.removeScriptToEvaluateOnNewDocument", params, session)

    def _add_script(self, session: str, source: str) -> None:
        def keep(result: dict[str, Any]) -> None:
            if source in self._run_scripts and result.get("identifier"):
                self._run_scripts[source][session] = str(result["identifier"])

        params = {"source": source, "runImmediately": True}
        self._send("Page.addScriptToEvaluateOnNewDocument", params, session, then=keep)

    # ------------------------------------------------------------------ protocol

    def _send(
        self,
        method: str,
        params: dict[str, Any],
        session: str = "",
        then: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        message: dict[str, Any] = {"id": next(self._ids), "method": method, "params": params}
        if session:
            message["sessionId"] = session
        if then is not None:
            self._pending[message["id"]] = then
        with self._send_lock:
            self._ws.send(json.dumps(message))

    def _attach_pages(self, result: dict[str, Any]) -> None:
        for target in result.get("targetInfos", ()):
            if target.get("type") == "page":
                tab = str(target["targetId"])
                self._send(
                    "Target.attachToTarget",
                    {"targetId": tab, "flatten": True},
                    then=functools.partial(self._attached, tab),
                )

    def _attached(self, tab: str, answer: dict[str, Any]) -> None:
        self._watch(str(answer["sessionId"]), tab)

    def _watch(self, session: str, tab: str) -> None:
        """Watch the tab ``tab`` attached as ``session``: pause its document requests
        (when holding) and have its frames of other sites join."""
        if session not in self._tabs:
            self._tabs[session] = tab
            if self.hold:
                self._send("Fetch.enable", {"patterns": _DOCUMENTS}, session)
            if self.frame_scripts or not self.hold:  # held until prepared
                self._prepare(session)
                self._send("Target.setAutoAttach", _HOLD_NEW, session)

    def _prepare(self, session: str) -> None:
        """Run :attr:`frame_scripts` in the target's documents, before their own scripts."""
        self._send("Page.enable", {}, session)  # without it a new document skips them
        for source in self.frame_scripts:
            params = {"source": source, "runImmediately": True}
            self._send("Page.addScriptToEvaluateOnNewDocument", params, session)

    def _read(self) -> None:
        while True:
            try:
                message = json.loads(self._ws.recv())
            except Exception:  # closed (or garbled): the guard ends, runs fail closed
                return  # closed: the browser or this guard is gone
            try:
                self._handle(message)
            except Exception as exc:  # any fault of the handler: it fails closed
                self._failed(message, exc)

    def _failed(self, message: dict[str, Any], exc: Exception) -> None:
        """The handler failed on ``message``: a paused request is stopped (let go only
        between runs, when nothing is confined) and the run is told why."""
        params = message.get("params") or {}
        paused = message.get("method") == "Fetch.requestPaused" and "requestId" in params
        what = str(params.get("request", {}).get("url", "")) if paused else message.get("method")
        if self.allow is not None:
            self.fault = (
                f"the allowed-hosts guard failed on {what or 'a DevTools message'} "
                f"({type(exc).__name__}: {exc}), so it stopped the navigation: one it cannot "
                "check could leave the allowed hosts. This is a fault in pytest-netgent; "
                "please report it with this message"
            )
        if paused:
            import websocket

            go_on = self.allow is None
            with contextlib.suppress(OSError, websocket.WebSocketException):  # closed
                self._send(
                    "Fetch.continueRequest" if go_on else "Fetch.failRequest",
                    {"requestId": params["requestId"]}
                    if go_on
                    else {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
                    message.get("sessionId", ""),
                )

    def _handle(self, message: dict[str, Any]) -> None:
        then = self._pending.pop(message.get("id", 0), None)
        if then is not None:
            then(message.get("result") or {})
            return
        method, params = message.get("method"), message.get("params") or {}
        if method == "Target.attachedToTarget":
            session, target = str(params["sessionId"]), params.get("targetInfo") or {}
            if target.get("type") == "page":
                self._watch(session, str(target.get("targetId", "")))
            elif target.get("type") == "iframe":
                self._frames.add(session)
                if self.frame_scripts or not self.hold:
                    self._prepare(session)
                for source in list(self._run_scripts):
                    self._add_script(session, source)
            # the tab (or a worker) was held at its start for this guard: let it run
            self._send("Runtime.runIfWaitingForDebugger", {}, session)
        elif method == "Target.detachedFromTarget":
            self._tabs.pop(params.get("sessionId", ""), None)
            self._frames.discard(params.get("sessionId", ""))
        elif method == "Fetch.requestPaused":
            self._decide(params, message.get("sessionId", ""))
        elif method == "Page.loadEventFired" and message.get("sessionId") in self._frames:
            # a frame of another site loaded: the closed roots its HTML declared, kept
            adopt_in_frame(self._send, str(message["sessionId"]))

    def _decide(self, params: dict[str, Any], session: str) -> None:
        url = str(params.get("request", {}).get("url", ""))
        allow = self.allow
        # only the tab's own navigations: a tab's main frame has the tab's target id
        top = params.get("frameId") == self._tabs.get(session)
        if allow is None or not top or allow(url):
            self._send("Fetch.continueRequest", {"requestId": params["requestId"]}, session)
            return
        self.blocked.append(url)
        self._send(
            "Fetch.failRequest",
            {"requestId": params["requestId"], "errorReason": "BlockedByClient"},
            session,
        )


class FramesOnDemand:
    """Runs a run's scripts in the frames of other sites of a browser without a guard
    (UC mode, whose pages are not held): a DevTools connection of its own that holds no
    navigation, opened by the first :meth:`add_frame_script` (a run that adds none never
    opens one) and closed when the last script is dropped. A browser whose DevTools
    cannot be reached (a Grid without ``se:cdp``) gets nothing, as before."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver
        self._guard: NavigationGuard | None = None

    def add_frame_script(self, source: str) -> None:
        """:meth:`NavigationGuard.add_frame_script`, the connection opened if needed."""
        if self._guard is None:
            endpoint = devtools_endpoint(self.driver)
            if not endpoint:
                return
            try:
                self._guard = NavigationGuard(endpoint, hold=False)
            except Exception:  # no DevTools to reach: frames of other sites go untracked
                return
        self._guard.add_frame_script(source)

    def drop_frame_script(self, source: str) -> None:
        """:meth:`NavigationGuard.drop_frame_script`; the last one closes the connection."""
        guard = self._guard
        if guard is not None:
            guard.drop_frame_script(source)
            if not guard._run_scripts:
                self._guard = None
                guard.close()
