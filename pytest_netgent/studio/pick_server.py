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
    cache is untouched; the answer says what happened ("recorded" only when the cache
    was written with the pick). When that run declines another instruction, its new
    step is what the page shows next.

A step file is data, shared in bug reports and CI artifacts: it never says what runs or
where (:func:`recording`). The studio runs ``pytest --netgent-record=missing FILE::ITEM``
itself, in the suite folder the step file lies in, for a workflow file inside that
folder; a step file naming anything else is refused before anything is served or
written. It records against the step file's base URL only when that is this machine
(:func:`loopback`): the recording browser, and the secrets the workflow types, go
there. Another site is used only when the user names it (``--base-url URL``).

The page answers only requests addressed to ``127.0.0.1`` or ``localhost``, and a pick
only from its own page (a JSON body, its own ``Origin``): another site open in the
browser can neither read the step nor make a pick.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import ipaddress
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from functools import cache
from http import HTTPStatus
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..synthesis.picks import (
    PICTURE,
    Pick,
    PickError,
    Picks,
    Step,
    element_pick,
    picks_path,
    read_picks,
    read_step,
    write_picks,
)
from ..workflow import store
from .serving import HOSTS, Handler, QuietServer, Serving

PAGE = "picking.html"
PAGE_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
"""The studio page's policy: it reaches nothing beyond this server, and is framed by
no other page."""

MAX_BODY = 64 * 1024
VERIFY_TIMEOUT_S = 900.0
"""How long the recording run that tries a pick may take."""
TAIL_LINES = 30
"""Lines of that run's output shown when the pick did not work."""

SUITE_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
"""Files that make a folder a pytest suite's root (its configuration); without any
above a step file, the nearest folder holding a ``conftest.py`` is its suite."""

WORKFLOW_SUFFIXES = (".netgent.yaml", ".netgent.yml")
"""The workflow files pytest collects: a step file names one of them."""

AGAIN = "record the item again (pytest --netgent-record) to get a new step file"
"""How every refused step file is fixed."""

CONFIRM = "pass --base-url URL to record against it"
"""How a step file's base URL on another machine is used all the same."""

LOOPBACK = "127.0.0.0/8, localhost or [::1]"
"""The base URLs a step file may give by itself (:func:`loopback`)."""


@dataclass(frozen=True)
class Recording:
    """The run that tries a pick, made by the studio: ``pytest --netgent-record=missing
    WORKFLOW_FILE::ITEM`` in ``suite`` (with the base URL as an option), and the files
    it writes."""

    suite: Path
    """The suite folder the step file lies in (resolved)."""
    target: str
    """``WORKFLOW_FILE::ITEM``, the file relative to ``suite``."""
    base_url: str
    """The base URL the run records against ("" for the suite's own): the one the user
    gave (``--base-url``), else the step file's, which is on this machine."""
    confirmed: bool
    """Whether ``base_url`` is the user's (``--base-url``) rather than the step file's."""
    cache: Path
    """The workflow's cache file, inside ``suite``."""
    picks: Path
    """The workflow's picks file, inside ``suite``: the one file a pick writes."""

    def command(self) -> list[str]:
        """The recording run's command line (this Python's pytest)."""
        command = [sys.executable, "-m", "pytest", "--netgent-record=missing", self.target]
        if self.base_url:
            command.append(f"--netgent-base-url={self.base_url}")
        return command


def suite_of(path: Path) -> Path | None:
    """The suite folder of the step file at ``path`` (resolved): the nearest folder
    above it holding a pytest configuration file (:data:`SUITE_FILES`), else the nearest
    holding a ``conftest.py``; ``None`` when there is neither."""
    folders = path.resolve().parents
    for names in (SUITE_FILES, ("conftest.py",)):
        for folder in folders:
            if any((folder / name).is_file() for name in names):
                return folder
    return None


def recording(path: Path, step: Step, base_url: str = "") -> Recording:
    """The run that tries a pick of the step file at ``path``, derived from where that
    file lies and the workflow it names, never from what it says to run:
    :class:`PickError` (one line: the file, the field, the fix) when it names a file
    outside its suite (``..``, an absolute path elsewhere, a symlink leading out), an
    item of another workflow, or a base URL that is not one or is not on this machine
    (:func:`loopback`). ``base_url``, the user's (``--base-url``), is recorded against
    instead of the step file's."""
    suite = suite_of(path)
    if suite is None:
        raise PickError(
            f"{path}: lies in no pytest suite (no {', '.join(SUITE_FILES)} or conftest.py "
            "in a folder above it): open it where its run left it, in the suite's "
            "artifacts folder"
        )
    if step.workflow_file:
        file = _inside(suite, step.workflow_file, "workflow_file", path)
    elif step.picks:
        file = _legacy_workflow_file(suite, step, path)
    else:
        raise PickError(f"{path}: workflow_file: missing; {AGAIN}")
    if not file.name.endswith(WORKFLOW_SUFFIXES) or not file.is_file():
        raise PickError(
            f"{path}: workflow_file {step.workflow_file or str(file)!r}: not a workflow "
            f"file (*.netgent.yaml) of the suite {suite}; {AGAIN}"
        )
    item = step.item or step.workflow
    if item != step.workflow and not (item.startswith(f"{step.workflow}[") and item[-1] == "]"):
        raise PickError(
            f"{path}: item {step.item!r}: not an item of workflow {step.workflow!r} "
            f"({step.workflow} or {step.workflow}[...]); {AGAIN}"
        )
    if base_url and not _is_url(base_url):
        raise PickError(f"--base-url {base_url!r}: not an http(s) URL (http://HOST[:PORT])")
    if not base_url and step.base_url and not _is_url(step.base_url):
        raise PickError(f"{path}: base_url {step.base_url!r}: not an http(s) URL; {AGAIN}")
    if not base_url and step.base_url and not loopback(step.base_url):
        raise PickError(
            f"{path}: base_url {step.base_url!r}: not this machine ({LOOPBACK}), and the "
            f"recording browser, with any secret the workflow types, would go there; {CONFIRM}"
        )
    cache_file = store.cache_path(file, step.workflow)
    picks = _inside(suite, str(picks_path(cache_file)), "workflow_file (its picks file)", path)
    if step.picks and _inside(suite, step.picks, "picks", path) != picks:
        raise PickError(
            f"{path}: picks {step.picks!r}: not the picks file of workflow "
            f"{step.workflow!r} ({picks}); delete the field (it is no longer read) or {AGAIN}"
        )
    if step.rootdir and _resolved(str(suite / step.rootdir)) != suite:
        raise PickError(
            f"{path}: rootdir {step.rootdir!r}: not the suite folder the file lies in "
            f"({suite}); delete the field (it is no longer read) or {AGAIN}"
        )
    return Recording(
        suite=suite,
        target=f"{file.relative_to(suite).as_posix()}::{item}",
        base_url=base_url or step.base_url,
        confirmed=bool(base_url),
        cache=_inside(suite, str(cache_file), "workflow_file (its cache)", path),
        picks=picks,
    )


def _is_url(value: str) -> bool:
    """Whether ``value`` is an http(s) URL with a host, all printable, with no space."""
    try:
        url = urlsplit(value)
        host = url.hostname
    except ValueError:  # a bracket left open
        return False
    printable = all(c.isprintable() and not c.isspace() for c in value)
    return url.scheme in ("http", "https") and bool(host) and printable


def loopback(value: str) -> bool:
    r"""Whether the http(s) URL ``value`` is on this machine: its host is ``localhost``,
    in 127.0.0.0/8 or ``[::1]``, with a port or none, no user part and no backslash
    (which a browser reads as a ``/``: ``http://evil.test\@127.0.0.1/`` goes to
    evil.test)."""
    try:
        url = urlsplit(value)
        host, port = url.hostname or "", url.port
    except ValueError:  # a bracket left open, a port that is not one
        return False
    if port == 0:
        return False
    if "@" in url.netloc or "\\" in value:
        return False
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name, or a zone ("::1%eth0")
        return False
    if isinstance(address, ipaddress.IPv6Address):
        return address == ipaddress.IPv6Address("::1")
    return address in ipaddress.IPv4Network("127.0.0.0/8")


def _resolved(value: str) -> Path | None:
    """``value`` as a path with every symlink followed; ``None`` when it cannot be one."""
    try:
        return Path(value).resolve()
    except (OSError, ValueError):  # a NUL byte, a symlink loop
        return None


def _inside(suite: Path, value: str, field: str, path: Path) -> Path:
    """The file ``value`` (``field`` of the step file at ``path``) names, resolved:
    relative to ``suite``, or absolute; :class:`PickError` unless it lies inside
    ``suite`` once every symlink is followed."""
    given = Path(value)
    real = _resolved(str(given if given.is_absolute() else suite / given))
    if ".." in given.parts or real is None or not real.is_relative_to(suite):
        raise PickError(
            f"{path}: {field} {value!r}: lies outside the suite {suite} the file belongs "
            f"to (a step file names files inside it, with no '..'); {AGAIN}"
        )
    return real


def _legacy_workflow_file(suite: Path, step: Step, path: Path) -> Path:
    """The workflow file of a step file older releases wrote (they named the picks file
    only): the one beside whose cache that picks file lies."""
    picks = _inside(suite, step.picks, "picks", path)
    cache_file = picks.with_name(picks.name.removesuffix(".picks.json") + ".json")
    folder = cache_file.parent.parent.parent  # FOLDER/__netgent__/STEM/NAME.json
    for file in sorted(folder.glob("*.netgent.y*ml")):
        if store.cache_path(file, step.workflow) == cache_file:
            return _inside(suite, str(file), "picks", path)
    raise PickError(
        f"{path}: picks {step.picks!r}: no workflow file of workflow {step.workflow!r} "
        f"has this picks file; {AGAIN}"
    )


@cache
def page() -> bytes:
    """The studio page, read once per process."""
    return resources.files(__package__).joinpath(PAGE).read_bytes()


class _Server(QuietServer):
    """The HTTP server of one step file."""

    def __init__(self, address: tuple[str, int], path: Path, timeout: float, base_url: str) -> None:
        self.path = path
        self.base_url = base_url
        """The user's base URL (``--base-url``), or "" for each step file's own."""
        self.step = read_step(path)
        self.recording = recording(path, self.step, base_url)
        """What a pick runs and writes (checked again before each pick)."""
        self.record_timeout = timeout
        self.busy = threading.Lock()
        """Held while a pick is tried: one recording run at a time."""
        super().__init__(address, _Handler)


class _Handler(Handler):
    """Answers the studio page's requests (see the module's documentation)."""

    server: _Server
    server_version = "netgent-studio"

    def _allowed(self, is_page: bool = False) -> bool:
        """Whether to answer: addressed to this machine by name and, but for the page
        itself (``is_page``), asked by the studio page (:meth:`Handler.foreign`); else
        a 403."""
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        if host not in HOSTS:
            self.send_error(HTTPStatus.FORBIDDEN, "address the studio as 127.0.0.1 or localhost")
            return False
        if not is_page and (why := self.foreign()):
            self.send_error(HTTPStatus.FORBIDDEN, f"the studio page's own: {why}")
            return False
        return True

    def do_GET(self) -> None:
        """The page, the step, its picture, or a 404."""
        path = urlsplit(self.path).path
        if not self._allowed(is_page=path in ("/", "/index.html")):
            return
        headers = {
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
            "Cross-Origin-Resource-Policy": "same-origin",
        }
        step = self.server.step
        if path in ("/", "/index.html"):
            headers["Content-Security-Policy"] = PAGE_POLICY
            headers["X-Frame-Options"] = "DENY"
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
        # checked again: its files may have moved
        run = server.recording = recording(server.path, step, server.base_url)
        asked = json.loads(body)
        pick = element_pick(
            step,
            int(asked["mmid"]),
            str(asked.get("action") or step.action),
            str(asked.get("text") or step.text),
            str(asked.get("state", "")),
        )
        picks = read_picks(run.picks) or Picks()
    except (ValueError, TypeError, KeyError) as exc:
        return {"ok": False, "message": f"not a pick: {exc!r}"}
    except PickError as exc:
        return {"ok": False, "message": str(exc)}
    before = picks.model_copy(deep=True)
    cached = _contents(run.cache)
    picks.put(pick)
    write_picks(run.picks, picks)
    passed, output = _record(run, server.record_timeout)
    if passed and _recorded(run, pick, cached):
        return {
            "ok": True,
            "message": f"{pick.description}: recorded and replayed; the cache of workflow "
            f"{step.workflow!r} is written with it",
        }
    if passed:  # it passed without the pick (the cache had the state) or wrote nothing
        write_picks(run.picks, before)
        return {
            "ok": False,
            "message": f"the item passed but {run.target} was not recorded with this pick "
            f"(the cache of workflow {step.workflow!r} is not written with it); the pick "
            "was not kept:\n" + output,
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
    write_picks(run.picks, before)  # not kept; a failed run wrote no cache
    return {
        "ok": False,
        "message": "the item did not record with this pick; the cache is untouched and "
        "the pick was not kept:\n" + output,
    }


def _contents(path: Path) -> bytes | None:
    """The bytes of the file at ``path``; ``None`` when there is none."""
    try:
        return path.read_bytes()
    except OSError:
        return None


def _recorded(run: Recording, pick: Pick, cached: bytes | None) -> bool:
    """Whether the recording run wrote the cache with ``pick``: the cache is new (it was
    ``cached`` before), and the pick left the picks file (a run takes out the picks it
    used once the cache holds them)."""
    after = _contents(run.cache)
    if after is None or after == cached:
        return False
    with contextlib.suppress(PickError):
        left = read_picks(run.picks)
        return left is None or pick not in left.picks
    return False


def _record(run: Recording, timeout: float) -> tuple[bool, str]:
    """Run the recording run (in its suite folder); whether it passed and its output's
    tail."""
    try:
        done = subprocess.run(
            run.command(),
            cwd=run.suite,
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
    """The step file after a recording run: a new step replaces the one shown (when
    it, too, names files of its suite only)."""
    if not server.path.exists():
        return None
    with contextlib.suppress(PickError):
        step = read_step(server.path)
        server.recording = recording(server.path, step, server.base_url)
        server.step = step
        return step
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

    @property
    def recording(self) -> Recording:
        """What a pick of that step runs and writes."""
        return self._studio.recording


def serve(
    path: Path, port: int = 0, timeout: float = VERIFY_TIMEOUT_S, base_url: str = ""
) -> StudioServer:
    """Serve the step file at ``path`` on 127.0.0.1:``port`` (0: any free port); a pick
    records against ``base_url`` when given (the user's ``--base-url``), else against
    the step file's own. Raises :class:`PickError` when the file cannot be used (see
    :func:`recording`) or the port is taken."""
    try:
        server = _Server(("127.0.0.1", port), Path(path), timeout, base_url)
    except OSError as exc:
        why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc})"
        raise PickError(
            f"port {port} {why}: give another with --port N, or --port 0 for any free port"
        ) from None
    return StudioServer(server)


def main(argv: list[str]) -> int:
    """``netgent studio PICK.json [--port N] [--base-url URL]``: serve until Ctrl-C; 2
    for bad input."""
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
    parser.add_argument(
        "--base-url",
        default="",
        metavar="URL",
        help="the base URL a pick records against, instead of the pick file's (which is "
        f"used only when it is on this machine: {LOOPBACK})",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse has printed its usage message
        return stop.code if isinstance(stop.code, int) else 2
    if not 0 <= args.port <= 65535:
        print(f"netgent studio: --port {args.port} is not a port (0 to 65535)", file=sys.stderr)
        return 2
    try:
        server = serve(Path(args.path), args.port, args.timeout, args.base_url)
    except PickError as exc:
        print(f"netgent studio: {exc}", file=sys.stderr)
        return 2
    with server:
        run = server.recording
        origin = "given with --base-url" if run.confirmed else "the pick file's, this machine"
        against = f" against {run.base_url} ({origin})" if run.base_url else ""
        print(
            f"netgent studio: {args.path} at {server.url}; a pick records {run.target} "
            f"in {run.suite}{against} (Ctrl-C to stop)",
            flush=True,
        )
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how the studio stops
            while True:
                time.sleep(3600)
    return 0
