"""``--netgent-live PORT``: every worker's browser live on a page served on 127.0.0.1.

pytest runs the project in a subprocess with the live page on a free port; headless
Chromium opens the page while the items run and sees what a user would: a card per
browser with its item, its state and a frame that changes as the browser works.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from .helpers import (
    QUIET,
    SEARCH_STATES,
    SEARCH_WORKFLOW,
    Project,
    free_port,
    headless_chromium,
    until,
)

pytestmark = pytest.mark.xdist_group("live")

# the Home state waits (the page keeps its spinner going) before the search is typed
SLOW = {
    **SEARCH_STATES,
    "Home": (
        SEARCH_STATES["Home"][0],
        [{"type": "wait", "params": {"seconds": 4.0}}, *SEARCH_STATES["Home"][1]],
    ),
}
SECRET_SEARCH = SEARCH_WORKFLOW.replace("vars: {query: QUIC}", "secrets: {query: NETGENT_LIVE_Q}")


@pytest.fixture(autouse=True)
def own_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary folder for the inner runs alone (their session folders are looked for
    there, and other tests' checks of /tmp never see them)."""
    path = Path(tempfile.mkdtemp(prefix="ng-live-"))
    monkeypatch.setenv("TMPDIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def start(project: Project, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "pytest", *QUIET, "-p", "no:cacheprovider", "-q"]
    command += [f"--netgent-base-url={project.base_url}", *args]
    return subprocess.Popen(
        command,
        cwd=project.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )


@contextmanager
def running(proc: subprocess.Popen[str]) -> Iterator[subprocess.Popen[str]]:
    """``proc``, killed if the test leaves before it has ended."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def get_json(url: str) -> dict[str, Any]:
    with urlopen(url, timeout=5) as answer:
        return dict(json.load(answer))


def wait_for_page(url: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[0]
        try:
            get_json(url + "live.json")
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the live page never answered")


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    """Headless Chromium, the user looking at the live page."""
    with headless_chromium() as chrome:
        yield chrome


CARDS = """
return [...document.querySelectorAll('.card')].map(c => ({
  stream: c.dataset.stream,
  item: c.querySelector('.item').textContent,
  meta: c.querySelector('.meta').textContent,
  state: c.querySelector('.meta').dataset.state,
  doing: c.querySelector('.doing').textContent,
  frame: (c.querySelector('img') || {dataset: {}}).dataset.frame || '',
  painted: Boolean(c.querySelector('img') && c.querySelector('img').naturalWidth > 0),
  why: (c.querySelector('.why') || {}).textContent || '',
}));
"""


def cards(driver: Any) -> dict[str, dict[str, Any]]:
    return {c["stream"]: c for c in driver.execute_script(CARDS)}


def test_the_live_page_shows_each_workers_browser_its_item_state_and_a_changing_frame(
    project: Project, driver: Any, own_tmp: Path
) -> None:
    for name in ("one", "two"):
        file = project.workflow(name, SEARCH_WORKFLOW.replace("name: search", f"name: {name}"))
        project.states(file, name, SLOW)
    # each item's teardown waits a little: the page is looked at before the session ends
    project.pytester.makeconftest(
        "import time\n\ndef pytest_runtest_teardown(item):\n    time.sleep(3)\n"
    )
    port = free_port()
    proc = start(project, "-n", "2", f"--netgent-live={port}")
    url = f"http://127.0.0.1:{port}/"
    with running(proc):
        wait_for_page(url, proc)
        driver.get(url)
        assert len(list(own_tmp.glob("netgent-status-*"))) == 1
        until(driver, "return document.querySelectorAll('.card img').length == 2")
        until(driver, "return [...document.querySelectorAll('.meta')]"
                      ".every(m => m.dataset.state == 'Home')")  # fmt: skip
        seen = cards(driver)
        assert set(seen) == {"gw0", "gw1"}
        items = sorted(c["item"] for c in seen.values())
        assert items[0].endswith("one.netgent.yaml::one"), seen
        assert items[1].endswith("two.netgent.yaml::two"), seen
        assert all(c["painted"] for c in seen.values()), seen
        assert {c["state"] for c in seen.values()} == {"Home"}, seen
        first = {name: c["frame"] for name, c in seen.items()}
        # as the search is typed and its results open, each browser's picture changes
        # the state's event comes first, its end a moment later: both shown in time
        ended = (
            "return [...document.querySelectorAll('.card')].every(c => "
            "c.querySelector('.meta').dataset.state == 'Article' && "
            "c.querySelector('.doing').textContent.includes(\"ended in state 'Article'\"))"
        )
        until(driver, ended)
        later = cards(driver)
        assert all("ended in state 'Article'" in c["doing"] for c in later.values()), later
        changed = f"const first = {json.dumps(first)};" + (
            "return [...document.querySelectorAll('.card')].every(c => "
            "c.querySelector('img').dataset.frame != first[c.dataset.stream])"
        )
        until(driver, changed, seconds=10)
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, output
    assert f"netgent live: {url}" in output
    # the session has ended: the page says so, and nothing listens on the port
    until(driver, "return document.getElementById('summary').textContent.includes('ended')")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    assert not list(own_tmp.glob("netgent-status-*"))


def test_a_run_that_types_secrets_shows_its_state_but_never_a_frame(
    project: Project, driver: Any
) -> None:
    file = project.workflow("search", SECRET_SEARCH)
    project.states(file, "search", SLOW)
    port = free_port()
    proc = start(project, f"--netgent-live={port}", env={"NETGENT_LIVE_Q": "QUIC"})
    url = f"http://127.0.0.1:{port}/"
    with running(proc):
        wait_for_page(url, proc)
        driver.get(url)
        until(driver, "return document.querySelector('.card .why')")
        until(driver, "return document.querySelector('.meta').dataset.state == 'Home'")
        shown = cards(driver)["main"]
        assert "this run types secrets" in shown["why"], shown
        assert shown["state"] == "Home" and not shown["frame"], shown
        frame = Request(url + "frames/main.jpg")
        with pytest.raises(HTTPError) as missing:
            urlopen(frame, timeout=5)
        missing.value.close()
        assert missing.value.code == 404
        snapshot = json.dumps(get_json(url + "live.json"))
        assert "QUIC" not in snapshot
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, output


def test_a_worker_that_dies_is_shown_down_and_the_others_go_on(
    project: Project, driver: Any
) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SLOW)
    project.pytester.makepyfile(
        test_crash="""
        import os, time

        def test_crash():
            time.sleep(1.5)
            os._exit(3)
        """
    )
    port = free_port()
    proc = start(project, "-n", "2", f"--netgent-live={port}", "--max-worker-restart=0")
    url = f"http://127.0.0.1:{port}/"
    with running(proc):
        wait_for_page(url, proc)
        driver.get(url)
        until(driver, "return document.querySelector('.card.down')")
        down = [c for c in cards(driver).values() if "worker went down" in c["doing"]]
        assert len(down) == 1, cards(driver)
        output = proc.communicate(timeout=120)[0]
    assert "1 passed" in output and "crashed" in output, output


def test_a_port_in_use_is_a_usage_error_naming_it_and_nothing_runs(project: Project) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = project.run_subprocess(f"--netgent-live={port}")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        [f"*--netgent-live {port}: port {port} on 127.0.0.1 is in use; give another port*"]
    )
    assert "passed" not in result.stdout.str()


@pytest.mark.parametrize("value", ["sometimes", "70000", "-1"])
def test_a_bad_value_is_a_usage_error_naming_the_option(project: Project, value: str) -> None:
    result = project.run(f"--netgent-live={value}")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--netgent-live expects auto, off or a port (0 to 65535*"])


def test_the_page_answers_only_this_machine_by_name(tmp_path: Path) -> None:
    from pytest_netgent.studio.live import LiveServer

    server = LiveServer(tmp_path, 0)
    try:
        answer = urlopen(server.url + "live.json", timeout=5)
        with answer:
            assert json.load(answer) == {"now": pytest.approx(time.time(), abs=30),
                                         "workers": [], "streams": []}  # fmt: skip
        rebound = Request(server.url + "live.json", headers={"Host": f"evil.test:{server.port}"})
        with pytest.raises(HTTPError) as refused:
            urlopen(rebound, timeout=5)
        refused.value.close()
        assert refused.value.code == 403
        for path in ("frames/..%2f..%2fetc%2fpasswd.jpg", "frames/x.png", "nothing"):
            with pytest.raises(HTTPError) as missing:
                urlopen(server.url + path, timeout=5)
            missing.value.close()
            assert missing.value.code == 404
    finally:
        server.close()


def test_each_scenario_member_has_its_own_card(pytester: pytest.Pytester, driver: Any) -> None:
    from .test_scenario import CONFTEST, ROOT

    shutil.copytree(ROOT / "example_suites" / "wiki", pytester.path / "wiki")
    pytester.makeconftest(CONFTEST)
    (pytester.path / "a_pair.netgent.yaml").write_text(PAIR, encoding="utf-8")
    # the item after the pair holds the run until the page has been looked at, so no
    # later item's card can appear beside the members' while the test reads them
    pytester.makepyfile(test_b_hold=HOLD)
    port = free_port()
    command = [sys.executable, "-m", "pytest", *QUIET, "-p", "no:cacheprovider", "-q"]
    proc = subprocess.Popen(
        [*command, "-p", "no:randomly", f"--netgent-live={port}"],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
    )
    url = f"http://127.0.0.1:{port}/"
    with running(proc):
        wait_for_page(url, proc)
        driver.get(url)
        until(driver, "return document.querySelectorAll('.card img').length == 2", 60)
        until(driver, "return [...document.querySelectorAll('.elapsed')]"
                      ".every(e => e.textContent.includes('passed'))", 60)  # fmt: skip
        seen = cards(driver)
        assert set(seen) == {"main.searcher", "main.reader"}, seen
        assert "member searcher · workflow wiki-search" in seen["main.searcher"]["meta"]
        assert "member reader · workflow read-featured" in seen["main.reader"]["meta"]
        assert all(c["item"].endswith("a_pair.netgent.yaml::pair") for c in seen.values())
        # the next item runs: each card still names the item its browser ran
        until(driver, "return document.querySelector('.card') && !document.getElementById("
                      "'summary').textContent.includes('2 running')")  # fmt: skip
        time.sleep(1)
        assert all(c["item"].endswith("a_pair.netgent.yaml::pair") for c in cards(driver).values())
        (pytester.path / "release").touch()
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, output


HOLD = """\
import pathlib
import time


def test_hold():
    deadline = time.monotonic() + 120
    while not pathlib.Path("release").exists():
        assert time.monotonic() < deadline, "the outer test never released the run"
        time.sleep(0.1)
"""

PAIR = """\
name: pair
scenario:
  - name: searcher
    workflow: wiki/search.netgent.yaml::wiki-search
    vars: {query: WebRTC}
  - name: reader
    workflow: wiki/browse.netgent.yaml::read-featured
"""


def test_pictures_follow_the_tab_the_run_looks_at() -> None:
    """Two tabs, red and blue, the blue one newest: the pictures show the tab the run
    looks at, told by each new document it sees, not merely the newest."""
    import io

    from PIL import Image

    from pytest_netgent.browser.page import evaluate
    from pytest_netgent.browser.screencast import Pictures
    from pytest_netgent.browser.watchdog import devtools_endpoint
    from pytest_netgent.replay.run import PicturesWatcher

    class Kept(Pictures):
        fps, idle = 10.0, 0.1

        def __init__(self) -> None:
            super().__init__()
            self.frames: list[bytes] = []

        def _picture(self, jpeg: bytes) -> None:
            self.frames.append(jpeg)

    def shows(pictures: Kept, red: bool) -> bool:
        """Whether the pictures come to show the red page (else the blue one)."""
        until = time.monotonic() + 10
        while time.monotonic() < until:
            assert pictures.screencast is not None
            pictures.screencast.picture_now()
            if pictures.frames:
                image = Image.open(io.BytesIO(pictures.frames[-1])).convert("RGB")
                r, _g, b = image.getpixel((image.width // 2, image.height // 2))
                if (r > 200 and b < 60) if red else (b > 200 and r < 60):
                    return True
            time.sleep(0.1)
        return False

    page = "data:text/html,<body style='background:rgb({})'>"
    with headless_chromium() as driver:
        driver.get(page.format("255,0,0"))
        red = driver.current_window_handle
        driver.switch_to.new_window("tab")
        driver.get(page.format("0,0,255"))
        pictures = Kept()
        pictures.watch(driver, devtools_endpoint(driver))
        try:
            until = time.monotonic() + 10
            while len(getattr(pictures.screencast, "_tabs", ())) < 2:
                assert time.monotonic() < until, "the screencast did not attach both tabs"
                time.sleep(0.05)
            watcher = PicturesWatcher(pictures, lambda: str(driver.current_window_handle))
            driver.switch_to.window(red)
            watcher.tick(evaluate(driver, [], None, 0))  # the run sees the red tab's page
            assert shows(pictures, red=True)
            driver.switch_to.window(driver.window_handles[-1])
            watcher.tick(evaluate(driver, [], None, 0))
            assert shows(pictures, red=False)
        finally:
            pictures.stop()


def test_a_live_picture_is_the_visible_part_of_the_page_at_half_its_size() -> None:
    """The live page's pictures are smaller than the page (a card is a third of a
    screen wide), of the part the page is scrolled to: stripes 100 px high, scrolled to
    the eleventh, show it at the top, 50 px high."""
    import io

    from PIL import Image

    from pytest_netgent.browser.screencast import LIVE_SCALE, Screencast
    from pytest_netgent.browser.watchdog import devtools_endpoint

    stripes = "".join(
        f"<div style='height:100px;background:rgb({0 if i % 2 else 255},0,{255 if i % 2 else 0})'>"
        "</div>"
        for i in range(40)
    )
    frames: list[bytes] = []
    with headless_chromium() as driver:
        driver.get(f"data:text/html,<body style='margin:0'>{stripes}")
        driver.execute_script("window.scrollTo(0, 1000)")
        width, height = driver.execute_script("return [innerWidth, innerHeight]")
        screencast = Screencast(devtools_endpoint(driver), frames.append, scale=LIVE_SCALE)
        try:
            until = time.monotonic() + 10
            while not frames:
                assert time.monotonic() < until, "no picture"
                screencast.picture_now()
        finally:
            screencast.close()
    image = Image.open(io.BytesIO(frames[-1])).convert("RGB")
    assert abs(image.width - width * LIVE_SCALE) <= 10, (image.size, width)
    assert abs(image.height - height * LIVE_SCALE) <= 10, (image.size, height)
    colours = [image.getpixel((image.width // 2, y)) for y in (10, 60)]
    # stripe 10 (red) at the top, stripe 11 (blue) 50 px below
    assert colours[0][0] > 200 and colours[0][2] < 60, colours
    assert colours[1][2] > 200 and colours[1][0] < 60, colours


def test_a_live_run_with_pictures_ends_without_waiting_for_one_more(tmp_path: Path) -> None:
    """Waiting for a picture of each item's last page cost replay 2 % on two workers: a
    live stream waits only for a run that has no picture yet (a run shorter than the
    pictures' pace); a video always does (its last frame is the item's last page)."""
    from pytest_netgent.browser.screencast import FrameRecorder, LiveStream, Pictures

    waited: list[str] = []

    class Shots:
        """Stands for the browser's screencast: notes whose run waited for a picture."""

        def __init__(self, who: str) -> None:
            self.who = who

        def picture_now(self, timeout: float) -> None:
            waited.append(self.who)

    def run(pictures: Pictures, who: str, *frames: bytes) -> None:
        pictures.screencast = Shots(who)  # type: ignore[assignment]
        pictures.begin("search", hidden=False)
        for jpeg in frames:
            pictures._frame(jpeg)
        pictures.end("passed")

    stream = LiveStream(tmp_path, "gw0")
    run(stream, "live, no page open")
    (tmp_path / ".watched").touch()  # the live page asked what to show
    run(stream, "live, no picture yet")
    run(stream, "live, pictured", b"\xff\xd8 a page")
    run(FrameRecorder(), "video, pictured", b"\xff\xd8 a page")
    assert waited == ["live, no picture yet", "video, pictured"]
    assert (tmp_path / "gw0.jpg").read_bytes() == b"\xff\xd8 a page"


def test_a_stream_takes_pictures_only_while_the_page_is_open_and_once_it_saw_the_last(
    tmp_path: Path,
) -> None:
    """A picture costs the browser 15-25 ms of CPU: a live stream takes none while no
    page asks the server what to show, and its next one only once the page fetched the
    last (a frame never fetched holds the next back for two idle periods at most)."""
    from pytest_netgent.browser.screencast import LiveStream
    from pytest_netgent.studio.live import LiveServer

    def get(path: str) -> bytes:
        with urlopen(server.url + path, timeout=5) as answer:
            return bytes(answer.read())

    server = LiveServer(tmp_path, 0)
    try:
        stream = LiveStream(tmp_path / "live", "gw0")
        stream.begin("search", hidden=False)
        assert not stream.wanted()  # no page open
        get("live.json")
        assert stream.wanted()  # open, and no frame yet
        stream._frame(b"\xff\xd8 the first page")
        assert not stream.wanted()  # its frame not fetched yet
        assert get("frames/gw0.jpg") == b"\xff\xd8 the first page"
        assert stream.wanted()
        stream._frame(b"\xff\xd8 the next page")
        assert not stream.wanted()
        jpg, seen = tmp_path / "live" / "gw0.jpg", tmp_path / "live" / "gw0.seen"
        old = time.time() - 10
        os.utime(jpg, (old, old))
        os.utime(seen, (old - 10, old - 10))
        assert stream.wanted()  # never fetched, long ago: not held back for ever
        os.utime(tmp_path / "live" / ".watched", (old, old))
        assert not stream.wanted()  # the page was closed
    finally:
        server.close()


def test_a_screencast_takes_no_picture_while_none_is_wanted() -> None:
    """The screencast asks whether a picture is wanted before each one: none while not,
    a poke kept until it is."""
    from pytest_netgent.browser.screencast import Screencast
    from pytest_netgent.browser.watchdog import devtools_endpoint

    frames: list[bytes] = []
    wanted = [False]
    with headless_chromium() as driver:
        driver.get("data:text/html,<body style='background:rgb(0,128,0)'>")
        screencast = Screencast(
            devtools_endpoint(driver), frames.append, fps=10, idle=0.1, wanted=lambda: wanted[0]
        )
        try:
            screencast.poke()
            time.sleep(1.0)
            assert frames == []
            wanted[0] = True
            until = time.monotonic() + 10
            while not frames:
                assert time.monotonic() < until, "no picture once one was wanted"
                time.sleep(0.05)
        finally:
            screencast.close()


FOREIGN = """<!DOCTYPE html>
<title>another site</title>
<img id="frame" src="{live}frames/gw0.jpg">
<img id="state" src="{live}live.json">
"""
"""A page of another site that embeds the live page's frame and state as pictures."""

IMAGES = "[...document.images].map(i => [i.id, i.complete, i.naturalWidth])"
"""Each picture of a page: its id, whether it is done loading, and its width (0: none)."""


@contextmanager
def foreign_site(live_url: str) -> Iterator[int]:
    """A site on another port of 127.0.0.1 serving :data:`FOREIGN`: its port."""
    body = FOREIGN.format(live=live_url).encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


def test_a_foreign_page_embedding_the_frame_makes_the_run_take_no_picture(
    tmp_path: Path, driver: Any
) -> None:
    """Another site's page (on another port of this machine, or by the other name)
    embeds the live frame and state as images: the server refuses both, so the stream
    is never told a page is open or its frame was seen (it takes no picture), and the
    images do not load; the live page itself still shows the frame."""
    import io

    from PIL import Image

    from pytest_netgent.browser.screencast import SEEN, WATCHED, LiveStream
    from pytest_netgent.studio.live import LiveServer

    picture = io.BytesIO()
    Image.new("RGB", (64, 48), (0, 128, 0)).save(picture, "JPEG")
    live = tmp_path / "live"
    server = LiveServer(tmp_path, 0)
    try:
        stream = LiveStream(live, "gw0")
        stream.begin("search", hidden=False)
        stream._frame(picture.getvalue())  # the run's last picture, before any page
        with foreign_site(f"http://127.0.0.1:{server.port}/") as port:
            for host in ("127.0.0.1", "localhost"):  # same-site, cross-site
                driver.get(f"http://{host}:{port}/")
                until(driver, f"return ({IMAGES}).every(([id, complete]) => complete)")
                shown = driver.execute_script(f"return {IMAGES}")
                assert shown == [["frame", True, 0], ["state", True, 0]], host
        assert not (live / WATCHED).exists() and not (live / f"gw0{SEEN}").exists()
        assert not stream.wanted()  # no picture taken for that page
        for headers in ({"Sec-Fetch-Site": "same-site"}, {"Origin": f"http://127.0.0.1:{port}"}):
            for path in ("frames/gw0.jpg", "live.json"):
                with pytest.raises(HTTPError) as refused:
                    urlopen(Request(server.url + path, headers=headers), timeout=5)
                refused.value.close()
                assert refused.value.code == 403, (path, headers)
        own = {"Sec-Fetch-Site": "same-origin", "Origin": server.url.rstrip("/")}
        with urlopen(Request(server.url + "frames/gw0.jpg", headers=own), timeout=5) as frame:
            assert frame.headers["Cross-Origin-Resource-Policy"] == "same-origin"
        driver.get(server.url)  # the live page itself
        until(driver, "const i = document.querySelector('.card img'); return i && i.naturalWidth")
        assert (live / WATCHED).exists() and (live / f"gw0{SEEN}").exists()
        assert stream.wanted()  # its page is open and has seen the last picture
    finally:
        server.close()
