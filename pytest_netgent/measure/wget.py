"""The ``wget`` step: one download with GNU wget, its size and rate.

Without ``output_file`` the body is written to a temporary file inside the folder, its
size counted and the file deleted (the download is measured, not kept); an
``output_file`` is kept inside the folder (a path that leaves it is refused: a workflow
file may not write elsewhere on the machine), put there only once the download succeeded,
so a failed one leaves a file already there as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .process import Completed, Params, Peer, Runner, arg, failure, find_tool, rate

STEP = "wget"
REQUIRED = ("url",)
OPTIONAL = ("output_file", "timeout_seconds", "tries", "user_agent", "no_check_certificate")
INSTALL = "apt-get install -y wget"

EXITS = {
    1: ("wget failed", "check the url and the params"),
    2: ("wget could not read its options", "check the wget params"),
    3: ("the output file could not be written", "check the output_file and the disk"),
    4: ("the network failed", "check that the host is reachable and the url's port is open"),
    5: ("the TLS certificate was not verified", "fix the certificate, or no_check_certificate"),
    6: ("the server wants a login", "give credentials in the url, or use another url"),
    7: ("the server broke the protocol", "check the url"),
    8: ("the server answered with an error", "check the url (see the status below)"),
}
"""What wget's exit statuses mean (``man wget``, EXIT STATUS) and what to do."""


def target(params: Params, folder: Path) -> Path | None:
    """Where a kept download goes, or None when it is discarded."""
    name = params.text("output_file")
    if name is None:
        return None
    inside = (folder / Path(name)).resolve()
    if not inside.is_relative_to(folder.resolve()):
        raise failure(
            STEP, f"output_file {name!r} leaves the item's folder", "give a path inside it"
        )
    return inside


def peers(params: Params) -> list[Peer]:
    """The url's host and port (80, 443 or 21 by its scheme when the url names none)."""
    parts = urlsplit(params.required("url"))
    try:
        port = parts.port
    except ValueError:
        raise failure(STEP, "the url's port is not a number", "check the url") from None
    default = {"https": 443, "ftp": 21}.get(parts.scheme.lower(), 80)
    return [Peer(parts.hostname, port or default)] if parts.hostname else []


def command(params: Params, tool: str, output: Path) -> list[str]:
    """``wget --no-verbose -O FILE [--timeout T] [--tries N] [--user-agent UA] ... URL``."""
    url = params.required("url")
    if url.startswith("-"):
        raise failure(STEP, "the url starts with '-'", "give an http(s) or ftp url")
    argv = [tool, "--no-verbose", "-O", str(output)]
    seconds = params.number("timeout_seconds")
    if seconds is not None:
        argv += ["--timeout", arg(seconds)]
    tries = params.integer("tries")
    if tries is not None:
        argv += ["--tries", arg(tries)]
    agent = params.text("user_agent")
    if agent is not None:
        argv += ["--user-agent", agent]
    argv += ["--no-check-certificate"] if params.flag("no_check_certificate") else []
    return [*argv, url]


def check(done: Completed) -> None:
    """Raise with what wget's exit status means."""
    if done.returncode != 0:
        what, fix = EXITS.get(done.returncode, EXITS[1])
        raise done.fail(f"{what} (wget exited {done.returncode})", fix)


def destination(kept: Path | None, folder: Path) -> Path:
    """The file wget writes: a new temporary file beside ``kept``, or inside ``folder``."""
    place = kept.parent if kept is not None else folder
    place.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".wget-", suffix=".part", dir=place)
    os.close(handle)
    return Path(name)


def run(values: Mapping[str, Any], runner: Runner) -> dict[str, Any]:
    """Download the url; count its bytes, keep the file only when asked to (a file the
    step created for a failed download is removed)."""
    params = Params(STEP, values)
    tool = find_tool(STEP, ["wget"], INSTALL)
    kept = target(params, runner.folder)
    output = destination(kept, runner.folder)
    try:
        argv = command(params, tool, output)
        done = runner.run(STEP, argv)
        check(done)
        size = output.stat().st_size
        if kept is not None:
            os.replace(output, kept)
    finally:
        with contextlib.suppress(FileNotFoundError):
            output.unlink()
    seconds = done.duration_s
    return {
        **done.record(),
        "url": runner.redact(argv[-1]),
        "bytes": size,
        "seconds": round(seconds, 6),
        "bits_per_second": size * 8 / seconds if seconds > 0 else None,
        "output_file": str(kept) if kept is not None else None,
    }


def summary(result: Mapping[str, Any]) -> str:
    """``wget URL: 1048576 bytes in 0.01 s (838.86 Mbit/s)``."""
    return (
        f"wget {result.get('url')}: {result.get('bytes')} bytes in "
        f"{float(result.get('seconds') or 0):.2f} s ({rate(result.get('bits_per_second'))})"
    )
