"""Plots of captured items (``--netgent-plots``, ``netgent plot``): throughput per flow or
per scenario member with the state changes marked, video quality over time, and both in
the trace viewer.

The captures here are written by hand (a pcap of known packets, a timeline, video
samples), so every figure the plots are drawn from is known; the example suites' own
captures are plotted in tests/test_capture.py.
"""

from __future__ import annotations

import html
import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.cli import main as netgent
from pytest_netgent.studio.plots import PlotError, draw, parse_formats, qoe, throughput

from .helpers import QUIET, Project, iso
from .test_trace_viewer import BROWSER, document, js, scrub, shown, wait, wiki_run, write_trace
from .test_trace_viewer import driver as driver  # the module's headless Chromium

T0 = 1_790_000_000.0
"""The first packet's time (epoch)."""

SERVER, CLIENT_A, CLIENT_B = ("10.0.0.1", 443), ("10.0.0.2", 50001), ("10.0.0.2", 50002)


def frame(src: tuple[str, int], dst: tuple[str, int], size: int, proto: int = 6) -> bytes:
    """An Ethernet frame of ``size`` bytes carrying IPv4 TCP (6) or UDP (17)."""
    ip = struct.pack(
        "!BBHHHBBH4s4s", 0x45, 0, size - 14, 0, 0, 64, proto, 0,
        bytes(map(int, src[0].split("."))), bytes(map(int, dst[0].split("."))),
    )  # fmt: skip
    ports = struct.pack("!HH", src[1], dst[1])
    body = ip + ports
    return b"\x00" * 12 + b"\x08\x00" + body + b"\x00" * (size - 14 - len(body))


def write_pcap(path: Path, packets: list[tuple[float, bytes]]) -> None:
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for moment, data in packets:
        seconds = int(moment)
        micros = round((moment - seconds) * 1e6)
        out.append(struct.pack("<IIII", seconds, micros, len(data), len(data)) + data)
    path.write_bytes(b"".join(out))


def write_timeline(path: Path, states: list[tuple[float, str]]) -> None:
    events = [{"event": "state", "epoch": T0 + at, "state": name} for at, name in states]
    path.write_text(json.dumps({"item": "x", "runs": [{"events": events}]}))


def write_qoe(path: Path, samples: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))


@pytest.fixture
def item(tmp_path: Path) -> Path:
    """An item's folder: client A downloads 125 000 bytes per second for 3 s (1 Mbit/s),
    client B sends 12 500 bytes in its first second (0.1 Mbit/s); states at 0.5 and
    2.5 s; a video whose buffer grows and whose resolution switches once."""
    folder = tmp_path / "wiki.yaml_watch"
    folder.mkdir()
    packets = []
    for second in range(3):
        for i in range(100):
            packets.append((T0 + second + i / 100, frame(SERVER, CLIENT_A, 1250)))
    for i in range(10):
        packets.append((T0 + 0.05 + i / 20, frame(CLIENT_B, SERVER, 1250)))
    packets.sort()
    write_pcap(folder / "capture.pcap", packets)
    write_timeline(
        folder / "timeline.json", [(0.5, "Home"), (2.5, "Player"), (2.8, "Pay $5 or $10")]
    )
    write_qoe(
        folder / "qoe.jsonl",
        [
            {"time": iso(T0 + t), "video": 0, "buffered_ahead": t * 2, "height": h, "stalls": 0}
            for t, h in ((1.0, 360), (1.5, 360), (2.0, 720), (2.5, 720))
        ]
        + [{"time": iso(T0 + 0.2), "video": None, "page": "about:blank"}],  # no video yet
    )
    (folder / "item.json").write_text(json.dumps({"item": "wiki.yaml::watch"}))
    return folder


def svg_texts(path: Path) -> str:
    """The words an SVG shows (matplotlib draws text as glyph paths with a comment)."""
    return html.unescape(" ".join(re.findall(r"<!-- (.*?) -->", path.read_text())))


def test_throughput_per_flow_in_mbit_per_second(item: Path) -> None:
    start, lines = throughput(item / "capture.pcap")
    assert start == pytest.approx(T0)
    by_label = {line.label: line.points for line in lines}
    download = by_label["tcp 10.0.0.1:443 > 10.0.0.2:50001"]  # named by its first sender
    upload = by_label["tcp 10.0.0.2:50002 > 10.0.0.1:443"]
    assert [round(v, 3) for _, v in download] == [1.0, 1.0, 1.0]
    assert [round(v, 3) for _, v in upload] == [0.1, 0.0, 0.0]
    assert [t for t, _ in download] == [0.0, 1.0, 2.0]
    assert lines[0].points is download  # the largest flow first


def test_an_items_plots_mark_its_states_in_both_formats(item: Path) -> None:
    written = draw(item)
    names = sorted(p.name for p in written)
    assert names == ["qoe.png", "qoe.svg", "throughput.png", "throughput.svg"]
    assert (item / "throughput.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    words = svg_texts(item / "throughput.svg")
    named = ("Home", "Player", "Pay $5 or $10", "tcp 10.0.0.1:443 > 10.0.0.2:50001")
    for expected in (*named, "wiki.yaml::watch"):  # words as written: no math in them
        assert expected in words
    quality = svg_texts(item / "qoe.svg")
    assert "buffer ahead (s)" in quality and "resolution (lines)" in quality
    assert "video 0" in quality and "Player" in quality
    again = (item / "throughput.svg").read_text()
    draw(item, ["svg"])
    assert (item / "throughput.svg").read_text() == again  # no date: the same file


def test_video_quality_lines_per_video(item: Path) -> None:
    start, lines = qoe(item / "qoe.jsonl", T0)
    assert start == T0
    assert lines["height\tvideo 0"].points == [(1.0, 360), (1.5, 360), (2.0, 720), (2.5, 720)]
    assert [v for _, v in lines["buffer\tvideo 0"].points] == [2.0, 3.0, 4.0, 5.0]


def test_a_calls_streams_are_plotted_with_their_bitrate(item: Path) -> None:
    """webrtc.jsonl (start_webrtc_tracking): per stream its bitrate in Mbit/s, resolution
    and frame rate; a value not measured yet (null) is no point."""
    (item / "qoe.jsonl").unlink()
    stream = {"direction": "inbound", "kind": "video", "ssrc": 7, "height": 360}
    write_qoe(
        item / "webrtc.jsonl",
        [
            {"time": iso(T0 + 1), **stream, "bitrate_bps": None, "frames_per_second": None},
            {"time": iso(T0 + 2), **stream, "bitrate_bps": 2_000_000, "frames_per_second": 25},
            {"time": iso(T0 + 3), **stream, "bitrate_bps": 1_500_000, "frames_per_second": 30},
        ],
    )
    _, lines = qoe(item / "webrtc.jsonl", T0, webrtc=True)
    assert lines["bitrate\tinbound video 7"].points == [(2.0, 2.0), (3.0, 1.5)]
    assert [v for _, v in lines["fps\tinbound video 7"].points] == [25, 30]
    assert len(lines["height\tinbound video 7"].points) == 3
    draw(item, ["svg"])
    words = svg_texts(item / "qoe.svg")
    assert "bitrate (Mbit/s)" in words and "frames per second" in words
    assert "inbound video 7" in words and "buffer ahead (s)" not in words


def test_a_scenario_is_plotted_per_member(tmp_path: Path) -> None:
    """flows.csv names each flow's member: the plot has one line per member, and each
    member's states carry its name."""
    folder = tmp_path / "mixed_evening"
    for member in ("call", "stream"):
        (folder / member).mkdir(parents=True)
    packets = [(T0 + i / 10, frame(SERVER, CLIENT_A, 1000)) for i in range(20)]
    packets += [(T0 + i / 10, frame(CLIENT_B, SERVER, 500, proto=17)) for i in range(10)]
    packets.append((T0 + 1, frame(("10.0.0.9", 53), CLIENT_B, 100, proto=17)))  # nobody's
    write_pcap(folder / "capture.pcap", sorted(packets))
    (folder / "flows.csv").write_text(
        "proto,src,sport,dst,dport,first,last,packets,bytes,member,kind,category,state\n"
        f"tcp,10.0.0.2,50001,10.0.0.1,443,{T0},{T0 + 1.9},20,20000,stream,browser,vod,x\n"
        f"udp,10.0.0.2,50002,10.0.0.1,443,{T0},{T0 + 0.9},10,5000,call,browser,call,y\n"
    )
    write_timeline(folder / "stream" / "timeline.json", [(0.3, "Player")])
    write_timeline(folder / "call" / "timeline.json", [(0.6, "In call")])
    _, lines = throughput(folder / "capture.pcap", folder / "flows.csv")
    totals = {line.label: sum(v for _, v in line.points) for line in lines}
    assert totals == pytest.approx({"stream": 0.16, "call": 0.04, "(no member)": 0.0008})
    (svg,) = draw(folder, ["svg"])
    words = svg_texts(svg)
    assert "stream: Player" in words and "call: In call" in words


def test_bad_files_are_named_and_nothing_is_written(item: Path) -> None:
    with (item / "qoe.jsonl").open("a") as f:
        f.write('{"time": "yesterday", "vid')  # cut short
    with pytest.raises(PlotError, match=r"qoe\.jsonl:6: not a video quality sample"):
        draw(item)
    assert not list(item.glob("*.svg"))
    (item / "qoe.jsonl").unlink()
    (item / "flows.csv").write_text("proto,src\ntcp,10.0.0.1\n")
    with pytest.raises(PlotError, match=r"flows\.csv:2: not a row of flows\.csv"):
        draw(item)
    assert not list(item.glob("*.svg"))


def test_netgent_plot_draws_every_item_of_a_tree(
    item: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert netgent(["plot", str(tmp_path), "--format", "svg"]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(item / "throughput.svg"), str(item / "qoe.svg")]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert netgent(["plot", str(empty)]) == 2
    assert "no captured item in it (no item.json)" in capsys.readouterr().err
    assert netgent(["plot", str(item), "--format", "gif"]) == 2
    assert "--format: unknown format 'gif'" in capsys.readouterr().err


def test_parse_formats() -> None:
    assert parse_formats("svg") == ("svg",)
    assert parse_formats("PNG, svg,png") == ("png", "svg")
    assert parse_formats("off") == ()
    with pytest.raises(ValueError, match="--netgent-plots: unknown format 'pdf'"):
        parse_formats("svg,pdf")


def test_plots_without_a_capture_or_with_a_bad_format_are_usage_errors(project: Project) -> None:
    project.workflow("search", "name: search\nstart_url: '{base_url}/wiki/'\nstates: []\n")
    result = project.pytester.runpytest_subprocess(*QUIET, "--netgent-plots=svg")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--netgent-plots draws what the captures hold: add --netgent-capture*"]
    )
    result = project.pytester.runpytest_subprocess(
        *QUIET, "--netgent-capture=har", "--netgent-plots=jpeg"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--netgent-plots: unknown format 'jpeg'*"])


@BROWSER
def test_the_viewer_shows_the_plots_beside_the_trace(driver: Any, item: Path) -> None:
    trace = write_trace(item / "trace.zip", document(wiki_run()))
    with shown(driver, trace):
        assert js(driver, "$('#plots-card').hidden")  # no plots drawn yet
    draw(item, ["svg"])
    with shown(driver, trace) as server:
        wait(driver, "!$('#plots-card').hidden")
        wait(driver, "[...document.querySelectorAll('#plots img')].every(i => i.naturalWidth > 0)")
        assert js(driver, "[...document.querySelectorAll('#plots img')].map(i => i.alt)") == [
            "throughput plot",
            "qoe plot",
        ]
        from .test_trace_viewer import fetch, fetch_status

        status, headers, body = fetch(server.url + "plots/throughput.svg")
        assert status == 200 and headers["Content-Type"] == "image/svg+xml"
        assert headers["Content-Security-Policy"] == "sandbox" and body.startswith(b"<?xml")
        assert fetch_status(server.url + "plots/item.json") == 404


@BROWSER
def test_the_plots_mark_the_moment_the_scrubber_selects(driver: Any, item: Path) -> None:
    draw(item, ["svg"])
    axes = json.loads((item / "throughput.axes.json").read_text())
    assert axes["start"] == pytest.approx(T0) and len(axes["axes"]) == 1
    count = 1 + len(json.loads((item / "qoe.axes.json").read_text())["axes"])
    run = {**wiki_run(), "started": iso(T0)}  # the run began with the first packet
    trace = write_trace(item / "trace.zip", document(run))
    with shown(driver, trace):
        wait(driver, "$$('.plot-now').length === arguments[0]", count)  # one per axes
        places = []
        for index in (2, 9):  # Home's first look (0.5 s), then the Results page (1.21 s)
            scrub(driver, index)
            wait(driver, "!$$('.plot-now')[0].hidden")
            line = js(
                driver,
                "(() => { const l = $$('.plot-now')[0].getBoundingClientRect();"
                "const p = $$('.plot-frame img')[0].getBoundingClientRect();"
                "return [(l.left - p.left) / p.width, $('#time').textContent]; })()",
            )
            places.append(line)
        (first, shown_first), (second, _) = places
        box = axes["axes"][0]
        low, high = box["xlim"]
        seconds = float(shown_first.split(" s")[0])
        expected = box["left"] + (seconds - low) / (high - low) * (box["right"] - box["left"])
        assert first == pytest.approx(expected, abs=0.01)
        assert second > first + 0.05  # later in the run, further right
    early = write_trace(item / "trace.zip", document(wiki_run()))  # run years before: off
    with shown(driver, early):
        wait(driver, "$$('.plot-now').length === arguments[0]", count)
        scrub(driver, 2)
        assert js(driver, "$$('.plot-now').every(l => l.hidden)")
