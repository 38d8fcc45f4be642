"""Starting and stopping the corpus's applications: each on 127.0.0.1, on a free port,
in a folder of its own made for the run and removed after it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
REPO = ROOT.parent


class AppError(RuntimeError):
    """An application of the corpus is not installed or did not start."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Launch:
    """How to start one application: the command, where, and the page that says it is up."""

    command: list[str]
    ready_path: str = "/"
    cwd: Path | None = None
    env: dict[str, str] | None = None


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # 127.0.0.1 only
                if response.status < 500:
                    return
        except urllib.error.HTTPError as error:
            if error.code < 500:
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise AppError(f"{url} did not start (exit {process.poll()}):\n{tail}")
        time.sleep(0.2)


@contextmanager
def _process(launch: Launch, port: int, folder: Path) -> Iterator[str]:
    url = f"http://127.0.0.1:{port}"
    log = folder / "server.log"
    env = {**os.environ, **(launch.env or {})}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            launch.command, cwd=launch.cwd or folder, env=env, stdout=out, stderr=out,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            _wait_ready(url + launch.ready_path, process, log, seconds=60)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def run_setup(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    result = subprocess.run(
        command, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True
    )
    if result.returncode:
        raise AppError(
            f"{' '.join(command)} failed:\n{result.stdout[-1500:]}{result.stderr[-1500:]}"
        )


def require(module: str) -> None:
    try:
        __import__(module)
    except ImportError as error:
        raise AppError(
            f"{module} is not installed: pip install -r corpus/requirements.txt (the corpus's "
            "applications at the releases its states were written for)"
        ) from error


Setup = Callable[..., Launch]
"""Makes an application's launch: called with its folder, its port and the parameters
:func:`serve` was given."""
APPS: dict[str, Setup] = {}


def app(name: str) -> Callable[[Setup], Setup]:
    def register(setup: Setup) -> Setup:
        APPS[name] = setup
        return setup

    return register


@contextmanager
def serve(name: str, **params: str) -> Iterator[str]:
    """Start the corpus application ``name`` on 127.0.0.1; yield its URL; stop it.
    ``params`` go to its setup (the embedding site takes the URL it frames)."""
    if name not in APPS:
        raise AppError(f"unknown corpus application {name!r}: one of {', '.join(APPS)}")
    folder = Path(tempfile.mkdtemp(prefix=f"netgent-corpus-{name}-"))
    try:
        port = free_port()
        launch = APPS[name](folder, port, **params)
        with _process(launch, port, folder) as url:
            yield url
    finally:
        shutil.rmtree(folder, ignore_errors=True)


PYTHON = sys.executable
