"""What the studio's local servers share: a quiet threaded HTTP server on this machine."""

from __future__ import annotations

import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


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

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged: the terminal shows only what the command prints."""
