"""The network measurement steps, run with the real tools against 127.0.0.1 only: the
servers they measure (iperf3, an HTTP server) are started and stopped by the tests."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pytest_netgent.errors import NetgentError
from pytest_netgent.measure import STEP_PARAMS, STEPS, MeasureError, Peer, peers, run_step, summary

LOCAL = "127.0.0.1"
MIB = 1024 * 1024


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.bind((LOCAL, 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int) -> bool:
    """Whether a TCP socket listens on ``port`` (read from /proc: connecting would use
    up the one test a ``-1`` iperf3 server serves)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        if state == "0A" and int(local.split(":")[1], 16) == port:
            return True
    return False


def processes_with(*args: str) -> list[int]:
    """The processes whose command line holds ``args`` in a row."""
    wanted = "\0".join(args).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if wanted in cmdline:
            found.append(int(entry.name))
    return found


@pytest.fixture
def iperf_server() -> Iterator[int]:
    """A one-test iperf3 server on 127.0.0.1 (a free port), stopped after the test."""
    port = free_port()
    with subprocess.Popen(
        ["iperf3", "-s", "-1", "-B", LOCAL, "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as server:
        try:
            limit = time.monotonic() + 15
            while not listening(port):
                assert server.poll() is None, "iperf3 -s exited"
                assert time.monotonic() < limit, "iperf3 -s did not listen within 15 s"
                time.sleep(0.05)
            yield port
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


class Handler(BaseHTTPRequestHandler):
    """``/big``: a 1 MiB body; anything else: 404."""

    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/big":
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(MIB))
        self.end_headers()
        self.wfile.write(b"x" * MIB)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_url() -> Iterator[str]:
    """The base URL of a local HTTP server, stopped after the test."""
    server = ThreadingHTTPServer((LOCAL, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{LOCAL}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_the_steps_and_their_params() -> None:
    assert STEPS == ("ping", "iperf", "ndt", "wget")
    assert STEP_PARAMS["ping"] == (
        ("host",),
        ("count", "interval_seconds", "timeout_seconds", "packet_size"),
    )
    assert STEP_PARAMS["iperf"][0] == ("host",)
    assert STEP_PARAMS["wget"][0] == ("url",)
    assert STEP_PARAMS["ndt"] == (
        (),
        (
            "timeout",
            "download",
            "upload",
            "server",
            "service_url",
            "scheme",
            "no_verify",
            "client_name",
        ),
    )
    assert issubclass(MeasureError, NetgentError)


def test_ping_local(tmp_path: Path) -> None:
    result = run_step("ping", {"host": LOCAL, "count": 3, "interval_seconds": 0.2}, folder=tmp_path)
    assert result["step"] == "ping"
    assert result["command"][1:] == ["-c", "3", "-i", "0.2", LOCAL]
    assert result["returncode"] == 0
    assert result["started"].endswith("+00:00")
    assert (result["transmitted"], result["received"], result["loss_pct"]) == (3, 3, 0.0)
    assert [r["seq"] for r in result["replies"]] == [1, 2, 3]
    assert all(r["ttl"] > 0 and r["time_ms"] >= 0 for r in result["replies"])
    assert 0 <= result["rtt_min_ms"] <= result["rtt_avg_ms"] <= result["rtt_max_ms"]
    assert result["rtt_mdev_ms"] >= 0
    json.dumps(result)
    line = summary(result)
    assert line.startswith(f"ping {LOCAL}: 3/3 replies, rtt min/avg/max ")
    assert line.endswith(" ms")


def test_ping_params_as_text(tmp_path: Path) -> None:
    params = {
        "host": LOCAL,
        "count": "3",
        "interval_seconds": "0.2",
        "timeout_seconds": "none",
        "packet_size": "56.0",
    }
    result = run_step("ping", params, folder=tmp_path)
    assert result["command"][1:] == ["-c", "3", "-i", "0.2", "-s", "56", LOCAL]
    assert result["received"] == 3


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "the param 'host' is missing"),
        ({"host": "null"}, "the param 'host' is missing"),
        ({"host": LOCAL, "count": "many"}, "count is 'many', not a number"),
        ({"host": LOCAL, "count": "0"}, "give at least 1"),
        ({"host": LOCAL, "cnt": 3}, "unknown param 'cnt'"),
    ],
)
def test_bad_ping_params(tmp_path: Path, params: dict[str, object], message: str) -> None:
    with pytest.raises(MeasureError, match=r"^ping step: ") as caught:
        run_step("ping", params, folder=tmp_path)
    assert message in str(caught.value)


def test_an_unknown_step(tmp_path: Path) -> None:
    with pytest.raises(MeasureError, match="'traceroute' is not a measurement step"):
        run_step("traceroute", {}, folder=tmp_path)


def test_iperf_tcp(tmp_path: Path, iperf_server: int) -> None:
    params = {"host": LOCAL, "port": str(iperf_server), "duration_seconds": "1"}
    result = run_step("iperf", params, folder=tmp_path, deadline=time.monotonic() + 60)
    assert result["command"][1:] == ["-J", "-c", LOCAL, "-p", str(iperf_server), "-t", "1"]
    assert (result["protocol"], result["reverse"], result["port"]) == ("tcp", False, iperf_server)
    assert result["intervals"]
    assert all(i["bytes"] > 0 and i["bits_per_second"] > 0 for i in result["intervals"])
    assert result["sent_bytes"] > 0 and result["received_bytes"] > 0
    assert result["sent_bps"] > 0 and result["received_bps"] > 0
    assert result["retransmits"] is not None
    json.dumps(result)
    line = summary(result)
    assert line.startswith(f"iperf {LOCAL}:{iperf_server}: ")
    assert " sent, " in line and " received over " in line


def test_iperf_reverse(tmp_path: Path, iperf_server: int) -> None:
    params = {"host": LOCAL, "port": iperf_server, "duration_seconds": 1, "reverse": "yes"}
    result = run_step("iperf", params, folder=tmp_path)
    assert "-R" in result["command"]
    assert result["reverse"] is True
    assert result["intervals"] and result["received_bytes"] > 0


def test_iperf_udp(tmp_path: Path, iperf_server: int) -> None:
    params = {
        "host": LOCAL,
        "port": iperf_server,
        "duration_seconds": 1,
        "udp": "true",
        "bitrate": "10M",
        "interval_seconds": "0.5",
    }
    result = run_step("iperf", params, folder=tmp_path)
    assert result["command"][-5:] == ["-i", "0.5", "-u", "-b", "10M"]
    assert result["protocol"] == "udp"
    assert result["intervals"] and all(i["bytes"] > 0 for i in result["intervals"])
    assert result["sent_bytes"] > 0 and result["received_bytes"] > 0
    assert result["jitter_ms"] is not None and result["lost_percent"] is not None
    assert "retransmits" not in result
    assert "(udp)" in summary(result) and "jitter" in summary(result)


def test_iperf_without_a_server(tmp_path: Path) -> None:
    port = free_port()
    with pytest.raises(MeasureError) as caught:
        run_step("iperf", {"host": LOCAL, "port": port, "duration_seconds": 1}, folder=tmp_path)
    message = str(caught.value)
    assert message.startswith("iperf step: ")
    assert "Connection refused" in message
    assert f"is `iperf3 -s -p {port}` running on {LOCAL}?" in message


def test_wget_discards_and_counts(tmp_path: Path, http_url: str) -> None:
    result = run_step("wget", {"url": f"{http_url}/big"}, folder=tmp_path)
    assert result["bytes"] == MIB
    assert result["output_file"] is None
    assert result["seconds"] > 0 and result["bits_per_second"] > 0
    assert list(tmp_path.iterdir()) == []
    assert result["command"][1:3] == ["--no-verbose", "-O"]
    json.dumps(result)
    assert summary(result).startswith(f"wget {http_url}/big: 1048576 bytes in ")


def test_wget_keeps_output_file(tmp_path: Path, http_url: str) -> None:
    params = {
        "url": f"{http_url}/big",
        "output_file": "downloads/big.bin",
        "timeout_seconds": "10",
        "tries": "2",
        "user_agent": "netgent-test",
    }
    result = run_step("wget", params, folder=tmp_path)
    kept = tmp_path / "downloads" / "big.bin"
    assert result["output_file"] == str(kept.resolve())
    assert kept.stat().st_size == MIB == result["bytes"]
    written = Path(result["command"][3])  # written beside it, moved once it is whole
    assert written.parent == kept.resolve().parent and written.suffix == ".part"
    assert result["command"][4:] == [
        "--timeout",
        "10",
        "--tries",
        "2",
        "--user-agent",
        "netgent-test",
        f"{http_url}/big",
    ]
    assert sorted(p.name for p in kept.parent.iterdir()) == ["big.bin"]
    with pytest.raises(MeasureError, match="leaves the item's folder"):
        run_step(
            "wget", {"url": f"{http_url}/big", "output_file": str(tmp_path / "elsewhere.bin")},
            folder=tmp_path / "f",
        )  # fmt: skip


def test_a_failed_download_leaves_a_kept_file_as_it_was(tmp_path: Path, http_url: str) -> None:
    (tmp_path / "x.bin").write_bytes(b"before")
    with pytest.raises(MeasureError, match="404"):
        run_step("wget", {"url": f"{http_url}/missing", "output_file": "x.bin"}, folder=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["x.bin"]
    assert (tmp_path / "x.bin").read_bytes() == b"before"


def test_wget_output_file_stays_in_the_folder(tmp_path: Path) -> None:
    params = {"url": "http://127.0.0.1:9/", "output_file": "../out.bin"}
    with pytest.raises(MeasureError, match="leaves the item's folder"):
        run_step("wget", params, folder=tmp_path / "inside")


def test_wget_404(tmp_path: Path, http_url: str) -> None:
    with pytest.raises(MeasureError) as caught:
        run_step("wget", {"url": f"{http_url}/missing"}, folder=tmp_path)
    message = str(caught.value)
    assert message.startswith("wget step: the server answered with an error (wget exited 8)")
    assert "404" in message
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(MeasureError, match="404"):
        run_step("wget", {"url": f"{http_url}/missing", "output_file": "x.bin"}, folder=tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_redact_hides_a_secret(tmp_path: Path, http_url: str) -> None:
    def redact(text: str) -> str:
        return text.replace("s3cr3t", "***")

    result = run_step(
        "wget", {"url": f"{http_url}/big?token=s3cr3t"}, folder=tmp_path, redact=redact
    )
    assert "s3cr3t" not in json.dumps(result)
    assert result["command"][-1] == f"{http_url}/big?token=***"
    assert "***" in summary(result)
    with pytest.raises(MeasureError) as caught:
        run_step(
            "wget", {"url": f"{http_url}/missing?token=s3cr3t"}, folder=tmp_path, redact=redact
        )
    assert "s3cr3t" not in str(caught.value)
    assert "token=***" in str(caught.value)


@pytest.mark.parametrize(
    ("kind", "params", "package"),
    [
        ("ping", {"host": LOCAL}, "apt-get install -y iputils-ping"),
        ("iperf", {"host": LOCAL}, "apt-get install -y iperf3"),
        ("wget", {"url": "http://127.0.0.1:9/"}, "apt-get install -y wget"),
    ],
)
def test_a_missing_tool(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    params: dict[str, object],
    package: str,
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(MeasureError) as caught:
        run_step(kind, params, folder=tmp_path)
    assert str(caught.value).startswith(f"{kind} step: the command ")
    assert "is not on PATH" in str(caught.value) and package in str(caught.value)


def test_ndt_without_a_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(MeasureError) as caught:
        run_step("ndt", {}, folder=tmp_path)
    message = str(caught.value)
    assert "`ndt7-client`" in message
    assert "go install github.com/m-lab/ndt7-client-go/cmd/ndt7-client@latest" in message
    assert "put a client named ndt7-client on PATH" in message


NDT_SUMMARY = {
    "ServerFQDN": "ndt-mlab1-lga0t.mlab-oti.measurement-lab.org",
    "ServerIP": "192.0.2.7",
    "ClientIP": "198.51.100.4",
    "DownloadUUID": "ndt-abc_123",
    "Download": {
        "Throughput": {"Value": 94.1, "Unit": "Mbit/s"},
        "Latency": {"Value": 12.5, "Unit": "ms"},
        "Retransmission": {"Value": 0.25, "Unit": "%"},
    },
    "Upload": {"Throughput": {"Value": 1230, "Unit": "kbit/s"}},
}


def fake_ndt(folder: Path, name: str = "ndt7-client", summary: bool = True) -> Path:
    """A stand-in for the Go client: it writes its arguments to ``args`` and prints JSON
    lines as the real one does with ``-format json``."""
    folder.mkdir(exist_ok=True)
    args = folder / "args"
    lines = [
        {"Key": "starting", "Value": {"Test": "download"}},
        {"Key": "connected", "Value": {"Server": NDT_SUMMARY["ServerFQDN"], "Test": "download"}},
        {"Key": "error", "Value": {"Failure": "upload: timed out", "Test": "upload"}},
    ]
    if summary:
        lines.append(NDT_SUMMARY)
    printed = "\n".join(f"printf '%s\\n' '{json.dumps(line)}'" for line in lines)
    script = folder / name
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{args}'\n{printed}\n")
    script.chmod(0o755)
    return args


def test_ndt_with_a_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = fake_ndt(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    params = {
        "timeout": "30",
        "upload": "false",
        "server": "ndt.example.org",
        "scheme": "WSS",
        "no_verify": True,
        "client_name": "netgent",
    }
    result = run_step("ndt", params, folder=tmp_path)
    expected = ["-format", "json", "-timeout", "30s", "-upload=false", "-server"]
    expected += ["ndt.example.org", "-scheme", "wss", "-no-verify", "-client-name", "netgent"]
    assert args.read_text().splitlines() == expected
    assert result["command"][1:] == expected
    assert result["download_mbps"] == 94.1
    assert result["download_latency_ms"] == 12.5
    assert result["download_retransmission_pct"] == 0.25
    assert result["upload_mbps"] == pytest.approx(1.23)
    assert result["server"] == NDT_SUMMARY["ServerFQDN"]
    assert result["summary"] == NDT_SUMMARY
    assert result["errors"] == ["upload: timed out"]
    json.dumps(result)
    assert summary(result) == (
        f"ndt {NDT_SUMMARY['ServerFQDN']}: 94.10 Mbit/s down, 1.23 Mbit/s up, latency 12.5 ms"
    )


def test_ndt_by_netgent_name_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = fake_ndt(tmp_path / "bin", name="ndt-client")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    result = run_step("ndt", {"download": "none"}, folder=tmp_path)
    assert args.read_text().splitlines() == ["-format", "json", "-timeout", "55s"]
    assert result["download_mbps"] == 94.1


def test_ndt_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ndt(tmp_path / "bin", summary=False)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(MeasureError, match="download and upload are both false"):
        run_step("ndt", {"download": False, "upload": "no"}, folder=tmp_path)
    with pytest.raises(MeasureError, match="is not ws or wss"):
        run_step("ndt", {"scheme": "http"}, folder=tmp_path)
    with pytest.raises(MeasureError, match="no summary: upload: timed out"):
        run_step("ndt", {}, folder=tmp_path)


def test_a_deadline_stops_the_tool(tmp_path: Path) -> None:
    params = {"host": LOCAL, "count": 100, "interval_seconds": 0.2, "packet_size": 91}
    begin = time.monotonic()
    with pytest.raises(MeasureError, match=r"^ping step: out of time"):
        run_step("ping", params, folder=tmp_path, deadline=time.monotonic() + 1)
    assert time.monotonic() - begin < 10
    assert processes_with("-c", "100", "-i", "0.2", "-s", "91") == []


def test_a_stop_event_stops_the_tool(tmp_path: Path) -> None:
    params = {"host": LOCAL, "count": 100, "interval_seconds": 0.2, "packet_size": 93}
    stop = threading.Event()
    timer = threading.Timer(0.5, stop.set)
    begin = time.monotonic()
    timer.start()
    try:
        with pytest.raises(MeasureError, match=r"^ping step: stopped after .* \(the run was"):
            run_step("ping", params, folder=tmp_path, stop=stop)
    finally:
        timer.cancel()
    assert time.monotonic() - begin < 10
    assert processes_with("-c", "100", "-i", "0.2", "-s", "93") == []


def test_an_interrupt_stops_the_tool(tmp_path: Path) -> None:
    """Ctrl-C while a tool runs: the interrupt goes on up, the tool does not live on."""

    def interrupt(number: int, frame: object) -> None:
        raise KeyboardInterrupt

    params = {"host": LOCAL, "count": 100, "interval_seconds": 0.2, "packet_size": 97}
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.6)
        with pytest.raises(KeyboardInterrupt):
            run_step("ping", params, folder=tmp_path, deadline=time.monotonic() + 30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert processes_with("-c", "100", "-i", "0.2", "-s", "97") == []


def test_a_set_stop_event_starts_nothing(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(MeasureError, match=r"stopped after 0\.0 s"):
        run_step("ping", {"host": LOCAL, "packet_size": 95}, folder=tmp_path, stop=stop)
    assert processes_with("-s", "95") == []


def test_summaries_of_given_results() -> None:
    ping = {
        "step": "ping",
        "host": LOCAL,
        "transmitted": 3,
        "received": 0,
        "rtt_avg_ms": None,
    }
    assert summary(ping) == f"ping {LOCAL}: 0/3 replies"
    iperf = {
        "step": "iperf",
        "host": LOCAL,
        "port": 5201,
        "protocol": "tcp",
        "sent_bps": 9.41e9,
        "received_bps": 9.4e9,
        "seconds": 1.0,
    }
    assert summary(iperf) == (
        f"iperf {LOCAL}:5201: 9.41 Gbit/s sent, 9.40 Gbit/s received over 1.0 s"
    )
    wget = {"step": "wget", "url": "http://x/", "bytes": MIB, "seconds": 0.01}
    wget["bits_per_second"] = MIB * 8 / 0.01
    assert summary(wget) == "wget http://x/: 1048576 bytes in 0.01 s (838.86 Mbit/s)"


@pytest.mark.parametrize(
    ("kind", "params", "expected"),
    [
        ("ping", {"host": "127.0.0.1", "count": "3"}, [Peer("127.0.0.1")]),
        ("iperf", {"host": "10.0.0.9"}, [Peer("10.0.0.9", 5201)]),
        ("iperf", {"host": "h", "port": "5999", "udp": "true"},
         [Peer("h", 5999), Peer("h", None, udp=True)]),
        ("wget", {"url": "http://127.0.0.1:8123/a"}, [Peer("127.0.0.1", 8123)]),
        ("wget", {"url": "https://example.org/x"}, [Peer("example.org", 443)]),
        ("wget", {"url": "ftp://files.example.org/x"}, [Peer("files.example.org", 21)]),
        ("ndt", {}, [Peer("locate.measurementlab.net", 443)]),
        ("ndt", {"server": "ndt.example.org:3001"}, [Peer("ndt.example.org", 3001)]),
        ("ndt", {"server": "[::1]", "scheme": "ws"}, [Peer("::1", 80)]),
        ("ndt", {"service_url": "ws://127.0.0.1:8080/ndt/v7/download?x=1"},
         [Peer("127.0.0.1", 8080)]),
    ],
)  # fmt: skip
def test_who_each_step_talks_to(kind: str, params: dict[str, str], expected: list[Peer]) -> None:
    """What a worker in its own network namespace must open before the step runs: a
    bridge to a host-loopback TCP port, or its uplink."""
    assert peers(kind, params) == expected


def test_who_a_step_talks_to_is_read_as_the_step_reads_it() -> None:
    with pytest.raises(MeasureError, match="the param 'host' is missing"):
        peers("iperf", {})
    with pytest.raises(MeasureError, match="unknown param 'hots'"):
        peers("ping", {"hots": "a"})
    with pytest.raises(MeasureError, match="port is not a number"):
        peers("wget", {"url": "http://127.0.0.1:http/"})
