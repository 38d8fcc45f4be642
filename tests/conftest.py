"""Shared fixtures of the test suite: local sites and pytester projects."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures import serve
from fixtures.http import AppServer, Request, Response

from .helpers import Project

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def changed_url() -> Iterator[str]:
    """URL of the local applications in their changed-UI variant."""
    with serve("changed") as server:
        yield server.url


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """An empty temporary folder short enough for the browser to keep its files in."""
    folder = Path(tempfile.mkdtemp(prefix="ng-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def project(pytester: pytest.Pytester, base_url: str) -> Project:
    """An empty workflow project against the original local sites."""
    pytester.makeini("[pytest]\nnetgent_state_timeout = 3\n")
    return Project(pytester, base_url)


class SlowApp:
    """A site whose server takes ``seconds`` (query parameter) to answer: ``/page`` is a
    slow document, ``/api`` a slow JSON call, ``/app`` a quick page that shows the slow
    call's answer once it comes."""

    prefix = "/"

    def __init__(self) -> None:
        self.closed = threading.Event()
        self.hits: list[str] = []
        """Every path asked for, in order."""
        self.url = ""

    def handle(self, req: Request) -> Response | None:
        self.hits.append(req.path)
        seconds = float(req.query.get("seconds", ["0"])[0])
        if req.path == "/away":  # a page whose own script takes the browser elsewhere
            target = json.dumps(req.query["to"][0])
            return Response.html(
                f"<!doctype html><title>Away</title><p>leaving</p><script>setTimeout(() => "
                f"location.href = {target}, 300)</script>"
            )
        if req.path == "/app":
            return Response.html(
                "<!doctype html><title>App</title><h1>App</h1><ul id=items></ul><script>"
                f"fetch('/api?seconds={seconds:g}').then(r => r.json()).then(items => "
                "document.querySelector('#items').innerHTML = "
                "items.map(i => '<li>' + i + '</li>').join(''));</script>"
            )
        self.closed.wait(seconds)  # the server's stop ends the wait
        if req.path == "/page":
            return Response.html("<!doctype html><title>Slow</title><p>slow page</p>")
        if req.path == "/api":
            return Response.json(["one", "two"])
        return None

    def close(self) -> None:
        self.closed.set()


@pytest.fixture
def slow_site() -> Iterator[SlowApp]:
    """A site whose server answers as slowly as it is asked to (its ``url`` set)."""
    app = SlowApp()
    server = AppServer([app]).start()
    app.url = server.url
    try:
        yield app
    finally:
        server.stop()


@pytest.fixture
def slow_server(slow_site: SlowApp) -> str:
    """URL of :func:`slow_site`."""
    return slow_site.url
