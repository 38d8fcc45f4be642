"""The trace viewer (``netgent show-trace``): what a user sees of a trace in the browser.

Each test writes a small trace zip, serves it with :func:`serve` and looks at the page in
headless Chromium: the events and the scrubber, the automaton's graph, screenshots and
DOM snapshots (whose scripts never run), the checks of a failing tick, the network
waterfall and the console, each following the selected event. A trace that cannot be
shown (cut short, not a trace, from a newer release, a member that expands beyond the
bound) is named with what to do.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError

import pytest

from pytest_netgent.errors import NetgentError
from pytest_netgent.replay import trace_file
from pytest_netgent.replay.trace_file import TraceError, read_trace
from pytest_netgent.studio import viewer
from pytest_netgent.studio.viewer import ViewerServer, main, serve

from .helpers import headless_chromium

# an 8×8 blue JPEG: what a trace's frames/NNNN.jpg hold
JPEG = base64.b64decode(
    "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4"
    "UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2Nj"
    "Y2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAAIAAgDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcI"
    "CQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRol"
    "JicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ip"
    "qrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAA"
    "AAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLR"
    "ChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaX"
    "mJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEA"
    "PwCpRRRX0Z5Z/9k="
)

# a DOM snapshot whose script, if it ran, would change its own text and reach for the viewer
SNAPSHOT = (
    "<!doctype html><html><head><title>Snapshot</title></head><body>"
    '<p id="p">snapshot text</p><script>'
    'document.getElementById("p").textContent = "script ran";'
    'document.title = "ran";'
    'try { parent.document.title = "pwned"; } catch (e) {}'
    "</script></body></html>"
)
SNAPSHOTS = [f"snapshots/{c * 40}.html" for c in "abcd"]
FRAMES = [f"frames/{i:04d}.jpg" for i in range(1, 6)]

BROWSER = pytest.mark.xdist_group(name="trace_viewer")
"""Browser tests share one worker, and so one Chromium."""


# ---------------------------------------------------------------------- traces


Event = dict[str, Any]


def check(state: str, matched: bool, *results: tuple[bool, str]) -> dict[str, Any]:
    return {"state": state, "matched": matched, "results": [list(r) for r in results]}


def tick(t: float, url: str, matched: list[str], *checks: dict[str, Any], **more: Any) -> Event:
    return {"t": t, "kind": "tick", "url": url, "matched": matched, "checks": list(checks), **more}


def action(t: float, state: str, what: str, pictures: tuple[int, ...]) -> Event:
    """An action with its pictures: frame, snapshot, after_frame and after_snapshot, each
    by its number in FRAMES or SNAPSHOTS (-1: none)."""
    event: Event = {"t": t, "kind": "action", "state": state, "action": what}
    keys = ["frame", "snapshot", "after_frame", "after_snapshot"]
    for key, number in zip(keys, pictures, strict=True):
        if number >= 0:
            event[key] = (FRAMES if key.endswith("frame") else SNAPSHOTS)[number]
    return event


URL = "http://127.0.0.1:8000/wiki/"
STATES = [
    {"name": "Home", "checks": ["url prefix '/wiki'", "element css '#q'"], "end": False,
     "actions": ["type css '#q' 'x'", "press Enter"]},
    {"name": "Results", "checks": ["element css '#results li'"], "end": False,
     "actions": ["click css '#results li a'"]},
    {"name": "Article", "checks": ["<b>h1</b>"], "actions": [], "end": True},
    {"name": "Login", "checks": ["element css '#user'"], "actions": [], "end": False},
]  # fmt: skip
"""The wiki search's automaton: Login is declared and never reached."""
NETWORK = [
    {"t": 0.4, "duration": 0.05, "method": "GET", "url": URL, "status": 200, "bytes": 1234},
    {"t": 0.92, "duration": 0.1, "method": "GET", "url": URL + "search?q=x", "status": 200},
    {"t": 1.21, "duration": 0.2, "method": "GET", "url": URL + "Article", "status": 404},
]
CONSOLE = [
    {"t": 0.7, "level": "warning", "text": "slow search"},
    {"t": 1.25, "level": "error", "text": "<img src=x> is missing"},
]
FAILURE = "no state matched for 1.0 s"


def wiki_events(failing: bool) -> list[Event]:
    """Home (0-5), Results (6-9, its tick folded three times), then Article and the end
    (10, 11) or a failed tick and the failure."""
    search, article = URL + "search?q=x", URL + "Article"
    events = [
        {"t": 0.0, "kind": "start", "detail": "wiki-search"},
        {"t": 0.42, "kind": "url", "url": URL},
        tick(0.5, URL, ["Home"],
             check("Home", True, (True, "url prefix '/wiki'"), (True, "element css '#q'")),
             check("Results", False, (False, "element css '#results li'")),
             title="Wiki", count=1),
        {"t": 0.51, "kind": "state", "state": "Home", "url": URL},
        action(0.52, "Home", "type css '#q' 'x'", (0, 0, 1, 1)),
        action(0.6, "Home", "press Enter", (2, 1, -1, -1)),
        tick(0.9, search, ["Results"],
             check("Home", False, (False, "url prefix '/wiki/'")),
             check("Results", True, (True, "element css '#results li'")),
             title="Results", count=3),
        {"t": 0.95, "kind": "state", "state": "Results", "url": search},
        action(1.0, "Results", "click css '#results li a'", (3, 2, 4, 3)),
        {"t": 1.2, "kind": "url", "url": article},
    ]  # fmt: skip
    if failing:
        failed = check("Article", False, (True, "url prefix '/wiki/'"), (False, "<b>h1</b>"))
        return [*events, tick(1.5, article, [], failed, title="Article"),
                {"t": 2.1, "kind": "failure", "detail": FAILURE}]  # fmt: skip
    return [*events, {"t": 1.3, "kind": "state", "state": "Article", "url": article},
            {"t": 1.4, "kind": "end", "state": "Article", "detail": "done"}]  # fmt: skip


def wiki_run(failing: bool = False) -> dict[str, Any]:
    """A run of a wiki search: Home, Results, then Article (or a failure before it)."""
    return {
        "workflow": "wiki-search",
        "started": "2025-01-01T10:00:00+00:00",
        "duration": 2.1 if failing else 1.4,
        "passed": not failing,
        "error": FAILURE if failing else "",
        "states": STATES,
        "path": ["Home", "Results"] if failing else ["Home", "Results", "Article"],
        "events": wiki_events(failing),
        "console": CONSOLE,
        "network": NETWORK,
        "llm": {"calls": 2, "tokens": 1234},
    }


def document(*runs: dict[str, Any], outcome: str = "passed", **fields: Any) -> dict[str, Any]:
    return {
        "format": "netgent-trace",
        "version": 1,
        "item": "tests/wiki.yaml::wiki-search",
        "outcome": outcome,
        "runs": list(runs),
        **fields,
    }


def write_trace(
    path: Path, doc: dict[str, Any] | None, files: dict[str, bytes] | None = None
) -> Path:
    """A trace zip at ``path``: ``doc`` as trace.json (none: no trace.json) and ``files``;
    by default the frames and snapshots :func:`wiki_run` names."""
    if files is None:
        files = {name: JPEG for name in FRAMES}
        files |= {name: SNAPSHOT.encode() for name in SNAPSHOTS}
    with zipfile.ZipFile(path, "w") as archive:
        if doc is not None:
            archive.writestr("trace.json", json.dumps(doc))
        for name, data in files.items():
            archive.writestr(name, data)
    return path


# ---------------------------------------------------------------------- HTTP and browser


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Straight to the viewer, whatever proxy the environment names."""


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    with OPENER.open(url, timeout=10) as response:
        return response.status, dict(response.headers), response.read()


def fetch_status(url: str) -> int:
    try:
        return fetch(url)[0]
    except HTTPError as error:
        with error:  # its response, closed
            return error.code


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Headless Chromium, shared by the module's browser tests."""
    with headless_chromium() as chrome:
        yield chrome


PRELUDE = "const $ = s => document.querySelector(s), $$ = s => [...document.querySelectorAll(s)];"


def js(driver: Any, expression: str, *args: Any) -> Any:
    """The value of a JavaScript ``expression`` in the page (``$``, ``$$``: one element, all)."""
    return driver.execute_script(f"{PRELUDE} return {expression}", *args)


def wait(driver: Any, expression: str, *args: Any) -> Any:
    """Wait until the JavaScript ``expression`` is truthy."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 10).until(lambda d: js(d, expression, *args))


@contextmanager
def shown(driver: Any, trace: Path) -> Iterator[ViewerServer]:
    """The viewer of ``trace``, open in ``driver`` once it has drawn the trace."""
    with serve(trace) as server:
        driver.get(server.url)
        wait(driver, "!$('#outcome').hidden")
        yield server


def scrub(driver: Any, index: int) -> None:
    """Move the scrubber to event ``index`` the way dragging it does (an input event)."""
    driver.execute_script(
        "const s = document.getElementById('scrubber'); s.value = String(arguments[0]);"
        "s.dispatchEvent(new Event('input', {bubbles: true}));",
        index,
    )


def selected(driver: Any) -> int:
    """The index of the selected event (exactly one is)."""
    found = js(driver, "$$('#events li.selected').map(li => Number(li.dataset.index))")
    assert len(found) == 1
    return int(found[0])


def src(driver: Any, selector: str) -> str:
    return str(js(driver, "$(arguments[0]).getAttribute('src') || ''", selector))


# ---------------------------------------------------------------------- the page


@BROWSER
def test_events_list_every_event_and_its_actions(driver: Any, tmp_path: Path) -> None:
    doc = document(wiki_run())
    with shown(driver, write_trace(tmp_path / "trace.zip", doc)):
        assert js(driver, "$$('#events li.event').length") == len(doc["runs"][0]["events"])
        actions = [e for e in doc["runs"][0]["events"] if e["kind"] == "action"]
        assert js(driver, "$$('li.event.action').length") == len(actions) == 3
        kinds = js(driver, "$$('#events li').map(li => li.className)")
        assert kinds[0].startswith("event kind-start") and "kind-tick" in kinds[2]
        assert "×3" in js(driver, "$$('#events li')[6].textContent")
        assert js(driver, "$('#item').textContent") == doc["item"]
        assert js(driver, "$('#outcome').textContent") == "passed"
        assert not js(driver, "document.body.classList.contains('failed')")
        assert js(driver, "$('#run').hidden")  # one run: no picker
        llm = js(driver, "$('#llm')")
        assert llm.is_displayed() and "2 calls" in llm.text and "1,234 tokens" in llm.text
        assert selected(driver) == 0


@BROWSER
def test_the_scrubber_selects_an_event_and_its_screenshots(driver: Any, tmp_path: Path) -> None:
    with shown(driver, write_trace(tmp_path / "trace.zip", document(wiki_run()))):
        assert js(driver, "$('#scrubber').max") == "11"
        assert not js(driver, "$('#frame').getAttribute('src')")
        scrub(driver, 4)  # an action: its screenshot before and after
        assert selected(driver) == 4
        assert src(driver, "#frame") == "files/frames/0001.jpg"
        assert src(driver, "#after-frame") == "files/frames/0002.jpg"
        assert js(driver, "!$('#after-figure').hidden")
        wait(driver, "$('#frame').complete")
        assert js(driver, "$('#frame').naturalWidth") == 8
        assert src(driver, "#snapshot") == "files/snapshots/" + "a" * 40 + ".html"

        scrub(driver, 8)
        assert selected(driver) == 8
        assert src(driver, "#frame") == "files/frames/0004.jpg"
        assert src(driver, "#snapshot") == "files/snapshots/" + "c" * 40 + ".html"

        scrub(driver, 6)  # a tick has no pictures: the latest ones before it are shown
        assert src(driver, "#frame") == "files/frames/0003.jpg"
        assert js(driver, "$('#after-figure').hidden")
        assert src(driver, "#snapshot") == "files/snapshots/" + "b" * 40 + ".html"
        assert "latest" in js(driver, "$('#frame-caption').textContent")

        js(driver, "$$('#events li')[9].click()")  # a click selects too
        assert selected(driver) == 9
        assert js(driver, "$('#scrubber').value") == "9"
        assert src(driver, "#frame") == "files/frames/0005.jpg"  # the last action's "after"


@BROWSER
def test_the_graph_draws_the_states_and_the_path(driver: Any, tmp_path: Path) -> None:
    doc = document(wiki_run())
    with shown(driver, write_trace(tmp_path / "trace.zip", doc)):
        nodes = js(
            driver,
            "$$('#graph .node').map(n => [n.dataset.state,"
            " n.classList.contains('visited'), n.classList.contains('end')])",
        )
        assert nodes == [
            ["Home", True, False],
            ["Results", True, False],
            ["Article", True, True],
            ["Login", False, False],
        ]
        edges = js(driver, "$$('#graph .edge.taken').map(e => e.dataset.from + '>' + e.dataset.to)")
        assert edges == ["Home>Results", "Results>Article"]
        current = "$$('#graph .node.current').map(n => n.dataset.state)"
        assert js(driver, current) == []  # the start: no state yet
        scrub(driver, 5)
        assert js(driver, current) == ["Home"]
        scrub(driver, 8)
        assert js(driver, current) == ["Results"]
        scrub(driver, 11)
        assert js(driver, current) == ["Article"]
        js(
            driver,
            "$('#graph .node[data-state=Results]')"
            ".dispatchEvent(new MouseEvent('click', {bubbles: true}))",
        )
        assert selected(driver) == 7  # a state's node selects the event it was reached


@BROWSER
def test_a_failing_trace_shows_its_failed_checks(driver: Any, tmp_path: Path) -> None:
    doc = document(wiki_run(failing=True), outcome="failed")
    with shown(driver, write_trace(tmp_path / "trace.zip", doc)):
        assert js(driver, "document.body.classList.contains('failed')")
        outcome = js(driver, "$('#outcome')")
        assert outcome.text.lower() == "failed" and "bad" in outcome.get_attribute("class")
        error = js(driver, "$('#run-error')")
        assert error.is_displayed() and error.text == "no state matched for 1.0 s"
        failure = js(driver, "$$('#events li.failed')")
        assert len(failure) == 1 and "kind-failure" in failure[0].get_attribute("class")
        assert selected(driver) == 11  # it opens on the failure

        rows = js(
            driver,
            "$$('#checks tbody tr').map(r => [r.className, r.cells[1].textContent])",
        )
        assert rows == [["check passed", "url prefix '/wiki/'"], ["check failed", "<b>h1</b>"]]
        assert js(driver, "$$('#checks b').length") == 0  # text
        red = js(driver, "getComputedStyle($('#checks tr.failed td')).color")
        assert red != js(driver, "getComputedStyle($('#checks tr.passed td')).color")

        scrub(driver, 3)  # the first tick's checks: one failed, Home matched
        rows = js(
            driver,
            "$$('#checks tbody tr').map(r => [r.classList.contains('failed'), r.dataset.state])",
        )
        assert rows == [[False, "Home"], [False, "Home"], [True, "Results"]]
        scrub(driver, 1)  # before any tick
        assert js(driver, "$$('#checks tbody tr').length") == 0


@BROWSER
def test_the_network_and_console_follow_the_scrubber(driver: Any, tmp_path: Path) -> None:
    with shown(driver, write_trace(tmp_path / "trace.zip", document(wiki_run()))):
        rows = "$$('#network .request')"
        assert js(driver, rows + ".length") == 3
        texts = js(driver, rows + ".map(r => r.textContent)")
        assert "GET" in texts[0] and "http://127.0.0.1:8000/wiki/" in texts[0] and "200" in texts[0]
        assert "404" in texts[2] and "bad" in js(driver, rows + "[2].className")
        bars = js(driver, rows + ".map(r => parseFloat(r.querySelector('.bar').style.left))")
        assert bars == sorted(bars) and 25 < bars[0] < 35  # 0.40 s of 1.4 s
        seen = rows + ".map(r => r.classList.contains('seen'))"
        console = "$$('#console li').map(li => li.textContent)"

        assert js(driver, seen) == [False, False, False]  # 0.0 s
        assert js(driver, console) == []
        scrub(driver, 1)  # 0.42 s
        assert js(driver, seen) == [True, False, False]
        scrub(driver, 6)  # 0.9 s
        assert js(driver, seen) == [True, False, False]
        assert js(driver, console) == ["0.70 sslow search"]
        scrub(driver, 10)  # 1.3 s
        assert js(driver, seen) == [True, True, True]
        assert js(driver, console)[1] == "1.25 s<img src=x> is missing"  # as text
        assert js(driver, "$$('#console img').length") == 0
        scrub(driver, 2)
        wait(driver, "Number(getComputedStyle($$('#network .request')[2]).opacity) < 1")  # dim


@BROWSER
def test_a_snapshots_scripts_never_run(driver: Any, tmp_path: Path) -> None:
    with shown(driver, write_trace(tmp_path / "trace.zip", document(wiki_run()))) as server:
        url = server.url + "files/" + SNAPSHOTS[0]
        status, headers, body = fetch(url)
        assert status == 200 and body == SNAPSHOT.encode()
        assert headers["Content-Security-Policy"] == "sandbox"
        assert headers["Content-Type"].startswith("text/html")

        scrub(driver, 4)
        title = js(driver, "document.title")
        assert js(driver, "$('#snapshot').hasAttribute('sandbox')")
        wait(driver, "$('#snapshot').getAttribute('src')")
        driver.switch_to.frame(driver.find_element("id", "snapshot"))
        try:
            wait(driver, "document.readyState === 'complete' && document.getElementById('p')")
            assert js(driver, "document.getElementById('p').textContent") == "snapshot text"
            assert js(driver, "document.title") == "Snapshot"
        finally:
            driver.switch_to.default_content()
        assert js(driver, "document.title") == title != "pwned"

        driver.get(url)  # opened on its own, the header alone keeps its script from running
        assert js(driver, "document.getElementById('p').textContent") == "snapshot text"


@BROWSER
def test_several_runs_have_a_picker(driver: Any, tmp_path: Path) -> None:
    second = wiki_run(failing=True) | {"workflow": "wiki-retry", "llm": {"calls": 0, "tokens": 0}}
    doc = document(wiki_run(), second, outcome="failed")
    with shown(driver, write_trace(tmp_path / "trace.zip", doc)):
        picker = js(driver, "$('#run')")
        assert picker.is_displayed()
        options = js(driver, "$$('#run option').map(o => o.textContent)")
        assert options[0].startswith("1. wiki-search (passed")
        assert options[1].startswith("2. wiki-retry (failed")
        assert js(driver, "$$('#events li.failed').length") == 0
        js(driver, "($('#run').selectedIndex = 1) && $('#run').dispatchEvent(new Event('change'))")
        assert js(driver, "$$('#events li.failed').length") == 1
        assert js(driver, "$('#llm').hidden")  # none in this run
        assert js(driver, "$$('#graph .node.visited').length") == 2


@BROWSER
def test_an_older_partial_trace_is_shown(driver: Any, tmp_path: Path) -> None:
    events = [{"t": 0, "kind": "start"}, {"kind": "action", "action": "x"}, {"kind": "end"}]
    doc = {"format": "netgent-trace", "version": 1, "runs": [{"workflow": "w", "events": events}]}
    with shown(driver, write_trace(tmp_path / "trace.zip", doc, files={})):
        assert js(driver, "$$('li.event.action').length") == 1
        assert "no states" in js(driver, "$('#graph').textContent")
        assert "No requests" in js(driver, "$('#network').textContent")
        scrub(driver, 2)
        assert selected(driver) == 2
        assert js(driver, "$('#frame').getAttribute('src')") is None
        assert js(driver, "$('#no-frame').hidden") is False


# ---------------------------------------------------------------------- the server


def test_the_server_serves_the_page_the_document_and_members_only(tmp_path: Path) -> None:
    doc = document(wiki_run())
    with serve(write_trace(tmp_path / "trace.zip", doc)) as server:
        assert server.url.startswith("http://localhost:") and server.url.endswith("/")
        status, headers, body = fetch(server.url)
        assert status == 200 and b'id="scrubber"' in body
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        own = body.replace(b"http://www.w3.org/2000/svg", b"")  # the SVG name space
        assert b"https://" not in own and b"http://" not in own  # nothing from the internet
        status, headers, body = fetch(server.url + "trace.json")
        assert json.loads(body) == doc and headers["Content-Type"] == "application/json"
        status, headers, body = fetch(server.url + "files/" + FRAMES[0])
        assert body == JPEG and headers["Content-Type"] == "image/jpeg"
        for path in ["nothing", "files/frames/9999.jpg", "files/%2e%2e/trace.json", "files/"]:
            assert fetch_status(server.url + path) == 404, path
    with pytest.raises(URLError):  # closed: the port is free again
        fetch(server.url)


def test_member_names_stay_inside_the_trace(tmp_path: Path) -> None:
    trace = read_trace(write_trace(tmp_path / "trace.zip", document(wiki_run())))
    assert trace.member(FRAMES[0]) == JPEG
    assert trace.document["item"] == "tests/wiki.yaml::wiki-search"
    for name in ["../trace.json", "/etc/passwd", "frames/../trace.json", "frames/none.jpg"]:
        with pytest.raises(TraceError):
            trace.member(name)


def test_a_port_in_use_is_named(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "trace.zip", document(wiki_run()))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(TraceError, match=rf"port {port} is in use.*--port 0"):
            serve(trace, port=port)


def test_main_serves_until_ctrl_c(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_trace(tmp_path / "trace.zip", document(wiki_run()))
    seen: list[str] = []

    def ctrl_c(server: ViewerServer) -> None:
        seen.append(server.url)
        assert json.loads(fetch(server.url + "trace.json")[2])["format"] == "netgent-trace"
        raise KeyboardInterrupt

    monkeypatch.setattr(viewer, "_wait_until_interrupted", ctrl_c)
    assert main([str(trace), "--port", "0"]) == 0
    out = capsys.readouterr().out
    assert out == f"netgent show-trace: serving {trace} at {seen[0]} (Ctrl-C to stop)\n"
    with pytest.raises(URLError):
        fetch(seen[0])


# ---------------------------------------------------------------------- bad input


def bad_traces(folder: Path) -> dict[str, tuple[Path, str]]:
    """Traces that cannot be shown, each with what its message says."""
    whole = write_trace(folder / "whole.zip", document(wiki_run())).read_bytes()
    truncated = folder / "truncated.zip"
    truncated.write_bytes(whole[: len(whole) // 2])
    text = folder / "notes.zip"
    text.write_text("not a zip at all\n")
    damaged = "is damaged or truncated: write it again with --netgent-trace=on"
    return {
        "missing": (folder / "nothing.zip", "nothing.zip does not exist"),
        "folder": (folder, "is a folder, not a trace file"),
        "truncated": (truncated, "truncated.zip " + damaged),
        "not a zip": (text, "notes.zip " + damaged),
        "no trace.json": (
            write_trace(folder / "bare.zip", None),
            "bare.zip holds no trace.json: it is not a pytest-netgent trace",
        ),
        "foreign": (
            write_trace(folder / "foreign.zip", {"log": {"entries": []}}, files={}),
            "foreign.zip is not a pytest-netgent trace",
        ),
        "not an object": (
            write_trace(folder / "list.zip", [1, 2], files={}),  # type: ignore[arg-type]
            "list.zip is not a pytest-netgent trace",
        ),
        "bad version": (
            write_trace(folder / "v.zip", document(version="1"), files={}),
            "v.zip is not a pytest-netgent trace (its version '1' is not a number)",
        ),
        "newer": (
            write_trace(folder / "new.zip", document(version=99), files={}),
            "new.zip was written by a newer pytest-netgent (version 99); upgrade to view it",
        ),
        "bad json": (
            write_trace(folder / "json.zip", None, files={"trace.json": b"{not json"}),
            "json.zip: its trace.json cannot be read",
        ),
    }


BAD = ["missing", "folder", "truncated", "not a zip", "no trace.json", "foreign",
       "not an object", "bad version", "newer", "bad json"]  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_a_trace_that_cannot_be_shown_says_why(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, message = bad_traces(tmp_path)[case]
    with pytest.raises(TraceError) as info:
        read_trace(path)
    assert isinstance(info.value, NetgentError)
    assert message in str(info.value)
    with pytest.raises(TraceError) as served:
        serve(path)
    assert message in str(served.value)
    assert main([str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("netgent show-trace: ") and message in captured.err
    assert captured.err.count("\n") == 1


def test_a_bad_port_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = write_trace(tmp_path / "trace.zip", document(wiki_run()))
    assert main([str(trace), "--port", "70000"]) == 2
    assert "--port 70000 is not a port" in capsys.readouterr().err
    assert main([]) == 2  # no PATH: argparse's usage
    assert "PATH" in capsys.readouterr().err


# ---------------------------------------------------------------------- members that expand


def padded_trace(path: Path, member: str, size: int) -> Path:
    """A trace whose ``member`` (trace.json: a valid document, padded) expands to ``size``
    bytes of mostly spaces, written a block at a time: deflated, it is a thousand times
    smaller, and no more than a block is ever held here."""
    head = json.dumps(document(wiki_run())).encode() if member == "trace.json" else b""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        if member != "trace.json":
            archive.writestr("trace.json", json.dumps(document(wiki_run())))
        with archive.open(member, "w", force_zip64=True) as out:
            out.write(head)
            left = size - len(head)
            while left > 0:
                out.write(b" " * min(left, 1 << 20))
                left -= 1 << 20
    return path


AS_LIMIT = 512 * 2**20
"""The address space the show-trace process below may use: twice a member just over
MEMBER_LIMIT does not fit, so reading one whole would end in MemoryError."""

SHOW_TRACE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from pytest_netgent.cli import main
sys.exit(main(["show-trace", sys.argv[1]]))
"""


def test_a_trace_json_that_expands_beyond_the_bound_is_refused_unread(tmp_path: Path) -> None:
    """A trace.json just over MEMBER_LIMIT (a quarter of a MiB on disk) is refused from its
    header, in a process whose memory could not hold it: one line, exit 2, at once."""
    size = 256 * 2**20 + 1  # trace_file.MEMBER_LIMIT, and a byte
    trace = padded_trace(tmp_path / "bomb.zip", "trace.json", size)
    assert trace.stat().st_size < size // 500
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SHOW_TRACE.format(limit=AS_LIMIT), str(trace)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert time.monotonic() - started < 30
    assert (done.returncode, done.stdout) == (2, ""), done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("netgent show-trace: bomb.zip: its member trace.json expands")
    assert f"{size:,} bytes" in done.stderr and "more than the 256 MiB" in done.stderr
    assert "write it again with --netgent-trace=on" in done.stderr


@pytest.fixture
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> int:
    """MEMBER_LIMIT lowered to 64 kB (and ARCHIVE_LIMIT to 256 kB), to test the bounds
    with small files."""
    monkeypatch.setattr(trace_file, "MEMBER_LIMIT", 64 * 1024, raising=False)
    monkeypatch.setattr(trace_file, "ARCHIVE_LIMIT", 256 * 1024, raising=False)
    return 64 * 1024


def test_any_member_over_the_bound_refuses_the_trace_naming_it(
    small_bounds: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = padded_trace(tmp_path / "trace.zip", "frames/0001.jpg", small_bounds + 1)
    with pytest.raises(TraceError, match=r"its member frames/0001\.jpg expands to 65,537 bytes"):
        read_trace(trace)
    assert main([str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "more than the 65,536 bytes a trace member may hold" in err
    whole = padded_trace(tmp_path / "whole.zip", "frames/0001.jpg", small_bounds)
    assert len(read_trace(whole).member("frames/0001.jpg")) == small_bounds  # at the bound


def test_members_over_the_bound_in_all_refuse_the_trace(small_bounds: int, tmp_path: Path) -> None:
    files = {f"snapshots/{n:040d}.html": b" " * (small_bounds - 1) for n in range(4)}
    trace = write_trace(tmp_path / "trace.zip", document(wiki_run()), files=files)
    in_all = r"its members expand to .* in all, more than the 262,144 bytes"
    with pytest.raises(TraceError, match=in_all):
        read_trace(trace)


def test_a_header_that_understates_a_member_reads_no_more_than_it_says(tmp_path: Path) -> None:
    """A central directory claiming trace.json expands to 10 bytes: the read stops there,
    and the member is named damaged (its CRC does not match), nothing more is read."""
    trace = write_trace(tmp_path / "trace.zip", document(wiki_run()), files={})
    data = bytearray(trace.read_bytes())
    entry = data.rindex(b"PK\x01\x02")  # the central directory's entry of trace.json
    data[entry + 24 : entry + 28] = struct.pack("<I", 10)  # its uncompressed size
    trace.write_bytes(bytes(data))
    assert zipfile.ZipFile(trace).getinfo("trace.json").file_size == 10
    with pytest.raises(TraceError, match="is damaged or truncated: write it again"):
        read_trace(trace)
