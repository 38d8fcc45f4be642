"""Traffic capture: the example suites run under ``--netgent-capture=pcap,har,netlog`` on
two workers, and their captures are read back (pcaps with dpkt, HAR and netlog as JSON)."""

from __future__ import annotations

import collections
import html
import ipaddress
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import dpkt
import pytest

from pytest_netgent.capture import parse_modes
from pytest_netgent.capture.files import Window
from pytest_netgent.capture.netlog import split_netlog
from pytest_netgent.capture.pcap import Tcpdump, merge_pcaps
from pytest_netgent.network import netns

from .helpers import QUIET, Pcap, Project, element, read_csv, read_pcap, read_rows

ROOT = Path(__file__).resolve().parent.parent
PASSWORDS = ("netgent-pass", "chirp-pass")  # the example accounts' secrets (root conftest)

CATEGORIES = {
    "video_on_demand": 3,
    "live_video": 3,
    "video_call": 3,
    "social_media": 6,
    "scraping": 12,
}

needs_pcap = pytest.mark.skipif(
    bool(netns.unavailable()), reason=f"pcap capture cannot run here: {netns.unavailable()}"
)


@dataclass
class Run:
    root: Path
    output: str
    returncode: int
    rows: list[dict[str, str]]
    """The workflow items' rows of the manifest."""
    scenarios: list[dict[str, str]]
    """The scenarios' rows and their members' rows."""

    def row(self, item: str) -> dict[str, str]:
        return next(r for r in self.rows if r["item"].endswith(item))

    def file(self, item: str, kind: str) -> Path:
        return self.root / self.row(item)[kind]

    def pcap(self, item: str) -> Pcap:
        return read_pcap(self.file(item, "pcap"))


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """``pytest example_suites -n 2 --netgent-capture=pcap,har,netlog --netgent-plots=svg``,
    run once."""
    if why := netns.unavailable():
        pytest.skip(f"pcap capture cannot run here: {why}")
    root = tmp_path_factory.mktemp("artifacts")
    answer = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *QUIET,
            "-p",
            "no:cacheprovider",
            "example_suites",
            "-n",
            "2",
            "--netgent-capture=pcap,har,netlog",
            "--netgent-plots=svg",
            f"--netgent-artifacts={root}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = answer.stdout + answer.stderr
    manifest = root / "manifest.csv"
    assert manifest.is_file(), output
    rows = list(read_rows(manifest))
    items = [r for r in rows if not r["kind"]]
    return Run(root, output, answer.returncode, items, [r for r in rows if r["kind"]])


@needs_pcap
def test_every_item_leaves_non_empty_captures_a_manifest_and_labels(captured: Run) -> None:
    assert captured.returncode == 0, captured.output
    assert "29 passed" in captured.output  # 27 workflow items and 2 scenarios
    assert "netgent capture: pcap, har, netlog ->" in captured.output
    assert len(captured.rows) == 27
    assert {r["worker"] for r in captured.rows} == {"gw0", "gw1"}
    assert collections.Counter(r["category"] for r in captured.rows) == CATEGORIES
    for row in captured.rows:
        assert row["outcome"] == "passed", row
        assert row["start"] < row["end"], row
        for kind in ("pcap", "har", "netlog", "timeline"):
            path = captured.root / row[kind]
            assert path.is_file() and path.stat().st_size > 0, (row["item"], kind)
            assert int(row[f"{kind}_bytes"]) == path.stat().st_size
        assert row["pcap_dropped"] == "0", row["item"]  # the whole traffic is there
        item = json.loads((captured.root / row["folder"] / "item.json").read_text())
        assert item["item"] == row["item"] and item["outcome"] == "passed"
        assert item["netlog_bytes"] == row["netlog_bytes"]  # written after the item ended
    call = captured.row("call-quality")  # WebRTC samples beside the pcap
    assert int(call["webrtc_bytes"]) > 0 and (captured.root / call["webrtc"]).is_file()
    params = json.loads(captured.row("watch-title[540p]")["parameters"])
    assert params == {"quality": "540p"}
    labels = read_csv(captured.root / "labels.csv")
    assert labels[0] == ["Item", "Label"]
    every = [*captured.rows, *(r for r in captured.scenarios if r["kind"] == "scenario")]
    assert sorted(labels[1:]) == sorted([r["pcap"], r["category"]] for r in every)


@needs_pcap
def test_the_vod_pcap_holds_its_segment_requests(captured: Run) -> None:
    requests = captured.pcap("watch-title[540p]").requests()
    segments = [r for r in requests if "/vod/media/ocean-deep/540p/seg" in r]
    assert len(segments) >= 3, requests
    har = json.loads(captured.file("watch-title[540p]", "har").read_text())
    entries = har["log"]["entries"]
    # segments still loading when the item ended are listed too, without a response
    ts = [e for e in entries if e["request"]["url"].endswith(".ts")]
    # (a segment the player gave up on halfway, as it switches renditions, says so)
    done = [e for e in ts if e["response"]["status"] == 200 and "_error" not in e["response"]]
    assert len(done) >= 3 and all(e["response"]["bodySize"] > 0 for e in done)
    paths = {e["request"]["url"].split("/", 3)[3] for e in done}
    assert paths <= {r.split()[1].lstrip("/") for r in requests}  # the same requests


@needs_pcap
def test_the_call_pcap_holds_udp_media_flows(captured: Run) -> None:
    pcap = captured.pcap("join-call")
    media = [
        packets
        for packets in pcap.flows("udp").values()
        if len(packets) > 100 and len({(p.sport, p.dport) for p in packets}) == 2
    ]
    assert media, {tuple(k): len(v) for k, v in pcap.flows("udp").items()}
    # RTP version 2 (SRTP keeps the header in the clear) flowing both ways
    rtp = [p for p in media[0] if p.payload[:1] and p.payload[0] >> 6 == 2]
    assert len({(p.sport, p.dport) for p in rtp}) == 2
    har = json.loads(captured.file("join-call", "har").read_text())
    sockets = [e for e in har["log"]["entries"] if e["_resourceType"] == "websocket"]
    assert sockets and sockets[0]["_webSocketMessages"], "the signalling WebSocket"
    assert {m["type"] for m in sockets[0]["_webSocketMessages"]} == {"send", "receive"}


@needs_pcap
def test_no_pcap_holds_another_items_flows(captured: Run) -> None:
    seen: dict[bytes, str] = {}
    for row in captured.rows:
        pcap = read_pcap(captured.root / row["pcap"])
        assert pcap.packets, row["item"]
        for key, packets in pcap.flows("tcp").items():
            # every connection opens and closes inside its own item's capture
            assert packets[0].flags & dpkt.tcp.TH_SYN, (row["item"], sorted(key))
            assert any(p.flags & (dpkt.tcp.TH_FIN | dpkt.tcp.TH_RST) for p in packets), (
                row["item"],
                sorted(key),
            )
        # local applications only: nothing left the machine (no uplink was needed); a frame
        # from 'localhost' is tried on ::1 first (refused: servers listen on 127.0.0.1)
        addresses = {p.src for p in pcap.packets} | {p.dst for p in pcap.packets}
        assert "127.0.0.1" in addresses and addresses <= {"127.0.0.1", "::1"}, addresses
        for p in pcap.packets:
            other = seen.setdefault(p.raw + repr(p.time).encode(), row["item"])
            assert other == row["item"], f"a packet of {other} is in {row['item']}'s pcap"
        # every request went to the server of this item's own worker
        har = json.loads((captured.root / row["har"]).read_text())
        hosts = {e["request"]["url"].split("/")[2] for e in har["log"]["entries"]}
        ports = {host.rsplit(":", 1)[1] for host in hosts}  # 127.0.0.1 or localhost
        assert len(ports) == 1, hosts
        port = int(ports.pop())
        assert all(port in key for key in pcap.flows("tcp")), row["item"]


@needs_pcap
def test_timelines_fall_inside_their_pcaps(captured: Run) -> None:
    for row in captured.rows:
        pcap = read_pcap(captured.root / row["pcap"])
        timeline = json.loads((captured.root / row["timeline"]).read_text())
        assert timeline["item"] == row["item"]
        (run,) = timeline["runs"]
        events = run["events"]
        assert events[0]["event"] == "start" and events[-1]["event"] == "end"
        # the run starts, then its first navigation sends the first packet
        assert 0 <= pcap.first - events[0]["epoch"] < 1.0, row["item"]
        traffic = events[next(i for i, e in enumerate(events) if e["event"] == "url") :]
        for event in traffic:
            assert pcap.first <= event["epoch"] <= pcap.last, (row["item"], event)
        monotonic = [e["monotonic"] for e in events]
        assert monotonic == sorted(monotonic) and 0 <= monotonic[0] < 1.0


@needs_pcap
def test_the_vod_qoe_samples_show_playback_advancing(captured: Run) -> None:
    lines = captured.file("watch-title[540p]", "qoe").read_text().splitlines()
    samples = [json.loads(line) for line in lines]
    assert len(samples) >= 8  # every 0.5 s for 6 s
    times = [s["playback_time"] for s in samples]
    assert times == sorted(times) and times[-1] - times[0] > 3.0
    # the 540p rendition (the decoder once said 541 rows for it under CI's load)
    assert abs(samples[-1]["height"] - 540) <= 2 and samples[-1]["buffered_ahead"] > 0
    assert samples[-1]["decoded_frames"] > samples[0]["decoded_frames"]
    assert {s["state"] for s in samples} == {"Player"}
    assert all(s["stalls"] == 0 and not s["paused"] for s in samples[2:])
    live = captured.file("follow-channel[News_24]", "qoe").read_text().splitlines()
    assert json.loads(live[-1])["playback_time"] > 1.0


@needs_pcap
def test_every_item_has_its_plots(captured: Run) -> None:
    """--netgent-plots=svg: every item's throughput with its states marked; the video
    quality of the items that sampled it; a scenario's throughput per member."""
    for row in captured.rows:
        folder = captured.root / row["folder"]
        words = html.unescape(
            " ".join(re.findall(r"<!-- (.*?) -->", (folder / "throughput.svg").read_text()))
        )
        assert row["item"] in words and "throughput (Mbit/s)" in words, row["item"]
        timeline = json.loads((folder / "timeline.json").read_text())
        states = {
            e["state"] for r in timeline["runs"] for e in r["events"] if e["event"] == "state"
        }
        assert all(state in words for state in states), (row["item"], states)
        assert (folder / "qoe.svg").is_file() == bool(row["qoe"] or row["webrtc"]), row["item"]
        assert not list(folder.glob("*.png"))
    vod = captured.root / captured.row("watch-title[540p]")["folder"] / "qoe.svg"
    assert "resolution (lines)" in html.unescape(vod.read_text())
    for row in captured.scenarios:
        if row["kind"] == "scenario":
            svg = (captured.root / row["folder"] / "throughput.svg").read_text()
            members = [
                m["item"].rsplit("::", 1)[1]
                for m in captured.scenarios
                if m["scenario"] == row["item"]
            ]
            assert all(f"<!-- {m} -->" in svg for m in members), (row["item"], members)


@needs_pcap
def test_each_netlog_holds_its_own_items_requests(captured: Run) -> None:
    vod = json.loads(captured.file("watch-title[540p]", "netlog").read_text())
    wiki = json.loads(captured.file("wiki-search[WebRTC]", "netlog").read_text())
    assert "timeTickOffset" in vod["constants"] and vod["events"]
    assert "/vod/media/ocean-deep/540p/" in json.dumps(vod["events"])
    assert "/vod/" not in json.dumps(wiki["events"])
    assert "/wiki/" in json.dumps(wiki["events"])


@needs_pcap
def test_every_item_says_what_shaped_its_traffic_beside_the_network(captured: Run) -> None:
    """The browser's and the machine's facts, read from the browser and the kernel: a
    headless, software-rendered run is one a player may serve a lower quality."""
    for row in captured.rows:
        assert row["browser"].startswith("chrome ") and row["driver"][:1].isdigit(), row
        assert row["headless"] == "yes" and row["uc"] == "no" and row["grid"] == "no"
        assert row["rendering"].startswith(("software (", "gpu (")), row["rendering"]
        assert re.fullmatch(r"\d+x\d+@[\d.]+", row["viewport"]), row["viewport"]
        assert re.fullmatch(r"(\w+=(yes|no) ?){5}", row["codecs"]), row["codecs"]
        assert "vp9=yes" in row["codecs"] and "opus=yes" in row["codecs"]
        assert row["cpus"] == str(os.cpu_count())
        assert 0.0 <= float(row["cpu_busy_pct"]) <= 100.0
    card = (captured.root / "DATASET.md").read_text("utf-8")
    environment = card.split("## Environment", 1)[1].split("##", 1)[0]
    assert re.search(r"- headless: yes \(\d+ items\)", environment), environment
    assert "a player may choose a lower bitrate" in environment


def test_a_renderer_is_named_gpu_or_software() -> None:
    from pytest_netgent.browser.environment import rendering

    assert rendering("ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device))").startswith("software")
    assert rendering("ANGLE (NVIDIA, NVIDIA GeForce RTX 3060)").startswith("gpu (ANGLE (NVIDIA")
    assert rendering("") == "software (no WebGL)"


@needs_pcap
def test_no_secret_reaches_a_file_name_the_manifest_or_a_log(captured: Run) -> None:
    texts = [(captured.root / "manifest.csv").read_text()]
    for path in captured.root.rglob("*"):
        assert not any(p in path.name for p in PASSWORDS)
        if path.suffix in (".json", ".har", ".jsonl", ".csv") and path.name != "netlog.json":
            texts.append(path.read_text())
    login = captured.file("login-and-like", "har").read_text()
    assert "{password}" in login  # the form's POST, redacted
    assert not any(p in text for p in PASSWORDS for text in texts)


def test_bad_capture_options_are_usage_errors(project: Project) -> None:
    with pytest.raises(ValueError, match=r"unknown mode 'pcapng'.*pcap, har, netlog"):
        parse_modes("pcapng,har")
    assert parse_modes(" HAR , pcap") == {"har", "pcap"}
    result = project.run("--netgent-capture=har,video")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--netgent-capture: unknown mode 'video'; give one or more*"])
    project.pytester.makeini("[pytest]\nnetgent_capture = har, pcapng\n")
    result = project.run("--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini netgent_capture: unknown mode 'pcapng'; give one*"])
    project.pytester.makeini("[pytest]\nnetgent_capture = har\n")
    result = project.run("--collect-only")
    result.stdout.fnmatch_lines(["netgent capture: har -> *"])
    result = project.run("--netgent-sslkeylog", "-o", "netgent_capture=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--netgent-sslkeylog writes TLS keys*add --netgent-capture*"])


@pytest.mark.parametrize(
    ("modes", "message"),
    [
        (
            "pcap,har",
            "*--netgent-capture=pcap cannot run here: the browsers run on the Selenium Grid "
            "(--netgent-remote), out of reach of this machine's network. Drop pcap from "
            "--netgent-capture (or the ini netgent_capture) to go on without it",
        ),
        (
            "har,netlog",
            "*--netgent-capture=netlog cannot run here: the browsers run on the Selenium Grid, "
            "whose nodes keep their net log. Drop netlog from*",
        ),
    ],
)
def test_a_capture_that_cannot_run_on_a_grid_is_a_usage_error(
    project: Project, modes: str, message: str
) -> None:
    result = project.run(
        "--collect-only", f"--netgent-capture={modes}", "--netgent-remote=http://127.0.0.1:9"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    result = project.run(
        "--collect-only",
        "--netgent-capture=har",
        "--netgent-sslkeylog",
        "--netgent-remote=http://127.0.0.1:9",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--netgent-sslkeylog cannot run here: the browsers run on*"])


def test_pcap_without_tcpdump_on_path_is_a_usage_error(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dataset job that asked for packets and would get none stops before any item."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            target = bin_dir / entry.name
            if entry.name != "tcpdump" and not target.exists():
                target.symlink_to(entry.path)
    project.workflow("one", "name: one\nstates:\n  - {name: A, end: done}\n")
    monkeypatch.setenv("PATH", str(bin_dir))
    result = project.pytester.run(
        sys.executable, "-m", "pytest", *QUIET, "-p", "no:cacheprovider",
        "--netgent-capture=pcap,har", "--netgent-base-url", project.base_url,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--netgent-capture=pcap cannot run here: tcpdump is not installed: apt-get "
            "install -y tcpdump. Drop pcap from --netgent-capture*"
        ]
    )
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_pcap_needs_root_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert netns.unavailable().startswith(
        "giving each worker its own network namespace needs root (running as uid 1000)"
    )


WIKI_FAILS = """
name: wiki-search
category: scraping
start_url: "{base_url}/wiki/"
states:
  - name: Home
    triggers: [The Search field is visible]
    actions:
      - Type streaming into the Search field
      - Press Enter
  - name: Results
    triggers: [The text 'no such result heading' is shown]
    end: Found
"""


SEARCH = {"by": "css selector", "selector": "#search-input"}


def test_a_failed_item_keeps_its_captures_marked_failed(project: Project) -> None:
    path = project.workflow("search", WIKI_FAILS)
    project.states(
        path,
        "wiki-search",
        {
            "Home": (
                [
                    {"type": "url", "params": {"url": "{base_url}/wiki/", "match": "exact"}},
                    {"type": "element", "params": SEARCH},
                ],
                [
                    {"type": "type", "params": {**SEARCH, "text": "streaming"}},
                    {"type": "press_key", "params": {"key": "Enter"}},
                ],
            ),
            "Results": ([{"type": "text", "params": {"text": "no such result heading"}}], []),
        },
    )
    artifacts = project.path / "out"
    result = project.run(
        "--netgent-capture=har", f"--netgent-artifacts={artifacts}", "--netgent-state-timeout=2",
        "--junitxml=junit.xml", "-o", "junit_family=xunit1",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    (row,) = list(read_rows(artifacts / "manifest.csv"))
    assert row["outcome"] == "failed" and row["category"] == "scraping"
    # the report's copy of the row reads as JSON in junitxml, not as a Python repr
    junit = ET.parse(project.path / "junit.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert json.loads(props["netgent_capture"])["outcome"] == "failed"
    har = json.loads((artifacts / row["har"]).read_text())
    urls = [e["request"]["url"] for e in har["log"]["entries"]]
    assert any("streaming" in url for url in urls), urls  # the search it ran
    timeline = json.loads((artifacts / row["timeline"]).read_text())
    assert timeline["runs"][0]["events"][-1]["event"] == "failure"
    assert "no state matched" in timeline["runs"][0]["error"]
    item = json.loads((artifacts / row["folder"] / "item.json").read_text())
    assert item["outcome"] == "failed"
    assert read_csv(artifacts / "labels.csv") == [["Item", "Label"]]


@pytest.fixture
def https_site(tmp_path: Path) -> Iterator[str]:
    """A page over HTTPS on the host's 127.0.0.1 (self-signed), started before the run."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>Vault</title><h1 id=vault>Vault</h1>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


VAULT = """
name: vault
category: scraping
start_url: "{base_url}/"
states:
  - name: Vault
    triggers: [The Vault heading is shown]
    end: Opened
"""


@needs_pcap
def test_a_server_on_the_hosts_loopback_is_reached_and_its_tls_keys_logged(
    project: Project, https_site: str
) -> None:
    path = project.workflow("vault", VAULT)
    project.states(
        path,
        "vault",
        {
            "Vault": (
                [{"type": "element", "params": {"by": "css selector", "selector": "#vault"}}],
                [],
            )
        },
    )
    artifacts = project.path / "out"
    result = project.pytester.runpytest_subprocess(
        *QUIET,
        f"--netgent-base-url={https_site}",
        "--netgent-capture=pcap",
        "--netgent-sslkeylog",
        f"--netgent-artifacts={artifacts}",
        "--netgent-browser-arg=--ignore-certificate-errors",
    )
    result.assert_outcomes(passed=1)
    (row,) = list(read_rows(artifacts / "manifest.csv"))
    keys = (artifacts / row["sslkeylog"]).read_text()
    assert "CLIENT_TRAFFIC_SECRET_0" in keys or "CLIENT_RANDOM" in keys
    port = int(https_site.rsplit(":", 1)[1])
    pcap = read_pcap(artifacts / row["pcap"])
    handshakes = [p for p in pcap.packets if p.dport == port and p.payload[:2] == b"\x16\x03"]
    assert handshakes, "a TLS ClientHello to the site, captured inside the namespace"


UPLINK_PROBE = """
import json, os, subprocess

def pytest_netgent_run_finished(item, result):
    route = subprocess.run(["ip", "-j", "route", "show", "default"], capture_output=True,
                           text=True, check=True).stdout
    links = subprocess.run(["ip", "-j", "link"], capture_output=True, text=True,
                           check=True).stdout
    out = os.path.join(os.environ["PROBE_OUT"], item.name + ".json")
    with open(out, "w") as f:
        json.dump({"route": json.loads(route), "links": json.loads(links),
                   "pid": os.getpid()}, f)
"""

ANYWHERE = """
name: local
start_url: "{base_url}/wiki/"
states:
  - name: Home
    triggers: [The search box is visible]
    end: Home
---
name: anywhere
start_url: "{base_url}/wiki/"
allowed_hosts: ['*']
states:
  - name: Home
    triggers: [The search box is visible]
    end: Home
"""


@needs_pcap
@pytest.mark.skipif(bool(netns.uplink_unavailable()), reason=netns.uplink_unavailable())
def test_a_workflow_that_may_leave_the_machine_gets_an_uplink_removed_at_exit(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.pytester.makeconftest(UPLINK_PROBE)
    path = project.workflow("probe", ANYWHERE)
    for name in ("anywhere", "local"):
        project.states(path, name, {"Home": ([element("#search-input")], [])})
    monkeypatch.setenv("PROBE_OUT", str(project.path))
    artifacts = project.path / "a"
    # "local" first: loopback only; then "anywhere" ('*' hosts) brings the uplink up
    result = project.run_subprocess(
        "-p", "no:randomly", "--netgent-capture=pcap", f"--netgent-artifacts={artifacts}"
    )
    result.assert_outcomes(passed=2)
    local = json.loads((project.path / "local.json").read_text())
    assert local["route"] == [] and [link["ifname"] for link in local["links"]] == ["lo"]
    probe = json.loads((project.path / "anywhere.json").read_text())
    (route,) = probe["route"]
    assert route["dev"] == f"ngw{probe['pid']}"
    assert ipaddress.ip_address(route["gateway"]) in netns.UPLINK_NETWORK
    names = {link["ifname"]: link for link in probe["links"]}
    assert set(names) == {"lo", f"ngw{probe['pid']}"}  # nothing else of the host's
    assert "UP" in names[f"ngw{probe['pid']}"]["flags"]
    # the namespace, its veth and the worker's NAT table went with the run
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
    assert f"netgent_{probe['pid']}" not in tables
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert f"ngh{probe['pid']}" not in links


@needs_pcap
def test_a_stopped_pcap_holds_every_packet_sent_before_the_stop(tmp_path: Path) -> None:
    """tcpdump is stopped as soon as it has written what was sent, with no fixed pause:
    the packets of the item's last moment are in its pcap."""
    with (
        socket.socket(type=socket.SOCK_DGRAM) as sink,
        socket.socket(type=socket.SOCK_DGRAM) as source,
    ):
        sink.bind(("127.0.0.1", 0))
        port = sink.getsockname()[1]
        for n in range(10):
            tcpdump = Tcpdump(tmp_path / f"{n}.pcap")
            tcpdump.start()
            for k in range(20):
                source.sendto(b"%d" % k, ("127.0.0.1", port))
            tcpdump.stop()
            pcap = read_pcap(tmp_path / f"{n}.pcap")
            assert len([p for p in pcap.packets if p.dport == port]) == 20, n
            assert tcpdump.dropped == 0


def test_pcaps_of_two_interfaces_merge_in_time_order(tmp_path: Path) -> None:
    packets = {"lo": [1.0, 1.5, 3.25], "ngw": [0.5, 2.0, 3.0, 4.0]}
    parts = []
    for name, times in packets.items():
        part = tmp_path / f"{name}.pcap"
        with part.open("wb") as f:
            writer = dpkt.pcap.Writer(f, snaplen=65535)
            for t in times:
                writer.writepkt(bytes(dpkt.ethernet.Ethernet(data=name.encode())), ts=t)
        parts.append(part)
    merge_pcaps(parts, tmp_path / "all.pcap")
    with (tmp_path / "all.pcap").open("rb") as f:
        merged = [(ts, dpkt.ethernet.Ethernet(buf).data) for ts, buf in dpkt.pcap.Reader(f)]
    assert [round(ts, 3) for ts, _ in merged] == [0.5, 1.0, 1.5, 2.0, 3.0, 3.25, 4.0]
    assert [bytes(d) for _, d in merged][:2] == [b"ngw", b"lo"]


def test_a_netlog_splits_into_its_items_time_windows(tmp_path: Path) -> None:
    # Chromium's layout: constants on the first line, then one event per line
    offset = 1_000_000  # ms since the epoch at tick 0
    constants = json.dumps({"constants": {"timeTickOffset": str(offset), "logEventTypes": {}}})
    lines = [constants[:-1] + ",", '"events": [']
    times = [100, 150, 1100, 1200, 1600, 2100, 3100, 3150]  # ticks (ms)
    lines += [f'{{"phase":0,"source":{{"id":{t}}},"time":"{t}","type":1}},' for t in times]
    netlog = tmp_path / "netlog.json"
    netlog.write_text("\n".join(lines) + "\n")
    windows = []
    for n, (start, end) in enumerate([(1001.0, 1001.3), (1002.0, 1002.5), (1003.0, None)]):
        folder = tmp_path / f"item{n}"
        folder.mkdir()
        windows.append(Window(folder, start, end))
    split_netlog(netlog, list(reversed(windows)), open_files=1)  # any order, one file open
    got = [
        [int(e["time"]) for e in json.loads((w.folder / "netlog.json").read_text())["events"]]
        for w in windows
    ]
    assert got == [[1100, 1200], [2100], [3100, 3150]]  # 100-150 and 1600: between items
    head = json.loads((windows[0].folder / "netlog.json").read_text())
    assert head["constants"]["timeTickOffset"] == str(offset)


@pytest.mark.parametrize("extra_at", [0, 3], ids=["before-the-request", "after-it-finished"])
def test_har_takes_extra_info_whenever_it_comes(extra_at: int) -> None:
    from pytest_netgent.capture.har import build_har

    url = "http://127.0.0.1:8000/assets/workers/search.js"
    events = [
        {"method": "Network.requestWillBeSent",
         "params": {"requestId": "7", "timestamp": 1.0, "wallTime": 1000.0,
                    "request": {"url": url, "method": "GET", "headers": {}}}},
        {"method": "Network.loadingFinished",
         "params": {"requestId": "7", "timestamp": 1.2, "encodedDataLength": 10}},
    ]  # fmt: skip
    extra = {"method": "Network.responseReceivedExtraInfo",
             "params": {"requestId": "7", "statusCode": 200,
                        "headers": {"Content-Type": "application/javascript"},
                        "headersText": "HTTP/1.1 200 OK\r\nContent-Type: x"}}  # fmt: skip
    events.insert(min(extra_at, len(events)), extra)
    (entry,) = build_har(events)["log"]["entries"]
    assert entry["request"]["url"] == url
    assert entry["response"]["status"] == 200
    assert entry["response"]["statusText"] == "OK"


@needs_pcap
def test_each_scenario_has_one_pcap_with_its_flows_labelled_by_member(captured: Run) -> None:
    scenarios = [r for r in captured.scenarios if r["kind"] == "scenario"]
    assert {r["workflow"] for r in scenarios} == {"evening-at-home", "call-while-live"}
    for row in scenarios:
        assert row["outcome"] == "passed" and row["category"] == "mixed", row
        assert int(row["pcap_dropped"]) == 0
        members = [m for m in captured.scenarios if m["scenario"] == row["item"]]
        assert len(members) == 3 and all(m["outcome"] == "passed" for m in members)
        assert not any(m["pcap"] for m in members)  # one pcap: the scenario's
        folder = captured.root / row["folder"]
        flows = read_rows(folder / "flows.csv")
        pcap = read_pcap(captured.root / row["pcap"])
        labelled = sum(int(f["packets"]) for f in flows if f["member"])
        unlabelled = [f for f in flows if not f["member"]]
        assert labelled / len(pcap.packets) >= 0.99, (row["item"], len(pcap.packets), unlabelled)
        assert float(row["labelled_packets"]) >= 0.99
        names = {m["item"].rsplit("::", 1)[1]: m for m in members}
        # every member made traffic (a flow no member's process sent on stays unlabelled)
        assert {f["member"] for f in flows if f["member"]} == set(names)
        for flow in flows:
            if not flow["member"]:
                continue
            member = names[flow["member"]]
            assert flow["kind"] == member["kind"] and flow["category"] == member["category"]
            if member["kind"] == "browser":
                assert flow["state"], flow  # the state it opened in, or (start_url)
                for kind in ("har", "netlog", "timeline"):
                    assert (captured.root / member[kind]).stat().st_size > 0, (member, kind)
        for name, member in names.items():
            if member["kind"] != "command":
                continue
            # a command's runs are its timeline: each one's start and how it ended
            runs = json.loads((captured.root / member["timeline"]).read_text())["runs"]
            assert runs and all(r["passed"] and r["workflow"] == name for r in runs), runs
            events = [[e["event"] for e in r["events"]] for r in runs]
            assert events == [["start", "end"]] * len(runs)
            assert runs[0]["events"][0]["detail"].startswith("curl ")
        # the video call's media (UDP, opened by the server's peer) is the call's
        if row["workflow"] == "call-while-live":
            udp = [f for f in flows if f["proto"] == "udp"]
            assert udp and {f["member"] for f in udp} == {"call"}, [
                f for f in udp if f["member"] != "call"
            ]
