"""What the studio's local servers share: a quiet threaded HTTP server on this machine."""

from __future__ import annotations

import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import urlsplit

HOSTS = ("127.0.0.1", "localhost")
"""The names a studio server answers to (any other is a DNS rebinding attempt)."""

OWN_FETCH_SITES = ("same-origin", "none")
"""``Sec-Fetch-Site`` of a request a server's own page made, or the user typed."""


class QuietServer(ThreadingHTTPServer):
    """A threaded HTTP server whose request threads never hold the process open."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that hung up mid-answer (a tab closed, a picture no longer wanted)
        is no error; anything else is printed as usual."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class Serving:
    """A server answering in a daemon thread, on ``host``'s name, until :meth:`close`
    (or the end of a ``with`` block)."""

    def __init__(self, server: QuietServer, name: str, host: str = "localhost") -> None:
        self._server = server
        self.port: int = server.server_address[1]
        self.url = f"http://{host}:{self.port}/"
        """The address it answers on, ending with ``/``."""
        self._thread = threading.Thread(
            target=server.serve_forever, name=f"{name}:{self.port}", daemon=True
        )
        self._thread.start()
        self._closed = False

    def close(self) -> None:
        """Stop serving and free the port (a second call does nothing)."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class Handler(BaseHTTPRequestHandler):
    """Answers with whole bodies and logs nothing (the terminal is the command's)."""

    def send_body(
        self, body: bytes, kind: str, headers: dict[str, str], head: bool = False
    ) -> None:
        """Send ``body`` of content type ``kind`` with ``headers`` (``head``: without
        the body)."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def foreign(self) -> str:
        """Why this request comes from a page other than the one this server serves, as
        a short reason; "" when it does not. Its ``Origin``, when sent, must be this
        server's own (``http://127.0.0.1:PORT`` or ``http://localhost:PORT``); and its
        ``Sec-Fetch-Site`` must not say another site made it: an ``<img>`` on a foreign
        page sends no ``Origin``, but ``cross-site``, or ``same-site`` for a page on
        another port of this machine. A request with neither header (a script, curl)
        is no browser's, led by no foreign page."""
        origin = self.headers.get("Origin")
        if origin is not None:
            port = cast("tuple[str, int]", self.server.server_address)[1]
            try:
                url = urlsplit(origin)
                own = url.scheme == "http" and url.hostname in HOSTS and url.port == port
            except ValueError:  # a port that is not one
                own = False
            if not own:
                return f"not for pages of {origin[:100]}"
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in OWN_FETCH_SITES:
            return f"not for pages of another site (Sec-Fetch-Site: {site[:40]})"
        return ""

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged: the terminal shows only what the command prints."""
