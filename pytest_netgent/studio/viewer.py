"""``netgent show-trace PATH``: a trace in the browser, served from this machine.

:func:`serve` starts a small HTTP server for one trace, on 127.0.0.1 only, in a daemon
thread. It serves three things:

``/``
    the viewer (``viewer.html``, one page with its styles and script inline);
``/trace.json``
    the trace's document;
``/files/<member>``
    a screenshot or DOM snapshot of the trace. Snapshots are pages the browser saw, with
    their scripts: they are served with ``Content-Security-Policy: sandbox`` (and shown
    in a sandboxed frame), so none of their scripts ever runs.
``/plots.json``, ``/plots/<name>.svg``, ``/plot-axes/<name>.svg``
    the item's plots (``--netgent-plots`` or ``netgent plot``) found beside the trace:
    their names, each SVG (served in a sandbox too), and where its time axes are (the
    viewer marks the selected moment on them).

Anything else is a 404. The viewer page itself may load nothing but these: its own
``Content-Security-Policy`` keeps it offline.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import sys
import time
from functools import cache
from http import HTTPStatus
from importlib import resources
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from ..replay.trace_file import TraceError, TraceFile, read_trace
from .plots import axes_file, plots_beside
from .serving import Handler, QuietServer, Serving

PAGE = "viewer.html"
"""The viewer page, a data file of this package."""

PAGE_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src 'self' data:; frame-src 'self'; connect-src 'self'; base-uri 'none'; "
    "form-action 'none'"
)
"""The viewer's own policy: it reaches nothing beyond this server."""

MEMBER_POLICY = "sandbox"
"""Every member is served in a sandbox: a snapshot's scripts never run."""

CONTENT_TYPES = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
}
"""Content types of members by extension; any other member is sent as bytes."""


@cache
def page() -> bytes:
    """The viewer page, read once per process."""
    return resources.files(__package__).joinpath(PAGE).read_bytes()


class _Server(QuietServer):
    """The HTTP server of one trace."""

    def __init__(
        self, address: tuple[str, int], trace: TraceFile, plots: list[Path] | None = None
    ) -> None:
        self.trace = trace
        self.plots = {p.name: p for p in plots or []}
        """The SVG plots beside the trace, by file name."""
        self.document = json.dumps(trace.document, ensure_ascii=False).encode("utf-8")
        """``/trace.json``, encoded once."""
        super().__init__(address, _Handler)


class _Handler(Handler):
    """Answers the viewer's requests (see the module's documentation)."""

    server: _Server
    server_version = "netgent-show-trace"

    def do_GET(self) -> None:
        """Answer a GET: the page, the document, a member, or a 404."""
        self._answer(head=False)

    def do_HEAD(self) -> None:
        """Answer a HEAD like a GET, without the body."""
        self._answer(head=True)

    def _answer(self, head: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        trace = self.server.trace
        headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
        if path in ("/", "/index.html"):
            headers["Content-Security-Policy"] = PAGE_POLICY
            self.send_body(page(), "text/html; charset=utf-8", headers, head)
        elif path == "/trace.json":
            self.send_body(self.server.document, "application/json", headers, head)
        elif path == "/plots.json":
            names = json.dumps(list(self.server.plots))
            self.send_body(names.encode(), "application/json", headers, head)
        elif path.startswith("/plot-axes/") and (plot := path[11:]) in self.server.plots:
            try:
                body = axes_file(self.server.plots[plot]).read_bytes()
            except OSError:
                self.send_error(HTTPStatus.NOT_FOUND, "no axes beside this plot")
                return
            self.send_body(body, "application/json", headers, head)
        elif path.startswith("/plots/") and (plot := path[len("/plots/") :]) in self.server.plots:
            try:
                body = self.server.plots[plot].read_bytes()
            except OSError:
                self.send_error(HTTPStatus.NOT_FOUND, "the plot is gone")
                return
            headers["Content-Security-Policy"] = MEMBER_POLICY
            self.send_body(body, "image/svg+xml", headers, head)
        elif path.startswith("/files/") and (name := path[len("/files/") :]) in trace.names:
            try:
                body = trace.member(name)
            except TraceError as exc:
                self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "damaged member", str(exc))
                return
            headers["Content-Security-Policy"] = MEMBER_POLICY
            kind = CONTENT_TYPES.get(PurePosixPath(name).suffix.lower())
            self.send_body(body, kind or "application/octet-stream", headers, head)
        else:
            self.send_error(HTTPStatus.NOT_FOUND, "not part of this trace")


class ViewerServer(Serving):
    """A running viewer of one trace; :meth:`close` (or leaving a ``with``) stops it."""

    def __init__(self, server: _Server, host: str) -> None:
        super().__init__(server, "netgent-show-trace", host)
        self.trace = server.trace


def serve(trace: Path, port: int = 0, host: str = "localhost") -> ViewerServer:
    """Serve the trace at ``trace`` on ``port`` (0: any free port) and return the server.

    ``host`` is the name the URL uses; ``localhost`` binds 127.0.0.1, so the viewer is
    reachable from this machine only. Raises :class:`TraceError` when the trace cannot be
    read or the port is taken.
    """
    checked = read_trace(Path(trace))
    address = "127.0.0.1" if host in ("localhost", "127.0.0.1", "") else host
    try:
        server = _Server((address, port), checked, plots_beside(Path(trace)))
    except OSError as exc:
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            why = "is in use" if exc.errno == errno.EADDRINUSE else "is not open to this user"
            raise TraceError(
                f"port {port} {why}: give another with --port N, or --port 0 for any free port"
            ) from exc
        raise TraceError(f"cannot serve on {address}:{port}: {exc.strerror or exc}") from exc
    return ViewerServer(server, host or "localhost")


def _wait_until_interrupted(server: ViewerServer) -> None:
    """Block until Ctrl-C (``KeyboardInterrupt``) while ``server`` serves."""
    while True:
        time.sleep(3600)


def main(argv: list[str]) -> int:
    """``netgent show-trace PATH [--port N]``: serve the trace until Ctrl-C.

    Returns 0 once stopped with Ctrl-C, 2 when the trace cannot be shown (the reason
    is printed to stderr).
    """
    parser = argparse.ArgumentParser(
        prog="netgent show-trace",
        description="Show a trace written by --netgent-trace in the browser.",
    )
    parser.add_argument("path", metavar="PATH", help="the trace, e.g. trace.zip")
    parser.add_argument(
        "--port", type=int, default=0, help="port to serve on (default 0: any free port)"
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse has printed its usage message
        return stop.code if isinstance(stop.code, int) else 2
    if not 0 <= args.port <= 65535:
        print(f"netgent show-trace: --port {args.port} is not a port (0 to 65535)", file=sys.stderr)
        return 2
    try:
        server = serve(Path(args.path), port=args.port)
    except TraceError as exc:
        print(f"netgent show-trace: {exc}", file=sys.stderr)
        return 2
    with server:
        print(f"netgent show-trace: serving {args.path} at {server.url} (Ctrl-C to stop)")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how the viewer stops
            _wait_until_interrupted(server)
    return 0
