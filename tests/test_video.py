"""``--netgent-video``: each item's browser as a WebM video in its artifacts folder, read
back with PyAV (its codec, its frames, their times) and opened in headless Chromium."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest

from pytest_netgent.studio.recording import VideoError, write_webm

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, element, headless_chromium

SLOW = {
    name: (checks, [{"type": "wait", "params": {"seconds": 1.0}}, *actions])
    for name, (checks, actions) in SEARCH_STATES.items()
}
"""Each state waits a second before it acts: its page is filmed."""


def read_video(path: Path) -> tuple[str, int, float, tuple[int, int]]:
    """The codec, the number of frames, the last frame's time and the size of a video."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        times = [float(frame.time) for frame in container.decode(stream)]
        return stream.codec_context.name, len(times), max(times), (stream.width, stream.height)


def artifacts(project: Project) -> Path:
    return project.path / "netgent-artifacts"


@pytest.mark.parametrize(
    "mode", [[], pytest.param(["--netgent-uc"], marks=pytest.mark.uc)], ids=["local", "uc"]
)
def test_every_item_gets_a_video_of_what_its_browser_showed(
    project: Project, mode: list[str]
) -> None:
    """Browsers in SeleniumBase's UC mode too (no guard there, but pictures: their
    DevTools client runs nothing in the page)."""
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SLOW)
    result = project.run_subprocess("--netgent-video=on", "--junitxml=report.xml", *mode)
    result.assert_outcomes(passed=1)
    (video,) = artifacts(project).glob("*/video.webm")
    codec, frames, last, size = read_video(video)
    assert codec == "vp8"
    assert frames >= 3, frames  # the home page, the results, the article (each once)
    assert 1.0 < last < 30, last  # at the times they were taken (the wait included)
    assert size[0] == 1280 and 600 < size[1] <= 900, size  # the page's, in its window
    properties = ElementTree.parse(project.path / "report.xml").iter("property")
    assert {p.get("name"): p.get("value") for p in properties}["netgent_video"] == str(video)


def test_the_video_plays_in_chromium(project: Project, tmp_path: Path) -> None:
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    project.run_subprocess("--netgent-video=on").assert_outcomes(passed=1)
    (video,) = artifacts(project).glob("*/video.webm")
    data = base64.b64encode(video.read_bytes()).decode()
    page = tmp_path / "play.html"
    page.write_text(f'<video id=v muted src="data:video/webm;base64,{data}"></video>')
    with headless_chromium() as chrome:
        chrome.get(page.as_uri())
        chrome.set_script_timeout(20)
        shown = chrome.execute_async_script(
            """
            const done = arguments[0], v = document.getElementById('v');
            v.onloadeddata = () => done([v.videoWidth, v.videoHeight, v.readyState]);
            v.onerror = () => done('error ' + (v.error && v.error.message));
            v.load();
            """
        )
    assert shown[0] == 1280 and shown[1] > 600 and shown[2] >= 2, shown


def test_retain_on_failure_keeps_the_video_of_a_failed_item_only(project: Project) -> None:
    good = project.workflow("good", SEARCH_WORKFLOW.replace("name: search", "name: good"))
    project.states(good, "good", SEARCH_STATES)
    bad = project.workflow("bad", SEARCH_WORKFLOW.replace("name: search", "name: bad"))
    broken = {**SEARCH_STATES, "Article": ([element("#no-such-heading")], [])}
    project.states(bad, "bad", broken)
    result = project.run_subprocess("--netgent-video=retain-on-failure", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    videos = sorted(p.parent.name for p in artifacts(project).glob("*/video.webm"))
    assert len(videos) == 1 and videos[0].startswith("bad"), videos
    assert re.search(r"netgent video.*\n.*bad\.netgent\.yaml_bad/video\.webm", result.stdout.str())


def test_a_run_that_types_secrets_is_not_filmed(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NETGENT_VIDEO_Q", "QUIC")
    file = project.workflow(
        "search",
        SEARCH_WORKFLOW.replace("vars: {query: QUIC}", "secrets: {query: NETGENT_VIDEO_Q}"),
    )
    project.states(file, "search", SEARCH_STATES)
    project.run_subprocess("--netgent-video=on").assert_outcomes(passed=1)
    assert not list(artifacts(project).glob("*/video.webm"))


def test_a_bad_ini_value_is_a_usage_error_naming_it(project: Project) -> None:
    project.pytester.makeini("[pytest]\nnetgent_video = always\n")
    result = project.run()
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*ini netgent_video = always: expected off, on or retain-on*"])


def jpeg(width: int, height: int, shade: int) -> bytes:
    import av

    frame = av.VideoFrame(width, height, "yuvj420p")
    for plane, value in zip(frame.planes, (shade, 128, 128), strict=True):
        plane.update(bytes([value]) * plane.buffer_size)
    encoder = av.CodecContext.create("mjpeg", "w")
    encoder.width, encoder.height, encoder.pix_fmt = width, height, "yuvj420p"
    encoder.time_base = av.time_base if hasattr(av, "time_base") else None  # type: ignore[assignment]
    return b"".join(bytes(p) for p in encoder.encode(frame))


def test_damaged_pictures_are_left_out_and_none_at_all_writes_nothing(tmp_path: Path) -> None:
    frames = [(0.0, jpeg(2000, 1001, 40)), (0.5, b"not a jpeg"), (1.25, jpeg(2000, 1001, 200))]
    path = write_webm(frames, tmp_path / "video.webm")
    codec, count, last, size = read_video(path)
    assert (codec, count, last) == ("vp8", 2, pytest.approx(1.25, abs=0.011))
    assert size == (1280, 640)  # scaled to the widest frame kept, both sides even
    for bad in ([], [(0.0, b"garbage"), (1.0, io.BytesIO(b"x").read())]):
        with pytest.raises(VideoError):
            write_webm(bad, tmp_path / "none.webm")
    assert [p.name for p in tmp_path.iterdir()] == ["video.webm"]
