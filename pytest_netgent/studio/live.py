"""``--netgent-live PORT``: every running browser, live, on a page served from this machine.

The process that reports (pytest without ``-n``, or xdist's controller) serves a page on
127.0.0.1 (:func:`serve`); the processes that run items write into one session folder,
which is all the server reads:

``WORKER.json``
    what each process's item is (the status lines' files: the item, when it started,
    its last event), or that the worker went down;
``live/STREAM.json``, ``live/STREAM.jpg``
    each browser's run (workflow, state, last event) and its newest screencast frame
    (:class:`pytest_netgent.browser.screencast.LiveStream`): ``gw0`` for a worker's
    browser, ``gw0.caller`` for a scenario member's.

The server answers ``/`` (the page, ``live.html``, styles and script inline, loading
nothing from elsewhere), ``/live.json`` (all of the above, read afresh) and
``/frames/STREAM.jpg``. It answers only requests addressed to ``127.0.0.1`` or
``localhost`` (another name pointing here is a DNS rebinding attempt: 403). Each time
the page asks what to show, the server touches ``live/.watched``, and each time it
hands a frame out, ``live/STREAM.seen``: a stream takes pictures only while a page is
open, and its next one once its last was seen (a picture costs the browser 15-25 ms of
CPU; without a page, ``--netgent-live`` takes none).

Only the live page itself makes the run take pictures: ``/live.json`` and the frames
are refused (403) to a request another page made (:meth:`Handler.foreign`: an
``<img>`` of a foreign page pointing here, even one on another port of this machine),
and carry ``Cross-Origin-Resource-Policy: same-origin``, so that the browser shows them
to no other page; the page itself may not be framed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import re
import time
from functools import cache
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from ..browser.screencast import SEEN, WATCHED
from .serving import HOSTS, Handler, QuietServer, Serving

PAGE = "live.html"
"""The live page, a data file of this package."""

PAGE_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""The page's own policy: it reaches nothing beyond this server, and no other page
frames it (a framed live page would take pictures for whoever framed it)."""

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}")
"""A stream's name (a worker's id, a dot, a member's name)."""


class LiveError(Exception):
    """The live page cannot be served (the port is taken); the message says what to do."""


@cache
def page() -> bytes:
    """The live page, read once per process."""
    return resources.files(__package__).joinpath(PAGE).read_bytes()


def _read(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(OSError, ValueError):
        value = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(value, dict):
            return value
    return None


def snapshot(folder: Path) -> dict[str, Any]:
    """What the page shows now: each worker's item and each browser's stream."""
    workers = []
    for path in sorted(folder.glob("*.json")):
        status = _read(path)
        if status is not None:
            workers.append({"name": path.stem, **status})
    streams = []
    for path in sorted((folder / "live").glob("*.json")):
        stream = _read(path)
        if stream is None or not _NAME.fullmatch(path.stem):
            continue
        frame = path.with_suffix(".jpg")
        with contextlib.suppress(OSError):
            stream["frame"] = frame.stat().st_mtime_ns  # a new frame: a new number
        streams.append({**stream, "name": path.stem})
    return {"now": time.time(), "workers": workers, "streams": streams}


def _touch(path: Path) -> None:
    """Tell the streams (by ``path``'s time) that the page asked or saw: before the
    answer goes out, so that whoever reads the answer finds it told."""
    with contextlib.suppress(OSError):  # a session folder going away
        path.touch()


class _Server(QuietServer):
    def __init__(self, address: tuple[str, int], folder: Path) -> None:
        self.folder = folder
        super().__init__(address, _Handler)


class _Handler(Handler):
    server: _Server
    server_version = "netgent-live"

    def do_GET(self) -> None:
        """The page, its state, a frame, or a 404; a 403 for another host name, and for
        the state or a frame asked by another page than the live page."""
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host not in HOSTS:
            self.send_error(HTTPStatus.FORBIDDEN, "served to 127.0.0.1 and localhost only")
            return
        path = unquote(urlsplit(self.path).path)
        headers = {
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            "Cross-Origin-Resource-Policy": "same-origin",
        }
        if path in ("/", "/index.html"):
            headers["Content-Security-Policy"] = PAGE_POLICY
            headers["X-Frame-Options"] = "DENY"
            self.send_body(page(), "text/html; charset=utf-8", headers)
            return
        if why := self.foreign():  # it would make the run take pictures for that page
            self.send_error(HTTPStatus.FORBIDDEN, f"the live page's own: {why}")
            return
        if path == "/live.json":
            body = json.dumps(snapshot(self.server.folder)).encode("utf-8")
            _touch(self.server.folder / "live" / WATCHED)  # the page is open: pictures
            self.send_body(body, "application/json", headers)
        elif (
            path.startswith("/frames/")
            and path.endswith(".jpg")
            and _NAME.fullmatch(name := path[len("/frames/") : -len(".jpg")])
        ):
            try:
                body = (self.server.folder / "live" / f"{name}.jpg").read_bytes()
            except OSError:
                self.send_error(HTTPStatus.NOT_FOUND, "no frame of that browser")
                return
            _touch(self.server.folder / "live" / f"{name}{SEEN}")  # seen: the next one
            self.send_body(body, "image/jpeg", headers)
        else:
            self.send_error(HTTPStatus.NOT_FOUND, "not part of the live page")


class LiveServer(Serving):
    """The live page of one session's ``folder``, served until :meth:`close`."""

    def __init__(self, folder: Path, port: int) -> None:
        (folder / "live").mkdir(exist_ok=True)
        try:
            server = _Server(("127.0.0.1", port), folder)
        except OSError as exc:
            why = {
                errno.EADDRINUSE: "is in use",
                errno.EACCES: "is not open to this user",
            }.get(exc.errno or 0, f"cannot be served ({exc.strerror or exc})")
            raise LiveError(
                f"--netgent-live {port}: port {port} on 127.0.0.1 {why}; give another "
                "port, or --netgent-live 0 for any free one"
            ) from None
        super().__init__(server, "netgent-live", "127.0.0.1")
