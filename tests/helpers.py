"""Helpers for tests: a pytester project of workflow files; check, action and state
builders; workflows several modules share; readers of what a run writes (pcaps, CSV); the
browsers and processes a test starts, polls or looks for."""

from __future__ import annotations

import collections
import csv
import json
import os
import signal
import socket
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import dpkt
import pytest

from pytest_netgent.replay.runner import find_workflow
from pytest_netgent.workflow import store
from pytest_netgent.workflow.automaton import Automaton, State

BIG = 1_000_000  # bytes of the big page: 8 Mbit, four seconds at 2 Mbit/s

REMOTE_SERVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BODY = b"<html><body><pre>" + b"x" * int(sys.argv[2]) + b"</pre><p id=done>done</p></body></html>"
class Big(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer((sys.argv[1], 8080), Big)
print("ready", flush=True)
server.serve_forever()
"""
"""A site's server: ``python - ADDRESS BYTES`` serves a page of BYTES bytes ending in
``<p id=done>`` on port 8080 of ADDRESS."""


# Plugins of the environment that only slow each pytester run down.
QUIET = ("-p", "no:seleniumbase", "-p", "no:langsmith_plugin", "-p", "no:benchmark")


class Project:
    """A small pytest project of workflow files in a pytester directory."""

    def __init__(self, pytester: pytest.Pytester, base_url: str) -> None:
        self.pytester = pytester
        self.base_url = base_url

    @property
    def path(self) -> Path:
        return self.pytester.path

    def workflow(self, name: str, text: str) -> Path:
        """Write ``<name>.netgent.yaml``."""
        path = self.path / f"{name}.netgent.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        return path

    def states(
        self, file: Path, workflow: str, states: dict[str, tuple[list[Any], list[Any]]]
    ) -> Path:
        """Cache compiled ``states`` ({name: (checks, actions)}) with current hashes."""
        loaded = find_workflow(file, workflow).workflow
        compiled = []
        for spec in loaded.states:
            checks, actions = states[spec.name]
            compiled.append(
                State(
                    name=spec.name,
                    checks=checks,
                    actions=actions,
                    end_state=spec.end,
                    prompt_hash=spec.prompt_hash(),
                )
            )
        doc = Automaton(workflow=workflow, prompt_hash=loaded.prompt_hash(), states=compiled)
        path = store.cache_path(file, workflow)
        store.write(path, doc)
        return path

    def raw_states(self, file: Path, workflow: str, data: Any) -> Path:
        """Write any JSON as the cached states (imported or hand-written files)."""
        path = store.cache_path(file, workflow)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
        return path

    def _marked(self, args: tuple[str, ...]) -> None:
        """A test that starts UC mode is marked ``uc``: the dependency matrix, which has no
        SeleniumBase, leaves those out by the mark."""
        if "--netgent-uc" in args:
            node = self.pytester._request.node  # the test that runs this
            assert node.get_closest_marker("uc"), "mark a test that starts UC mode @pytest.mark.uc"

    def run(self, *args: str, base_url: str | None = None) -> pytest.RunResult:
        """pytest in-process, with this project's base URL."""
        self._marked(args)
        url = self.base_url if base_url is None else base_url
        return self.pytester.runpytest(*QUIET, f"--netgent-base-url={url}", *args)

    def run_subprocess(self, *args: str) -> pytest.RunResult:
        """pytest in a subprocess (for xdist)."""
        self._marked(args)
        return self.pytester.runpytest_subprocess(
            *QUIET, f"--netgent-base-url={self.base_url}", *args
        )


def css(selector: str) -> dict[str, str]:
    """``by``/``selector`` params for a CSS selector."""
    return {"by": "css selector", "selector": selector}


def element(selector: str, **extra: Any) -> dict[str, Any]:
    """An element check."""
    return {"type": "element", "params": {**css(selector), **extra}}


def url_is(url: str, match: str = "exact") -> dict[str, Any]:
    """A url check."""
    return {"type": "url", "params": {"url": url, "match": match}}


def text(words: str) -> dict[str, Any]:
    """A text check."""
    return {"type": "text", "params": {"text": words}}


def action(kind: str, **params: Any) -> dict[str, Any]:
    """An action of type ``kind`` with ``params``."""
    return {"type": kind, "params": params}


def state(name: str, checks: list[Any], actions: list[Any] = (), **extra: Any) -> State:  # type: ignore[assignment]
    """A compiled state: its checks, its actions and any other field in ``extra``."""
    return State.model_validate({"name": name, "checks": checks, "actions": list(actions), **extra})


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SEARCH_WORKFLOW = """
name: search
start_url: "{base_url}/wiki/"
vars: {query: QUIC}
states:
  - name: Home
    triggers: [The search box is visible]
    actions:
      - Type {query} into the search box
      - Press Enter
  - name: Results
    triggers: [A result is shown]
    actions: [Click the first result]
  - name: Article
    triggers: [An article heading is shown]
    end: Article opened
"""

SEARCH_STATES: dict[str, tuple[list[Any], list[Any]]] = {
    "Home": (
        [url_is("{base_url}/wiki/"), element("#search-input")],
        [
            {"type": "type", "params": {**css("#search-input"), "text": "{query}"}},
            {"type": "press_key", "params": {"key": "Enter"}},
        ],
    ),
    "Results": (
        [element("#results li.result a")],
        [{"type": "click", "params": css("#results li.result a")}],
    ),
    "Article": ([element("h1#firstHeading")], []),
}


HUNG = """
name: hung
start_url: "{base_url}/wiki/"
timeout: 6
states:
  - name: Home
    triggers: ["'Featured' is shown"]
    end: Home
"""
"""A workflow of one state that holds on the wiki's home page, within a timeout of 6 s."""


def good(project: Project) -> None:
    """A workflow that passes (its start state holds on the blank page), to show that
    the session goes on beside a bad file."""
    path = project.workflow("good", "name: good\nstates:\n  - {name: Start, end: done}\n")
    project.raw_states(
        path,
        "good",
        [
            {
                "name": "Start",
                "checks": [{"type": "url", "params": {"url": "chrome://new-tab-page/"}}],
                "actions": [],
                "end_state": "done",
            }
        ],
    )


_KILL = """
import os
import pytest

def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                found.append(int(entry))
    return found

@pytest.fixture(autouse=True)
def kill_during_the_victim(request, monkeypatch):
    if "victim" in request.node.name:
        from pytest_netgent.browser import actions

        driver = request.getfixturevalue("netgent_browser_pool").start()
        chromedriver = driver.service.process.pid
        wait = actions.Actions.wait

        def killing_wait(self, params):
            # as the victim's first wait starts, whatever the machine's load made of the
            # steps before it
            monkeypatch.setattr(actions.Actions, "wait", wait)
            for pid in [chromedriver] if KILL == "driver" else children(chromedriver):
                os.kill(pid, SIGNAL)
            return wait(self, params)

        monkeypatch.setattr(actions.Actions, "wait", killing_wait)
    yield
"""


def kill_conftest(what: str, sig: signal.Signals = signal.SIGKILL) -> str:
    """A conftest.py that sends ``sig``, as the first wait of each item named like
    ``victim`` starts, to its worker's ``browser`` (Chromium's processes) or its
    ``driver`` (ChromeDriver)."""
    return f"KILL = {what!r}\nSIGNAL = {int(sig)}\n" + _KILL


@dataclass
class Packet:
    time: float
    proto: str
    sport: int
    dport: int
    flags: int = 0
    payload: bytes = b""
    raw: bytes = b""
    src: str = ""
    dst: str = ""


@dataclass
class Pcap:
    packets: list[Packet] = field(default_factory=list)

    @property
    def first(self) -> float:
        return self.packets[0].time

    @property
    def last(self) -> float:
        return self.packets[-1].time

    def flows(self, proto: str) -> dict[frozenset[int], list[Packet]]:
        out: dict[frozenset[int], list[Packet]] = collections.defaultdict(list)
        for p in self.packets:
            if p.proto == proto:
                out[frozenset((p.sport, p.dport))].append(p)
        return out

    def requests(self) -> list[str]:
        """The request lines of the HTTP requests in the capture."""
        lines = []
        for p in self.packets:
            if p.proto == "tcp" and p.payload[:4] in (b"GET ", b"POST", b"HEAD"):
                lines.append(p.payload.split(b"\r\n", 1)[0].decode("latin-1"))
        return lines


def iso(epoch: float) -> str:
    """``epoch`` as an ISO 8601 time of UTC, to the millisecond (as HAR and timelines write it)."""
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def read_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(path.read_text(encoding="utf-8").splitlines()))


def read_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def read_pcap(path: Path) -> Pcap:
    pcap = Pcap()
    with path.open("rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if not isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)):
                continue
            l4 = ip.data
            ends = (dpkt.utils.inet_to_str(ip.src), dpkt.utils.inet_to_str(ip.dst))
            if isinstance(l4, dpkt.tcp.TCP):
                pcap.packets.append(
                    Packet(
                        ts, "tcp", l4.sport, l4.dport, l4.flags, bytes(l4.data), bytes(buf), *ends
                    )
                )
            elif isinstance(l4, dpkt.udp.UDP):
                pcap.packets.append(
                    Packet(ts, "udp", l4.sport, l4.dport, 0, bytes(l4.data), bytes(buf), *ends)
                )
    return pcap


def leftovers(tmp: Path) -> tuple[list[str], list[int]]:
    """What browsers left in the temporary folder ``tmp`` (profiles, sockets, scratch
    folders) and the processes still running with their files there (a renderer names
    no folder on its command line, but its environment's TMPDIR is there)."""
    folders = sorted(p.name for p in tmp.iterdir())
    mine = str(tmp).encode()
    running = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                seen = Path(f"/proc/{entry}/cmdline").read_bytes()
                seen += Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if b"--user-data-dir=" + mine in seen or b"TMPDIR=" + mine in seen:
                running.append(int(entry))
    return folders, running


def away_workflow(project: Project, site_url: str) -> str:
    """A workflow whose start page's own script sends the browser to the same server
    under another name (a host the workflow does not allow); the URL it tries."""
    elsewhere = site_url.replace("127.0.0.1", "localhost") + "/landing"
    path = project.workflow(
        "away",
        f"""
        name: away
        start_url: "{site_url}/away?to={elsewhere}"
        states:
          - name: Landing
            triggers: [The page says landed]
            end: Landing
        """,
    )
    project.raw_states(
        path,
        "away",
        [{"name": "Landing", "checks": [{"type": "text", "params": {"text": "landed"}}],
          "end_state": "Landing"}],
    )  # fmt: skip
    return elsewhere


def until(driver: Any, script: str, seconds: float = 30.0) -> Any:
    """The first truthy value of ``script`` in ``driver``'s page, polled for ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"never true within {seconds:g}s: {script}\n{driver.page_source[:3000]}")


@contextmanager
def headless_chromium(size: tuple[int, int] = (1400, 1000)) -> Iterator[Any]:
    """Debian's Chromium, headless, as a user's browser opening a page the product
    serves (nothing of it reaches the internet)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", "--disable-sync"]:  # fmt: skip
        options.add_argument(arg)
    options.binary_location = "/usr/bin/chromium"
    chrome = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    chrome.set_window_size(*size)
    try:
        yield chrome
    finally:
        chrome.quit()


def embedded_call(project: Project) -> None:
    """A workflow that tracks WebRTC on a page framing a video call from the other host
    name (a process of its own), starts the call and collects NetGent's summary into
    ``meeting.json``; the ini gives the call a fake camera, microphone and loopback ICE."""
    path = project.workflow(
        "call",
        """
        name: call
        start_url: "{base_url}/components/embed-call"
        states:
          - name: In call
            triggers: [The leave button is shown]
            actions: [Stay a few seconds, Collect the WebRTC metrics]
            end: Called
          - name: Page
            triggers: [The start button is shown]
            actions: [Track WebRTC, Start the call]
        """,
    )
    out = {"out_path": "meeting.json"}
    project.states(
        path,
        "call",
        {
            "In call": (
                [element("#call >> #leave-button")],
                [
                    {"type": "wait", "params": {"seconds": 4}},
                    {"type": "collect_webrtc_metrics", "params": out},
                ],
            ),
            "Page": (
                [element("#start")],
                [
                    {"type": "start_webrtc_tracking", "params": {}},
                    {"type": "click", "params": css("#start")},
                ],
            ),
        },
    )
    project.pytester.makeini(  # the call's camera, microphone and loopback ICE
        "[pytest]\nnetgent_state_timeout = 5\nnetgent_browser_args =\n"
        "    --use-fake-device-for-media-stream\n    --use-fake-ui-for-media-stream\n"
        "    --allow-loopback-in-peer-connection\n"
    )


def embedded_call_totals(project: Project) -> dict[str, Any]:
    """The tab's WebRTC totals in :func:`embedded_call`'s ``meeting.json``."""
    (meeting,) = (project.path / "netgent-artifacts").glob("*/meeting.json")
    (page,) = json.loads(meeting.read_text("utf-8"))["pages"]
    return dict(page["webrtc"])
