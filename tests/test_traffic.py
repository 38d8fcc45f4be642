"""An item's traffic in figures, read from its pcap, and ``expect_traffic``: the figures
of pcaps written here (dpkt) and of real runs, and a player whose video never plays
failing by its figures while the one that plays passes."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path

import dpkt
import pytest

from fixtures.http import AppServer, Request, Response
from pytest_netgent.capture.spread import mark_suspects, spreads
from pytest_netgent.capture.traffic import host_matcher, shortfalls, summarise
from pytest_netgent.network import netns
from pytest_netgent.workflow.spec import Workflow
from pytest_netgent.workflow.traffic import TrafficExpectation, size_bytes, size_text

from .helpers import Project, css, element, read_rows

needs_pcap = pytest.mark.skipif(
    bool(netns.unavailable()), reason=f"pcap capture cannot run here: {netns.unavailable()}"
)

BROWSER, SITE, PEER = ("127.0.0.1", 40000), ("127.0.0.1", 8000), ("127.0.0.1", 50000)


class Pcap:
    """A classic Ethernet pcap written packet by packet."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("wb")
        self.writer = dpkt.pcap.Writer(self.file, linktype=dpkt.pcap.DLT_EN10MB)

    def packet(
        self,
        at: float,
        src: tuple[str, int],
        dst: tuple[str, int],
        payload: bytes,
        udp: bool = False,
    ) -> None:
        import socket

        layer: dpkt.Packet = (
            dpkt.udp.UDP(sport=src[1], dport=dst[1], data=payload)
            if udp
            else dpkt.tcp.TCP(sport=src[1], dport=dst[1], data=payload)
        )
        ip = dpkt.ip.IP(
            src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]),
            p=dpkt.ip.IP_PROTO_UDP if udp else dpkt.ip.IP_PROTO_TCP, data=layer,
        )  # fmt: skip
        frame = dpkt.ethernet.Ethernet(type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
        self.writer.writepkt(bytes(frame), ts=at)

    def close(self) -> None:
        self.file.close()


def rtp(ssrc: int, seq: int) -> bytes:
    return struct.pack("!BBHII", 0x80, 96, seq, seq * 3000, ssrc) + b"\x00" * 100


def dns_answer(name: str, address: str) -> bytes:
    import socket

    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00"
    question = labels + struct.pack("!HH", 1, 1)
    answer = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(address)
    return struct.pack("!HHHHHH", 7, 0x8180, 1, 1, 0, 0) + question + answer


@pytest.fixture
def call_pcap(tmp_path: Path) -> Path:
    """A page, a DNS answer naming a media host, its download, and a call's RTP."""
    path = tmp_path / "capture.pcap"
    pcap = Pcap(path)
    pcap.packet(100.0, BROWSER, SITE, b"GET / HTTP/1.1\r\n\r\n")  # the browser opens
    pcap.packet(100.1, SITE, BROWSER, b"x" * 2000)
    pcap.packet(101.0, ("127.0.0.1", 41000), ("127.0.0.53", 53), b"q", udp=True)
    pcap.packet(101.0, ("127.0.0.53", 53), ("127.0.0.1", 41000),
                dns_answer("media.example", "10.9.9.9"), udp=True)  # fmt: skip
    pcap.packet(101.5, ("127.0.0.1", 40001), ("10.9.9.9", 443), b"get")
    pcap.packet(102.5, ("10.9.9.9", 443), ("127.0.0.1", 40001), b"m" * 50_000)
    for seq in range(12):  # in the call: one stream each way, a stray packet
        pcap.packet(103.0 + seq / 100, BROWSER, PEER, rtp(1, seq), udp=True)
        pcap.packet(103.0 + seq / 100, PEER, BROWSER, rtp(2, seq), udp=True)
    pcap.packet(104.0, PEER, BROWSER, rtp(3, 0), udp=True)
    pcap.close()
    with path.open("ab") as out:  # a last packet cut short, as a stopped capture leaves it
        out.write(struct.pack("<IIII", 105, 0, 500, 500) + b"\x00" * 20)
    return path


STATES = [(101.2, "Watching"), (102.9, "In call")]


def test_the_figures_of_a_pcap_each_way_per_server_and_state(call_pcap: Path) -> None:
    traffic = summarise([call_pcap], STATES)
    document = traffic.document()
    assert document["packets"] == 2 + 2 + 2 + 25  # the cut-short packet is not one
    assert document["flows"] == 4  # the page, DNS, the media download, the call
    servers = {row["server"]: row for row in document["servers"]}
    media = servers["10.9.9.9:443 (media.example)"]
    assert media["down"] > 50_000 > media["up"] and media["flows"] == 1
    assert servers["127.0.0.1:8000"]["down"] > 2000
    states = {row["state"]: row for row in document["states"]}
    assert set(states) == {"(start_url)", "Watching", "In call"}
    assert states["Watching"]["down"] > 50_000  # the download, seen while Watching
    seconds = {name: row["seconds"] for name, row in states.items()}
    assert seconds == {"(start_url)": 1.2, "Watching": 1.7, "In call": 1.1}  # to the last
    watching = states["Watching"]
    assert watching["down_bps"] == round(watching["down"] * 8 / 1.7)
    streams = document["rtp_streams"]
    assert [(s["ssrc"], s["from"], s["packets"]) for s in streams] == [
        (1, "127.0.0.1:40000", 12),
        (2, "127.0.0.1:50000", 12),
    ]  # the stray packet of SSRC 3 is no stream
    assert summarise([call_pcap.with_name("none.pcap")]).document()["packets"] == 0


def test_expectations_met_and_short_name_their_figures(call_pcap: Path) -> None:
    traffic = summarise([call_pcap], STATES)
    met = [
        TrafficExpectation(state="Watching", host="media.example", down="50 kB"),
        TrafficExpectation(host="https://media.example/video", flows=1),
        TrafficExpectation(state="In call", rtp_streams=1),
        TrafficExpectation(host="localhost:8000", down=2000),
    ]
    assert shortfalls(traffic, met) == []
    short = [
        TrafficExpectation(state="In call", host="media.example", down="1 MB"),
        TrafficExpectation(state="Watching", rtp_streams=1, up="1 kB"),
        TrafficExpectation(host="{base_url}", down="1 kB"),
    ]
    found = shortfalls(traffic, short, {2: "http://127.0.0.1:9999"})
    assert found == [
        (0, "while 'In call', with media.example: received 0 B, expected at least 1 MB"),
        (1, "while 'Watching': sent 57 B, expected at least 1 kB; carried 0 RTP stream(s) "
            "one way and 0 the other, expected at least 1 each way"),
        (2, "with http://127.0.0.1:9999: received 0 B, expected at least 1 kB"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "expected"),
    [("500 kB", 500_000), ("2 MB", 2_000_000), ("1 MiB", 1_048_576), (1500, 1500),
     ("0.5mb", 500_000), ("12 B", 12), ("3", 3)],
)  # fmt: skip
def test_sizes(text: str | int, expected: int) -> None:
    assert size_bytes(text) == expected


def test_sizes_shown_and_hosts_read() -> None:
    assert [size_text(n) for n in (12, 12_345, 4_560_000)] == ["12 B", "12.3 kB", "4.56 MB"]
    assert host_matcher("http://127.0.0.1:8000/vod/") == ("127.0.0.1", 8000)
    assert host_matcher("https://Media.Example/x") == ("media.example", 443)
    assert host_matcher("cdn.example:8443") == ("cdn.example", 8443)
    assert host_matcher("[::1]:8000") == ("::1", 8000)
    assert host_matcher("cdn.example") == ("cdn.example", None)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{state: Watchng, down: 1 MB}",
         "9: expect_traffic: state 'Watchng' is not a state of this workflow (did you mean "
         "'Watching'?)"),
        ("{state: Watching, down: lots}", "9: expect_traffic.0.down: 'lots' is not a size"),
        ("{state: Watching}", "9: expect_traffic.0: names no figure: give at least one of"),
        ("{down: 1 MB, upp: 2 kB}",
         "9: unknown key 'upp' in expect_traffic[0]: did you mean 'up'?"),
    ],
)  # fmt: skip
def test_bad_expectations_fail_their_item_at_their_line(
    project: Project, entry: str, message: str
) -> None:
    project.workflow(
        "bad",
        "name: bad\nstart_url: '{base_url}/wiki/'\nstates:\n  - name: Watching\n"
        f"    end: done\n\n\nexpect_traffic:\n  - {entry}\n",
    )
    result = project.run()
    result.assert_outcomes(errors=1)
    assert f"bad.netgent.yaml:{message}" in result.stdout.str(), result.stdout.str()[-2000:]


def test_the_schema_lists_expect_traffic() -> None:
    field = Workflow.model_json_schema()["properties"]["expect_traffic"]
    assert "pcap" in field["description"]


# --------------------------------------------------------------------------- a player

PLAYER = """<!doctype html><title>Player</title>
<h1>Now showing</h1><button id=play>Play</button><p id=status>Paused</p>
<script>
// a segment player: while it plays it fetches a 64 kB segment every 200 ms
let timer = null;
document.querySelector('#play').onclick = () => {
  document.querySelector('#status').textContent = 'Playing';
  let n = 0;
  timer = setInterval(() => fetch('/segment?n=' + (n++), {cache: 'no-store'}), 200);
};
</script>"""


class PlayerApp:
    prefix = "/"

    def handle(self, req: Request) -> Response | None:
        if req.path == "/player":
            return Response.html(PLAYER)
        if req.path == "/segment":
            return Response(200, b"s" * 65_536, [("Content-Type", "video/mp2t")])
        return None


@pytest.fixture
def player_site() -> Iterator[str]:
    server = AppServer([PlayerApp()]).start()
    try:
        yield server.url
    finally:
        server.stop()


WATCH = """
name: {name}
category: video_on_demand
start_url: "{{base_url}}/player"
states:
  - name: Start
    triggers: [The player is shown]
    actions: [{action}]
  - name: Watching
    triggers: [The video is on]
    actions: [Wait 2 seconds]
    end: Watched
expect_traffic:
  - {{state: Watching, host: "{{base_url}}", down: 300 kB}}
"""


def watch_project(project: Project) -> None:
    for name, play in (("played", True), ("paused", False)):
        action = "Click the Play button" if play else "Wait 0.1 seconds"
        file = project.workflow(name, WATCH.format(name=name, action=action))
        start = [{"type": "click", "params": css("#play")}] if play else []
        start = start or [{"type": "wait", "params": {"seconds": 0.1}}]
        wait = [{"type": "wait", "params": {"seconds": 2}}]
        project.states(
            file,
            name,
            {"Start": ([element("h1")], start), "Watching": ([element("#status")], wait)},
        )


@needs_pcap
def test_a_video_that_never_plays_fails_by_its_figures_and_one_that_plays_passes(
    project: Project, player_site: str
) -> None:
    watch_project(project)
    result = project.run("--netgent-capture=pcap", "--netgent-artifacts=dataset",
                         base_url=player_site)  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    text = result.stdout.str()
    assert "traffic contradicts the run in workflow 'paused'" in text
    assert "expect_traffic[0] (paused.netgent.yaml:13) while 'Watching', with " in text
    assert "expected at least 300 kB" in text and "heal with" not in text
    rows = {r["workflow"]: r for r in read_rows(project.path / "dataset" / "manifest.csv")}
    assert rows["played"]["outcome"] == "passed" and rows["paused"]["outcome"] == "failed"
    assert int(rows["played"]["bytes_down"]) > 300_000 > int(rows["paused"]["bytes_down"])
    figures = json.loads((project.path / "dataset" / rows["played"]["traffic"]).read_text())
    watching = next(s for s in figures["states"] if s["state"] == "Watching")
    assert watching["down"] > 300_000 and figures["flows"] >= 1


def test_without_packet_capture_the_expectations_are_not_checked_and_the_report_says_so(
    project: Project, player_site: str
) -> None:
    watch_project(project)
    result = project.run("-rA", base_url=player_site)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*expect_traffic not checked: no packets are captured here*"])


# --------------------------------------------------------------------------- repeated runs


def rows_of(downs: list[int], network: str = "", workflow: str = "watch") -> list[dict[str, str]]:
    return [
        {"item": f"{workflow}.netgent.yaml::{workflow}[{network or 'none'}-{i}]",
         "workflow": workflow, "parameters": "", "network": network, "outcome": "passed",
         "bytes_down": str(down), "bytes_up": "2000"}
        for i, down in enumerate(downs)
    ]  # fmt: skip


def test_a_run_outside_the_spread_of_its_group_is_suspect_and_marked() -> None:
    rows = rows_of([1_000_000, 1_050_000, 980_000, 1_020_000, 1_010_000, 40_000])
    rows += rows_of([200_000, 210_000, 190_000, 205_000], network="3g")  # its own group
    rows += rows_of([5_000], workflow="once")  # one run: no spread to fall out of
    mark_suspects(rows)
    flagged = {r["item"]: r["suspect"] for r in rows if r["suspect"]}
    assert list(flagged) == ["watch.netgent.yaml::watch[none-5]"]
    assert flagged["watch.netgent.yaml::watch[none-5]"].startswith("bytes_down 40 kB outside ")
    assert "(median 1 MB of 6 runs)" in flagged["watch.netgent.yaml::watch[none-5]"]
    groups = {(g.workflow, g.network): g for g in spreads(rows)}
    assert len(groups[("watch", "3g")].items) == 4 and not groups[("watch", "3g")].suspect
    assert groups[("once", "")].figures["bytes_down"] == (5000, 5000, 5000)


def test_runs_that_moved_the_same_bytes_flag_none() -> None:
    rows = rows_of([100_000, 100_000, 100_000, 100_400])  # no IQR: a tenth of the median
    mark_suspects(rows)
    assert [r["suspect"] for r in rows] == ["", "", "", ""]
    failed = rows_of([100_000] * 4 + [1])
    failed[-1]["outcome"] = "failed"  # a failed run is no part of the spread
    mark_suspects(failed)
    assert [r["suspect"] for r in failed] == ["", "", "", "", ""]


def test_the_card_shows_each_groups_spread_and_its_suspects() -> None:
    from pytest_netgent.dataset import card

    rows = rows_of([1_000_000, 1_050_000, 980_000, 1_020_000, 40_000])
    text = card.markdown(card.summary(rows, {"run": "r"}))
    assert "## Traffic" in text
    assert (
        "| watch |  | unshaped | 5 | 1 MB (980 kB to 1.02 MB) | 2 kB (2 kB to 2 kB) | 1 |" in text
    )
    assert "- `watch.netgent.yaml::watch[none-4]`: bytes_down 40 kB outside" in text


def test_a_scenario_member_s_expectations_are_said_to_be_unchecked(
    project: Project, player_site: str
) -> None:
    watch_project(project)
    project.workflow(
        "together",
        "name: together\nscenario:\n  - {name: viewer, workflow: played.netgent.yaml::played}\n",
    )
    result = project.run("-rA", "-k", "together", base_url=player_site)
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["*expect_traffic not checked for member viewer: a scenario's*"])
