"""Shared fixtures of the test suite: local sites and pytester projects."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiortc  # noqa: F401  (see below)
import pytest

from fixtures import serve
from fixtures.http import AppServer, Request, Response
from pytest_netgent.browser import measuring  # noqa: F401  (see below)
from pytest_netgent.network import netns  # noqa: F401  (see below)

from .helpers import BIG, REMOTE_SERVER, Project

pytest_plugins = ["pytester"]

# aiortc, imported above: the video call's peer (fixtures/meet.py) imports it when the first
# call comes, in a server thread of this process. If that happened during a pytester
# inline run, pytester dropped the modules when the run ended, but cryptography's compiled
# core keeps the classes it met first: every later call failed with "curve must be an
# EllipticCurve instance" (which tests met it hung on the order xdist gave them).
#
# netns and measuring, imported above for the same reason: the process's network namespace
# is kept in netns. A copy an inline run imported and pytester then dropped would leave
# the next run's copy not knowing where the process is (its measurement steps would think
# the worker was on the host's network, and its session end could not move it back).


@pytest.fixture(scope="session")
def changed_url() -> Iterator[str]:
    """URL of the local applications in their changed-UI variant."""
    with serve("changed") as server:
        yield server.url


@pytest.fixture
def cpu_burners() -> Iterator[None]:
    """Two processes that keep the machine's two cores busy while the test runs (a CI
    runner shared with other jobs): what a test of stopping or timing must hold under."""
    code = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end: pass\n"
    burners = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(2)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


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


@pytest.fixture
def remote_site(tmp_path: Path) -> Iterator[str]:
    """A site beyond this machine's loopback: a server in a network namespace of this
    test's own, behind a veth pair, at an address of the benchmarking range 198.18/15."""
    tag = f"{os.getpid() % 100000}"
    name, host_end, far_end = f"ngtest{tag}", f"ngt{tag}h", f"ngt{tag}r"
    subnet = os.getpid() % 250
    near, far = f"198.18.{subnet}.1", f"198.18.{subnet}.2"

    def run(*command: str) -> None:
        subprocess.run(command, check=True, capture_output=True)

    run("ip", "netns", "add", name)
    server = None
    try:
        run("ip", "link", "add", host_end, "type", "veth", "peer", "name", far_end, "netns", name)
        run("ip", "addr", "add", f"{near}/30", "dev", host_end)
        run("ip", "link", "set", host_end, "up")
        run("ip", "netns", "exec", name, "ip", "addr", "add", f"{far}/30", "dev", far_end)
        run("ip", "netns", "exec", name, "ip", "link", "set", far_end, "up")
        run("ip", "netns", "exec", name, "ip", "link", "set", "lo", "up")
        script = tmp_path / "remote_server.py"
        script.write_text(REMOTE_SERVER)
        server = subprocess.Popen(
            ["ip", "netns", "exec", name, sys.executable, str(script), far, str(BIG)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        yield f"http://{far}:8080"
    finally:
        if server is not None:
            server.kill()
            server.wait()
            if server.stdout is not None:
                server.stdout.close()
        subprocess.run(["ip", "link", "del", host_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


@pytest.fixture
def page_at(netgent_browser: Any, base_url: str) -> Any:
    """``page_at(path, wait_for="body")``: the local sites' page at ``path``, as synthesis
    observes it, once ``wait_for`` (a CSS selector) is on it."""
    from pytest_netgent.synthesis.observation import Observation, observe

    def go(path: str, wait_for: str = "body") -> Observation:
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        driver = netgent_browser.driver
        driver.get(base_url + path)
        WebDriverWait(driver, 10, 0.05).until(
            ec.presence_of_element_located(("css selector", wait_for))
        )
        return observe(driver)

    return go
