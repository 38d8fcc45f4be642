"""What a browser shows, as it changes, for ``--netgent-live``: CDP screencast frames.

:class:`Screencast` holds a DevTools connection of its own to a local Chromium (as the
navigation guard does: ChromeDriver passes no events on), follows the browser's tabs and
asks each for a screencast (``Page.startScreencast``). Chromium then sends a JPEG when a
tab's picture changes, and no more than two before they are acknowledged; acknowledging
at most :data:`FPS` times a second bounds what the browser spends on it, and a page that
does not change costs nothing. Headless Chromium paints without any display: no X
server, no VNC.

:class:`LiveStream` is one browser's stream on disk, in the folder the live page's server
reads (:mod:`pytest_netgent.studio.live`): ``NAME.jpg``, the newest frame, and
``NAME.json``, what its run is doing (workflow, state, last event, when it started). Each
is replaced whole (a reader never sees half a file). A run that types secrets shows no
frames at all: a screencast cannot hide what the page shows of them, so its stream says
so and keeps only the text, which is redacted like every timeline event.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

FPS = 4.0
"""Most frames a second one browser sends."""
SIZE = (800, 600)
"""Largest frame, in pixels (a larger window is scaled down by the browser)."""
QUALITY = 50
"""JPEG quality of a frame."""


class Screencast:
    """The frames of every tab of the browser at ``endpoint``, each given to ``sink``
    (from a thread of its own) until :meth:`close`."""

    def __init__(self, endpoint: str, sink: Any) -> None:
        import websocket  # selenium's own dependency

        self.sink = sink
        self._ws = websocket.create_connection(endpoint, timeout=10, suppress_origin=True)
        self._ws.settimeout(None)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[int, str] = {}
        """Attach calls in flight: their target ids."""
        self._last_ack = 0.0
        self._thread = threading.Thread(target=self._read, name="netgent-screencast", daemon=True)
        self._thread.start()
        self._send("Target.setDiscoverTargets", {"discover": True})  # tabs now and later

    @property
    def alive(self) -> bool:
        """Whether the connection to the browser still stands."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Drop the connection: the browser stops every screencast of it."""
        with contextlib.suppress(Exception):  # closing a connection already gone
            self._ws.close()
        self._thread.join(timeout=5)

    def _send(self, method: str, params: dict[str, Any], session: str = "") -> int:
        ident = next(self._ids)
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
                return

    def _handle(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params") or {}
        if "id" in message:
            if message["id"] in self._pending and "result" in message:
                del self._pending[message["id"]]
                session = str(message["result"].get("sessionId", ""))
                frame = {"format": "jpeg", "quality": QUALITY, "everyNthFrame": 1}
                frame |= {"maxWidth": SIZE[0], "maxHeight": SIZE[1]}
                self._send("Page.startScreencast", frame, session)
        elif method == "Target.targetCreated":
            target = params.get("targetInfo") or {}
            if target.get("type") == "page" and not str(target.get("url")).startswith("devtools"):
                ident = self._send(
                    "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
                )
                self._pending[ident] = str(target["targetId"])
        elif method == "Page.screencastFrame":
            wait = self._last_ack + 1 / FPS - time.monotonic()
            if wait > 0:  # the browser sends the next frames only once this one is acked
                time.sleep(wait)
            self.sink(base64.b64decode(params.get("data", "")))
            self._last_ack = time.monotonic()
            ack = {"sessionId": params.get("sessionId")}
            self._send("Page.screencastFrameAck", ack, str(message.get("sessionId", "")))


def _replace(path: Path, data: bytes) -> None:
    """Write ``path`` whole (a reader sees the old file or the new one, never half)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    with contextlib.suppress(OSError):  # a live picture is never worth an item
        tmp.write_bytes(data)
        os.replace(tmp, path)


class LiveStream:
    """One browser's frames and doings, written into ``folder`` as ``name`` (see the
    module's documentation)."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.screencast: Screencast | None = None
        self.why_no_frames = ""
        """Why this stream shows no frames ("" while it does)."""
        self._driver: object = None
        self._hidden = False
        self._lock = threading.Lock()
        self._now: dict[str, Any] = {"name": name}
        self.frames = 0
        """Frames written so far."""

    def watching(self, driver: object) -> bool:
        """Whether the browser of ``driver`` is streamed already (or cannot be)."""
        if self._driver is not driver:
            return False
        return self.screencast is None or self.screencast.alive

    def watch(self, driver: object, endpoint: str) -> None:
        """Stream the browser of ``driver`` (DevTools at ``endpoint``, ``""`` if it has
        none of ours) from now on."""
        self.stop()
        self._driver = driver
        if not endpoint:
            self.why_no_frames = "this browser has no DevTools endpoint of ours (UC or Grid)"
            return
        try:
            self.screencast = Screencast(endpoint, self._frame)
            self.why_no_frames = ""
        except Exception as exc:  # no frames, the status still shows: the run goes on
            self.why_no_frames = f"its DevTools endpoint refused a screencast ({exc})"

    def begin(self, workflow: str, hidden: bool) -> None:
        """A run of ``workflow`` starts; ``hidden``: it types secrets (no frames)."""
        with self._lock:
            self._hidden = hidden
            self._now = {"name": self.name, "workflow": workflow, "started": time.time()}
            if hidden:
                self._now["no_frames"] = "this run types secrets: its pages are not shown"
            elif self.why_no_frames:
                self._now["no_frames"] = self.why_no_frames
            self._write()
            if hidden:
                with contextlib.suppress(OSError):  # no picture stays beside its status
                    (self.folder / f"{self.name}.jpg").unlink()

    def doing(self, state: str, said: str) -> None:
        """The run's last event, ``said`` as the log says it; ``state``: the state it is
        in ("" to keep the last)."""
        with self._lock:
            if state:
                self._now["state"] = state
            self._now["doing"] = said
            self._write()

    def end(self, outcome: str) -> None:
        """The run ended (``passed`` or ``failed``)."""
        with self._lock:
            self._now["ended"] = time.time()
            self._now["outcome"] = outcome
            self._write()

    def stop(self) -> None:
        """Stop streaming the browser (it closed): the last frame and status stay."""
        screencast, self.screencast = self.screencast, None
        if screencast is not None:
            screencast.close()
        self._driver = None

    def _frame(self, jpeg: bytes) -> None:
        with self._lock:  # (not while a run with secrets begins: its unlink comes after)
            if not self._hidden and jpeg:
                _replace(self.folder / f"{self.name}.jpg", jpeg)
                self.frames += 1

    def _write(self) -> None:
        _replace(self.folder / f"{self.name}.json", json.dumps(self._now).encode("utf-8"))
