"""``netgent studio pick.json``: answer by hand an instruction record declined.

:func:`serve` starts a small HTTP server on 127.0.0.1 for one step file (see
:mod:`pytest_netgent.synthesis.picks`):

``/``
    the studio page (``picking.html``): the page as record saw it with every element it
    observed boxed, the scored candidates highlighted, the action and its text;
``/step.json``, ``/page.png``
    the step and its picture;
``POST /pick``
    ``{"mmid": N, "action": "click", "text": ""}``: the element picked. The pick is
    written to the workflow's picks file and the item is recorded again (``pytest
    --netgent-record`` in a subprocess, in the project's folder): that run acts on the
    picked element on the live page, replays the states it made, and only then writes
    the cache. A pick that does not work is taken out of the picks file again, and the
    cache is untouched; the answer says what happened. When that run declines another
    instruction, its new step is what the page shows next.

The page answers only requests addressed to ``127.0.0.1`` or ``localhost``, and a pick
only from its own page (a JSON body, its own ``Origin``): another site open in the
browser can neither read the step nor make a pick.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import subprocess
import sys
import threading
import time
from functools import cache
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..synthesis.picks import (
    PICTURE,
    PickError,
    Picks,
    Step,
    element_pick,
    read_picks,
    read_step,
    write_picks,
)
from .serving import Handler, QuietServer, Serving

PAGE = "picking.html"
PAGE_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'"
)
"""The studio page's policy: it reaches nothing beyond this server."""

HOSTS = ("127.0.0.1", "localhost")
MAX_BODY = 64 * 1024
VERIFY_TIMEOUT_S = 900.0
"""How long the recording run that tries a pick may take."""
TAIL_LINES = 30
"""Lines of that run's output shown when the pick did not work."""


@cache
def page() -> bytes:
    """The studio page, read once per process."""
    return resources.files(__package__).joinpath(PAGE).read_bytes()


class _Server(QuietServer):
    """The HTTP server of one step file."""

    def __init__(self, address: tuple[str, int], path: Path, timeout: float) -> None:
        self.path = path
        self.step = read_step(path)
        self.record_timeout = timeout
        self.busy = threading.Lock()
        """Held while a pick is tried: one recording run at a time."""
        super().__init__(address, _Handler)


class _Handler(Handler):
    """Answers the studio page's requests (see the module's documentation)."""

    server: _Server
    server_version = "netgent-studio"

    def _allowed(self) -> bool:
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        if host not in HOSTS:
            self.send_error(HTTPStatus.FORBIDDEN, "address the studio as 127.0.0.1 or localhost")
            return False
        return True

    def do_GET(self) -> None:
        """The page, the step, its picture, or a 404."""
        if not self._allowed():
            return
        path = urlsplit(self.path).path
        headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
        step = self.server.step
        if path in ("/", "/index.html"):
            headers["Content-Security-Policy"] = PAGE_POLICY
            self.send_body(page(), "text/html; charset=utf-8", headers)
        elif path == "/step.json":
            self.send_body(step.model_dump_json().encode(), "application/json", headers)
        elif path == "/page.png" and step.picture:
            try:
                body = (self.server.path.parent / PICTURE).read_bytes()
            except OSError:
                self.send_error(HTTPStatus.NOT_FOUND, "the picture is gone")
                return
            self.send_body(body, "image/png", headers)
        else:
            self.send_error(HTTPStatus.NOT_FOUND, "not part of this step")

    def do_POST(self) -> None:
        """A pick from the studio page: tried, and kept only if the item records."""
        if not self._allowed():
            return
        if urlsplit(self.path).path != "/pick":
            self.send_error(HTTPStatus.NOT_FOUND, "not part of this step")
            return
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).hostname not in HOSTS:
            self.send_error(HTTPStatus.FORBIDDEN, "a pick comes from the studio page only")
            return
        if self.headers.get_content_type() != "application/json":
            self.send_error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send the pick as JSON")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            self.send_error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "a pick is a small JSON object")
            return
        if not self.server.busy.acquire(blocking=False):
            self._answer({"ok": False, "message": "a pick is being tried; wait for it"})
            return
        try:
            answer = try_pick(self.server, self.rfile.read(length))
        finally:
            self.server.busy.release()
        self._answer(answer)  # free before the page hears back: its next pick is taken

    def _answer(self, answer: dict[str, Any]) -> None:
        headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
        self.send_body(json.dumps(answer).encode(), "application/json", headers)


def try_pick(server: _Server, body: bytes) -> dict[str, Any]:
    """Write the pick in ``body`` and record the item with it; the answer for the page."""
    step = server.step
    try:
        asked = json.loads(body)
        pick = element_pick(
            step,
            int(asked["mmid"]),
            str(asked.get("action") or step.action),
            str(asked.get("text") or step.text),
            str(asked.get("state", "")),
        )
        picks_file = Path(step.picks)
        picks = read_picks(picks_file) or Picks()
    except (ValueError, TypeError, KeyError) as exc:
        return {"ok": False, "message": f"not a pick: {exc!r}"}
    except PickError as exc:
        return {"ok": False, "message": str(exc)}
    before = picks.model_copy(deep=True)
    picks.put(pick)
    write_picks(picks_file, picks)
    passed, output = _record(step, server.record_timeout)
    if passed:
        return {
            "ok": True,
            "message": f"{pick.description}: recorded and replayed; the cache of workflow "
            f"{step.workflow!r} is written with it",
        }
    after = _next_step(server)
    if after is not None and (after.kind, after.state, after.number) != (
        step.kind,
        step.state,
        step.number,
    ):
        # the pick worked and record went on to decline another instruction: it stays
        # in the picks file for the next try, and the page shows the new step
        return {
            "ok": False,
            "next": True,
            "message": f"{pick.description} worked; record then declined instruction "
            f"{after.number} of state {after.state!r}: pick for it now",
        }
    write_picks(picks_file, before)  # not kept; a failed run wrote no cache
    return {
        "ok": False,
        "message": "the item did not record with this pick; the cache is untouched and "
        "the pick was not kept:\n" + output,
    }


def _record(step: Step, timeout: float) -> tuple[bool, str]:
    """Run the step's recording command; whether it passed and its output's tail."""
    command = [sys.executable, "-m", "pytest", *step.command]
    try:
        done = subprocess.run(
            command,
            cwd=step.rootdir or None,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"the recording run took over {timeout:.0f}s and was stopped"
    except OSError as exc:
        return False, f"the recording run could not start: {exc}"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode == 0, "\n".join(lines[-TAIL_LINES:])


def _next_step(server: _Server) -> Step | None:
    """The step file after a recording run: a new step replaces the one shown."""
    if not server.path.exists():
        return None
    with contextlib.suppress(PickError):
        server.step = read_step(server.path)
        return server.step
    return None


class StudioServer(Serving):
    """A running studio for one step; :meth:`close` (or leaving a ``with``) stops it."""

    def __init__(self, server: _Server) -> None:
        super().__init__(server, "netgent-studio")
        self._studio = server

    @property
    def step(self) -> Step:
        """The step shown now."""
        return self._studio.step


def serve(path: Path, port: int = 0, timeout: float = VERIFY_TIMEOUT_S) -> StudioServer:
    """Serve the step file at ``path`` on 127.0.0.1:``port`` (0: any free port).
    Raises :class:`PickError` when the file cannot be used or the port is taken."""
    try:
        server = _Server(("127.0.0.1", port), Path(path), timeout)
    except OSError as exc:
        why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc})"
        raise PickError(
            f"port {port} {why}: give another with --port N, or --port 0 for any free port"
        ) from None
    return StudioServer(server)


def main(argv: list[str]) -> int:
    """``netgent studio PICK.json [--port N]``: serve until Ctrl-C; 2 for bad input."""
    parser = argparse.ArgumentParser(
        prog="netgent studio",
        description="Pick by hand the element of an instruction --netgent-record declined.",
    )
    parser.add_argument("path", metavar="PICK.json", help="the step file the failure names")
    parser.add_argument("--port", type=int, default=0, help="port (default 0: any free port)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=VERIFY_TIMEOUT_S,
        help=f"seconds the recording run with a pick may take (default {VERIFY_TIMEOUT_S:.0f})",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse has printed its usage message
        return stop.code if isinstance(stop.code, int) else 2
    if not 0 <= args.port <= 65535:
        print(f"netgent studio: --port {args.port} is not a port (0 to 65535)", file=sys.stderr)
        return 2
    try:
        server = serve(Path(args.path), args.port, args.timeout)
    except PickError as exc:
        print(f"netgent studio: {exc}", file=sys.stderr)
        return 2
    with server:
        print(f"netgent studio: {args.path} at {server.url} (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how the studio stops
            while True:
                time.sleep(3600)
    return 0
