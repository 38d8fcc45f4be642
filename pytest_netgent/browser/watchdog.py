"""A WebDriver call the page never answers, stopped from outside the driver.

A script that never returns (a cached script check ``while (true) {}``, or the page's
own script spinning) blocks the tab's main thread: ChromeDriver then waits for ever, its
script and page-load limits included, and every later command queues behind it. Only the
browser process can still act. :class:`Watchdog` is armed around each call the engine
makes; when a call outlives its limit, the watchdog opens a blank tab and closes the
others through the browser's own DevTools endpoint (not through ChromeDriver, which is
the one waiting), so the pending call returns and the engine reports what hung.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


def devtools_endpoint(driver: WebDriver) -> str:
    """The browser-wide DevTools WebSocket of ``driver``'s Chromium: through a Grid's
    ``se:cdp`` or from a local ChromeDriver's ``debuggerAddress``; ``""`` if neither.

    A Grid's session also reports its node's ``debuggerAddress``, but that names the
    node's own loopback: from here it could reach another browser (this machine's), so a
    remote session without ``se:cdp`` has no endpoint."""
    caps: dict[str, Any] = dict(getattr(driver, "capabilities", None) or {})
    if isinstance(caps.get("se:cdp"), str):
        return str(caps["se:cdp"])
    if any(key.startswith("se:") for key in caps):  # a Grid's session (se:cdpEnabled...)
        return ""
    address = (caps.get("goog:chromeOptions") or {}).get("debuggerAddress")
    if not address:
        return ""
    try:
        with urllib.request.urlopen(f"http://{address}/json/version", timeout=5) as answer:
            return str(json.load(answer).get("webSocketDebuggerUrl") or "")
    except (OSError, ValueError):
        return ""


def close_hung_tabs(endpoint: str) -> bool:
    """Open a blank tab and close every other page of the browser at ``endpoint``;
    whether it could. The browser keeps one window, so the session lives on."""
    import websocket  # selenium's own dependency, imported only when a page hangs

    try:
        ws = websocket.create_connection(endpoint, timeout=10, suppress_origin=True)
    except Exception:  # no DevTools to reach: the caller says why it cannot help
        return False
    calls = iter(range(1, 1_000_000))

    def call(method: str, **params: Any) -> dict[str, Any]:
        ident = next(calls)
        ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(ws.recv())
            if message.get("id") == ident:
                return dict(message.get("result") or {})

    try:
        pages = [
            t["targetId"]
            for t in call("Target.getTargets").get("targetInfos", ())
            if t.get("type") == "page"
        ]
        call("Target.createTarget", url="data:,")
        for page in pages:
            call("Target.closeTarget", targetId=page)
        return True
    except Exception:  # a browser that drops the connection cannot be rescued this way
        return False
    finally:
        with contextlib.suppress(Exception):  # closing a connection already gone
            ws.close()


class Watchdog:
    """Stops the engine's WebDriver call that outlives the limit it was armed with.

    One thread per run, asleep unless a call is in flight. :attr:`fired` says what was
    being done when it had to act (``""`` if it never did).
    """

    def __init__(self, driver: WebDriver) -> None:
        self.driver = driver
        self.fired = ""
        self._lock = threading.Condition()
        self._until: float | None = None
        self._doing = ""
        self._closed = False
        self._endpoint: str | None = None
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def guard(self, seconds: float, doing: str) -> Iterator[None]:
        """Run the body with the watchdog armed for ``seconds`` (``doing`` names the
        call in the report)."""
        if self._endpoint is None:
            self._endpoint = devtools_endpoint(self.driver)
        if not self._endpoint:  # a browser without DevTools: nothing could stop it
            yield
            return
        with self._lock:
            self._until = time.monotonic() + max(seconds, 0.5)
            self._doing = doing
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="netgent-watchdog", daemon=True
                )
                self._thread.start()
            self._lock.notify()
        try:
            yield
        finally:
            with self._lock:
                self._until = None
                self._lock.notify()

    def close(self) -> None:
        """End the thread (the run is over)."""
        with self._lock:
            self._closed = True
            self._lock.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _watch(self) -> None:
        with self._lock:
            while not self._closed:
                if self._until is None:
                    self._lock.wait()
                    continue
                left = self._until - time.monotonic()
                if left > 0:
                    self._lock.wait(left)
                    continue
                self.fired, self._until = self._doing, None
                endpoint = self._endpoint or ""
                self._lock.release()
                try:
                    close_hung_tabs(endpoint)
                finally:
                    self._lock.acquire()
