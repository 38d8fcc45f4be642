"""What a browser shows, as it changes, for ``--netgent-live``: frames through CDP.

:class:`Screencast` holds a DevTools connection of its own to a local Chromium (as the
navigation guard does: ChromeDriver passes no events on), follows the browser's tabs and
takes a JPEG of the tab its run looks at (:meth:`Screencast.focus`; before it is told,
the newest) with ``Page.captureScreenshot``, optimised for speed (the live page's at
:data:`LIVE_SCALE` of the page's size): up to
:data:`FPS` a second while its run acts (each timeline event asks for one), one every
:data:`IDLE_S` seconds otherwise; a picture identical to the last is not passed on. Headless
Chromium paints without any display: no X server, no VNC.

The connection asks only for tabs (``Target``), their layout and their pictures
(``Page.getLayoutMetrics``, ``Page.captureScreenshot``): it enables no domain and runs
nothing in a page, so a page's scripts cannot tell it is there (what sites look for is a
script of ours, or the console and runtime events an enabled ``Runtime`` domain brings).
That is why browsers in UC mode, kept free of the guard for that reason, are pictured
too.

Why not ``Page.startScreencast``: in headless Chromium its frames came irregularly (one
frame in five seconds for a page changing ten times a second, with ``everyNthFrame``
30), and with every frame encoded it slowed the example suites' replay by 8-9 %
(``bench/live.py``); three or four pictures a second cost 4-6 %, one a second 1-2 %: pictures are
taken when something happens.

:class:`LiveStream` is one browser's stream on disk, in the folder the live page's server
reads (:mod:`pytest_netgent.studio.live`): ``NAME.jpg``, the newest frame, and
``NAME.json``, what its run is doing (workflow, state, last event, when it started). It
takes pictures only while a live page is open, and the next once the page has fetched
the last (:meth:`LiveStream.wanted`): a picture nobody sees is not taken. Each
is replaced whole (a reader never sees half a file). A run that types secrets shows no
frames at all: a picture cannot hide what the page shows of them, so its stream says
so and keeps only the text, which is redacted like every timeline event.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..system import atomic

FPS = 3.0
"""Most pictures a second of one browser, while its run acts."""
IDLE_S = 1.0
"""Seconds between two pictures while its run does nothing (a video plays, a page loads)."""
QUALITY = 50
"""JPEG quality of a picture."""
STUCK_S = 1.0
"""A picture not taken by then is given up (Chromium may never answer for a page that
was left while it was being taken) and the next one asked for."""
WATCHED = ".watched"
"""In the live folder: touched by the live page's server each time a page asks what to
show (``/live.json``); a live stream takes pictures only while it is fresh."""
WATCHED_S = 3.0
"""Seconds after the page last asked during which it counts as open (a page in a
background tab asks once a second)."""
SEEN = ".seen"
"""Beside a stream's frame (``NAME.seen``): touched by the server each time it hands the
frame out; a stream takes its next picture once its last one was seen."""
LIVE_SCALE = 0.5
"""The live page's pictures' size beside the page's (its cards are a third of a screen
wide): a quarter of the pixels to paint, encode and pass on."""
_SHOT = {"format": "jpeg", "quality": QUALITY, "optimizeForSpeed": True}


def _clip(view: dict[str, Any], scale: float) -> dict[str, Any]:
    """``Page.captureScreenshot``'s parameters for the visible part of the page at
    ``scale`` (``view``: ``Page.getLayoutMetrics``' ``cssVisualViewport``; a clip is in
    the page's coordinates, so it starts where the page is scrolled to)."""
    try:
        x, y = float(view["pageX"]), float(view["pageY"])
        width, height = float(view["clientWidth"]), float(view["clientHeight"])
    except (KeyError, TypeError, ValueError):  # no answer (a tab closing): the whole size
        return _SHOT
    clip = {"x": x, "y": y, "width": width, "height": height, "scale": scale}
    return {**_SHOT, "clip": clip}


class Screencast:
    """Pictures of the tab the run looks at (else the newest) of the browser at
    ``endpoint``, each new one given to ``sink`` (from a thread of its own) until
    :meth:`close`."""

    def __init__(
        self,
        endpoint: str,
        sink: Any,
        fps: float = FPS,
        idle: float = IDLE_S,
        scale: float = 1.0,
        wanted: Callable[[], bool] = lambda: True,
    ) -> None:
        import websocket  # selenium's own dependency

        self.sink = sink
        self.fps, self.idle = fps, idle
        self.wanted = wanted
        """Whether a picture is wanted now (else none is taken; a poke waits for it)."""
        self.scale = scale
        """The pictures' size beside the page's (1: as the page is painted)."""
        self._ws = websocket.create_connection(endpoint, timeout=10, suppress_origin=True)
        self._ws.settimeout(None)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._attaching: dict[int, str] = {}
        """Attach calls in flight: their target ids."""
        self._tabs: dict[str, str] = {}
        """Each attached tab's session, by target id, the newest last."""
        self._focus = ""
        """The target id (WebDriver's window handle) of the tab the run looks at."""
        self._shot = 0
        """The picture call in flight (0: none)."""
        self._sizing = ""
        """The tab whose viewport is being asked, before its smaller picture."""
        self._last = ""
        self._poked = False
        self._answered = threading.Event()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._read, name="netgent-screencast", daemon=True)
        self._thread.start()
        self._send("Target.setDiscoverTargets", {"discover": True})  # tabs now and later
        threading.Thread(target=self._take, name="netgent-screencast-shots", daemon=True).start()

    @property
    def alive(self) -> bool:
        """Whether the connection to the browser still stands."""
        return self._thread.is_alive()

    def focus(self, tab: str) -> None:
        """The run looks at tab ``tab`` (its target id, WebDriver's window handle) now:
        the pictures show it (a picture soon)."""
        if tab != self._focus:
            self._focus = tab
            self._poked = True

    def picture_now(self, timeout: float = STUCK_S) -> None:
        """Take a picture now and wait for it (at most ``timeout`` seconds): a run's
        last page, before anything leaves it."""
        session = self._session()
        if self._closed.is_set() or not session:
            return
        self._answered.clear()
        with contextlib.suppress(Exception):  # the connection just closed
            self._ask(session)
            self._answered.wait(timeout)

    def _ask(self, session: str) -> None:
        """Ask for a picture of the tab of ``session``: at once at :attr:`scale` 1, else
        once its viewport is known (the picture is clipped to it)."""
        self._shot = next(self._ids)  # set before any answer
        if self.scale == 1:
            self._send("Page.captureScreenshot", _SHOT, session, ident=self._shot)
        else:
            self._sizing = session
            self._send("Page.getLayoutMetrics", {}, session, ident=self._shot)

    def _session(self) -> str:
        """The session of the tab to picture: the run's, else the newest ("" for none)."""
        tabs = dict(self._tabs)
        if self._focus in tabs:
            return tabs[self._focus]
        return list(tabs.values())[-1] if tabs else ""

    def poke(self) -> None:
        """Something happened (an action, a new state): a picture soon, not in a second."""
        self._poked = True

    def close(self) -> None:
        """Drop the connection (and stop taking pictures)."""
        self._closed.set()
        with contextlib.suppress(Exception):  # closing a connection already gone
            self._ws.close()
        self._thread.join(timeout=5)

    def _send(self, method: str, params: dict[str, Any], session: str = "", ident: int = 0) -> int:
        ident = ident or next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        with self._lock:
            self._ws.send(json.dumps(message))
        return ident

    def _read(self) -> None:
        while True:
            try:
                message = json.loads(self._ws.recv())
                self._handle(message)
            except Exception:  # closed, or a browser gone: the stream ends, the run goes on
                self._closed.set()
                return

    def _handle(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        result = message.get("result") or {}
        if message.get("id") == self._shot and self._sizing:
            session, self._sizing = self._sizing, ""
            view = result.get("cssVisualViewport") or {}
            self._shot = next(self._ids)
            self._send("Page.captureScreenshot", _clip(view, self.scale), session, ident=self._shot)
        elif message.get("id") == self._shot:
            self._shot = 0
            data = str(result.get("data", ""))
            if data and data != self._last:  # (a page that did not change: no new frame)
                self._last = data
                self.sink(base64.b64decode(data))
            self._answered.set()
        elif (tab := self._attaching.pop(message.get("id", 0), None)) is not None:
            if result.get("sessionId"):
                self._tabs[tab] = str(result["sessionId"])
        elif method == "Target.targetCreated":
            info = params.get("targetInfo") or {}
            if info.get("type") == "page" and not str(info.get("url")).startswith("devtools"):
                ident = self._send(
                    "Target.attachToTarget", {"targetId": info["targetId"], "flatten": True}
                )
                self._attaching[ident] = str(info["targetId"])
        elif method == "Target.targetDestroyed":
            self._tabs.pop(str(params.get("targetId")), None)

    def _take(self) -> None:
        """Ask for a picture of the run's tab :data:`FPS` times a second (one at a time)."""
        asked = 0.0
        while not self._closed.wait(1 / self.fps):
            if self._shot and time.monotonic() - asked < STUCK_S:
                continue  # the last is still being taken (a busy page): no queue of them
            if not self._poked and time.monotonic() - asked < self.idle:
                continue  # nothing happened: a picture a second is enough
            if not self.wanted():
                continue  # nobody would see it (yet)
            self._poked = False
            if session := self._session():
                asked = time.monotonic()
                with contextlib.suppress(Exception):  # the connection just closed
                    self._ask(session)


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole (a reader sees the old file or the new one, never half)."""
    with contextlib.suppress(OSError), atomic.replacing(path, "wb") as fh:
        fh.write(data)  # (a live picture is never worth an item: a failure is let go)


class Pictures:
    """A browser's pictures, followed through a :class:`Screencast` of its own, each
    picture given to :meth:`_picture`; runs say when they begin, act and end."""

    fps, idle, scale = FPS, IDLE_S, 1.0
    last_always = True
    """Whether a run's end waits for a picture of its last page even when the run has
    pictures already (a video's last frame); else only a run with none waits."""

    def __init__(self) -> None:
        self.screencast: Screencast | None = None
        self.why_no_frames = ""
        """Why no picture is taken ("" while they are)."""
        self._driver: object = None
        self._hidden = False
        self._pictured = False
        """Whether a picture of the run going on was passed on."""
        self._lock = threading.Lock()

    def watching(self, driver: object) -> bool:
        """Whether the browser of ``driver`` is followed already (or cannot be)."""
        if self._driver is not driver:
            return False
        return self.screencast is None or self.screencast.alive

    def watch(self, driver: object, endpoint: str) -> None:
        """Follow the browser of ``driver`` (DevTools at ``endpoint``, ``""`` if it has
        none of ours) from now on."""
        self.stop()
        self._driver = driver
        if not endpoint:
            self.why_no_frames = (
                "this browser's DevTools cannot be reached (a Grid without se:cdp, or a "
                "browser that gave no debuggerAddress)"
            )
            return
        try:
            self.screencast = Screencast(
                endpoint, self._frame, self.fps, self.idle, self.scale, self.wanted
            )
            self.why_no_frames = ""
        except Exception as exc:  # no pictures, the rest goes on: the run is worth more
            self.why_no_frames = f"its DevTools endpoint refused ({exc})"

    def stop(self) -> None:
        """Stop following the browser (it closed, or the item ended)."""
        screencast, self.screencast = self.screencast, None
        if screencast is not None:
            screencast.close()
        self._driver = None

    def wanted(self) -> bool:
        """Whether a picture is wanted now: not during a run that types secrets (its
        pictures would be dropped)."""
        return not self._hidden

    def begin(self, workflow: str, hidden: bool) -> None:
        """A run of ``workflow`` starts; ``hidden``: it types secrets (no pictures)."""
        with self._lock:
            self._hidden, self._pictured = hidden, False

    def doing(self, state: str, said: str) -> None:
        """The run's last event (``said`` as the log says it, in ``state``): a picture
        soon."""
        if self.screencast is not None:
            self.screencast.poke()

    def looking_at(self, tab: str) -> None:
        """The run looks at tab ``tab`` (WebDriver's window handle) now."""
        if self.screencast is not None:
            self.screencast.focus(tab)

    def end(self, outcome: str) -> None:
        """The run ended (``passed`` or ``failed``): a picture of its last page now (the
        run waits for it, half a second at most), before anything leaves it: a run
        shorter than the pictures' pace still has one (see :attr:`last_always`)."""
        if self.screencast is None or self._hidden:
            return
        if self.last_always or (not self._pictured and self.wanted()):
            self.screencast.picture_now(timeout=0.5)

    def _frame(self, jpeg: bytes) -> None:
        with self._lock:  # (not while a run with secrets begins)
            if not self._hidden and jpeg:
                self._pictured = True
                self._picture(jpeg)

    def _picture(self, jpeg: bytes) -> None:
        raise NotImplementedError


class FrameRecorder(Pictures):
    """The pictures of an item's runs, kept in memory with their times for
    ``--netgent-video`` (see :mod:`pytest_netgent.studio.recording`)."""

    fps, idle = 4.0, 0.5
    MAX_FRAMES = 1500
    """Most pictures one item keeps (then the video ends there)."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[tuple[float, bytes]] = []
        """Each picture: seconds since the item's first run began, JPEG."""
        self._t0: float | None = None

    def begin(self, workflow: str, hidden: bool) -> None:
        """A run starts: its pictures follow the last run's."""
        super().begin(workflow, hidden)
        if self._t0 is None:
            self._t0 = time.monotonic()

    def _picture(self, jpeg: bytes) -> None:
        if self._t0 is not None and len(self.frames) < self.MAX_FRAMES:
            self.frames.append((time.monotonic() - self._t0, jpeg))


class LiveStream(Pictures):
    """One browser's pictures and doings, written into ``folder`` as ``name`` (see the
    module's documentation); ``item`` names the test item running now."""

    scale = LIVE_SCALE
    last_always = False  # the page is live: waiting at every item's end cost replay 2 %

    def __init__(self, folder: Path, name: str, item: Callable[[], str] = str) -> None:
        super().__init__()
        self.folder = folder
        self.name = name
        self.item = item
        self._now: dict[str, Any] = {"name": name}

    def begin(self, workflow: str, hidden: bool) -> None:
        """A run starts: its status, and no picture at all if it types secrets."""
        with self._lock:
            self._hidden, self._pictured = hidden, False
            self._now = {"name": self.name, "item": self.item(), "workflow": workflow}
            self._now["started"] = time.time()
            if hidden:
                self._now["no_frames"] = "this run types secrets: its pages are not shown"
            elif self.why_no_frames:
                self._now["no_frames"] = self.why_no_frames
            self._write()
            if hidden:
                with contextlib.suppress(OSError):  # no picture stays beside its status
                    (self.folder / f"{self.name}.jpg").unlink()

    def doing(self, state: str, said: str) -> None:
        """The run's last event: the status says it, and a picture soon."""
        with self._lock:
            if state:
                self._now["state"] = state
            self._now["doing"] = said
            self._write()
        super().doing(state, said)

    def end(self, outcome: str) -> None:
        """The run ended (``passed`` or ``failed``): a picture of its last page, and its
        status says so."""
        super().end(outcome)
        with self._lock:
            self._now["ended"] = time.time()
            self._now["outcome"] = outcome
            self._write()

    def wanted(self) -> bool:
        """A picture is wanted while the live page is open (its server was asked what to
        show within :data:`WATCHED_S` seconds), once the last frame was handed out (a
        picture the page never fetches is not taken; a frame not fetched within two idle
        periods no longer holds the next one back)."""
        if not super().wanted():
            return False
        now = time.time()
        try:
            if now - (self.folder / WATCHED).stat().st_mtime > WATCHED_S:
                return False
        except OSError:  # no page has asked yet
            return False
        try:
            shown = (self.folder / f"{self.name}.jpg").stat().st_mtime
        except OSError:  # no frame yet
            return True
        try:
            seen = (self.folder / f"{self.name}{SEEN}").stat().st_mtime
        except OSError:
            seen = 0.0
        return seen >= shown or now - shown > 2 * self.idle

    def _picture(self, jpeg: bytes) -> None:
        _replace(self.folder / f"{self.name}.jpg", jpeg)

    def _write(self) -> None:
        _replace(self.folder / f"{self.name}.json", json.dumps(self._now).encode("utf-8"))
