"""The worker's network plumbing seen from outside: what a shaped uplink forks, what it
leaves of the host's forwarding, what the shaped loopback measures, and the loopback
bridge under a stalled reader and a half-closed connection.

The uplink runs in a scratch namespace that plays the host (``ip_forward`` there is the
test's to set); the bridge's servers listen on this machine's 127.0.0.1, on free ports,
and stop with the test. Every driver imports the package this test imports.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_netgent
from pytest_netgent.network import netns
from pytest_netgent.plugin.shaping import unavailable

from .helpers import Project, element

needs_namespaces = pytest.mark.skipif(bool(netns.unavailable()), reason=netns.unavailable())
needs_shaping = pytest.mark.skipif(bool(unavailable("")), reason=unavailable(""))

ROOT = Path(pytest_netgent.__file__).resolve().parents[1]

SCRATCH_HOST = """
import ctypes, json, subprocess, sys
from pathlib import Path

# a network namespace of this process's own plays the host: its forwarding is ours
assert ctypes.CDLL(None, use_errno=True).unshare(0x40000000) == 0
ipv4 = Path("/proc/sys/net/ipv4")
(ipv4 / "ip_forward").write_text("0")
(ipv4 / "conf/lo/forwarding").write_text("1")  # one interface forwarding on its own
worker = subprocess.run([sys.executable, sys.argv[1]], capture_output=True, text=True)
print(json.dumps({
    "worker": worker.stdout, "stderr": worker.stderr[-3000:],
    "ip_forward": (ipv4 / "ip_forward").read_text().strip(),
    "lo_forwarding": (ipv4 / "conf/lo/forwarding").read_text().strip(),
}))
"""

SHAPED_WORKER = """
import atexit, json, os, socket, sys, threading, time

calls = []


def audit(event, args):
    if event == "subprocess.Popen":
        calls.append(os.path.basename(str(args[1][0] if args[1] else args[0])))
    elif event in ("os.fork", "os.forkpty", "os.posix_spawn"):
        calls.append(event)


sys.addaudithook(audit)
phases = {}
# registered first, so it runs last: after the uplink is removed at exit
atexit.register(lambda: print(json.dumps({"phases": phases, "calls_at_exit": calls}), flush=True))

from pytest_netgent.network import netns
from pytest_netgent.network.conditions import parse
from pytest_netgent.network.link import Link

assert netns.isolate() == ""
assert netns.ensure_uplink() == "", netns.uplink_error
phases["uplink"], calls = calls, []
forward = netns.host_call(lambda: open("/proc/sys/net/ipv4/ip_forward").read().strip())
link = Link()
link.apply(parse("rate=2mbit,delay=40ms,jitter=10ms,loss=1"), [])
phases["apply"], calls = calls, []

server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(64)


def serve():
    while True:
        conn, _ = server.accept()
        if conn.recv(1) == b"d":
            conn.sendall(b"x" * 300_000)
        conn.close()


threading.Thread(target=serve, daemon=True).start()
address = server.getsockname()
rtts = []
for _ in range(25):
    start = time.monotonic()
    conn = socket.create_connection(address)
    rtts.append(time.monotonic() - start)
    conn.sendall(b"n")
    conn.close()
conn = socket.create_connection(address)
conn.sendall(b"d")
got, first, last = 0, None, 0.0
while data := conn.recv(65536):
    now = time.monotonic()
    first = first or now
    got, last = got + len(data), now
mechanism = getattr(link, "mechanism", "nfqueue")
phases["measure"], calls = calls, []
link.clear()
phases["clear"], calls = calls, []
print(json.dumps({"forward": forward, "rtts": rtts, "bytes": got, "seconds": last - first,
                  "mechanism": mechanism}), flush=True)
"""

FORKERS = {"ip", "tc", "nsenter"}


@pytest.fixture(scope="module")
def shaped_uplink(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A worker in a scratch host: its uplink, ``rate=2mbit,delay=40ms,jitter=10ms,loss=1``
    on, measured, off, and the uplink removed at its exit; what it forked in each phase and
    what the host's forwarding was then."""
    folder = tmp_path_factory.mktemp("uplink")
    (folder / "host.py").write_text(SCRATCH_HOST)
    (folder / "worker.py").write_text(SHAPED_WORKER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    answer = subprocess.run(
        [sys.executable, str(folder / "host.py"), str(folder / "worker.py")],
        capture_output=True, text=True, env=env, cwd=folder, timeout=240,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    host = json.loads(answer.stdout)
    lines = [json.loads(line) for line in host["worker"].splitlines() if line.startswith("{")]
    assert len(lines) == 2, host
    return {**host, **lines[0], **lines[1]}


@needs_shaping
def test_a_shaped_uplink_forks_no_ip_tc_or_nsenter(shaped_uplink: dict[str, Any]) -> None:
    """Links, addresses, routes and qdiscs go over netlink: setting up an uplink, putting
    a condition on it and the loopback, taking it off and removing the uplink fork no
    ``ip``, ``tc`` or ``nsenter`` (there were 30), only the iptables and nft batches."""
    phases = {**shaped_uplink["phases"], "exit": shaped_uplink["calls_at_exit"]}
    forked = {phase: [c for c in calls if c in FORKERS] for phase, calls in phases.items()}
    assert forked == {phase: [] for phase in phases}, phases
    batches = {"iptables-restore", "ip6tables-restore", "iptables", "nft", "os.posix_spawn"}
    assert {c for calls in phases.values() for c in calls} <= batches, phases


@needs_shaping
def test_the_hosts_forwarding_is_put_back_after_the_last_uplink(
    shaped_uplink: dict[str, Any],
) -> None:
    """The uplink switches the host's IPv4 forwarding on while it is up; once it is gone
    the host has what it had: forwarding off, and one interface's own value too."""
    assert shaped_uplink["forward"] == "1"
    assert shaped_uplink["ip_forward"] == "0", "the host's ip_forward was left on"
    assert shaped_uplink["lo_forwarding"] == "1"


@needs_shaping
def test_the_shaped_loopback_measures_the_asked_delay_jitter_and_rate(
    shaped_uplink: dict[str, Any],
) -> None:
    """delay=40ms,jitter=10ms each way: every handshake takes 80 ms to 100 ms plus the
    machine's own latency, and they differ; 2 Mbit/s down: 300 kB take about 1.2 s. The
    mechanism that gave them is said (netem where the kernel has it)."""
    rtts = sorted(shaped_uplink["rtts"])
    assert len(rtts) == 25 and rtts[0] >= 0.080, rtts
    # a handshake lost (1% each way) is sent again after a second: leave those out
    kept = [r for r in rtts if r < 0.5]
    assert len(kept) >= 20 and kept[0] <= 0.100 + 0.030, rtts  # load only adds to the rest
    assert kept[-1] - kept[0] >= 0.004, f"no jitter: {rtts}"
    assert shaped_uplink["bytes"] == 300_000
    rate = shaped_uplink["bytes"] * 8 / shaped_uplink["seconds"]
    assert 1_200_000 <= rate <= 2_400_000, rate
    from pytest_netgent.network import netem

    assert shaped_uplink["mechanism"] == ("nfqueue" if netem.unavailable() else "netem")


NETEM_WORKER = """
import json, subprocess

from pytest_netgent.network import netns
from pytest_netgent.system import leftovers
from pytest_netgent.network.conditions import parse
from pytest_netgent.network import netem, netlink
from pytest_netgent.network.link import Link

# stand-ins for what a kernel without netem and fw lacks: an HTB where the netem goes,
# and a redirect of every packet where fw would pick the marked ones
netem.unavailable = lambda: ""
netlink.Netlink.netem = lambda self, index, name, *_: self.htb(index, name, 1, [(1, 10**9, 100)])
redirect = netlink.Netlink.redirect_ingress
netlink.Netlink.redirect_ingress = lambda self, i, n, to, mark=None, prio=1: redirect(
    self, i, n, to, None, prio
)
assert netns.isolate() == "" and netns.ensure_uplink() == ""


def seen():
    def devices():
        with netlink.opened() as nl:
            return {name: sorted(nl.qdiscs(name)) for name in nl.names()}

    rules = subprocess.run(["iptables-save", "-t", "mangle"], capture_output=True, text=True)
    return {
        "here": devices(), "host": netns.host_call(devices), "rules": rules.stdout,
        "host_rules": netns.in_host("iptables-save", "-t", "mangle"),
        "ledger": (leftovers.LEDGER / leftovers.owner_mark()).read_text().splitlines(),
    }


link = Link()
link.apply(parse("rate=20mbit,delay=40ms,jitter=5ms,loss=1"), [])
held = {"mechanism": link.mechanism, **seen()}
link.clear()
print(json.dumps({"pid": __import__("os").getpid(), "held": held, "cleared": seen()}))
"""


@needs_shaping
def test_the_netem_path_comes_and_goes_whole(tmp_path: Path) -> None:
    """Where the kernel has netem, delay, jitter and loss come from netems on ifb devices
    (this kernel has none: an HTB stands in for each, and every packet is redirected where
    ``fw`` would pick the marked ones): one per direction on the loopback, one behind the
    uplink on each side; no iptables drop or NFQUEUE; the host's ifb is on the ledger while
    it exists; all of it goes with the condition."""
    (tmp_path / "host.py").write_text(SCRATCH_HOST)
    (tmp_path / "worker.py").write_text(NETEM_WORKER)
    answer = subprocess.run(
        [sys.executable, str(tmp_path / "host.py"), str(tmp_path / "worker.py")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    host = json.loads(answer.stdout)
    out = json.loads(host["worker"].splitlines()[-1])
    pid, held, cleared = out["pid"], out["held"], out["cleared"]
    assert held["mechanism"] == "netem"
    for name in ("ngup", "ngdown", "ngwin"):
        assert held["here"][name] == ["htb", "pfifo"], held["here"]
    assert "ingress" in held["here"]["lo"] and "ingress" in held["here"][f"ngw{pid}"]
    assert held["host"][f"ngd{pid}"] == ["htb", "pfifo"] and "ingress" in held["host"][f"ngh{pid}"]
    assert f"link ngd{pid}" in held["ledger"]
    for rules in (held["rules"], held["host_rules"]):
        assert "NFQUEUE" not in rules and "statistic" not in rules, rules
    assert "CLASSIFY" in held["rules"]  # the rate's classes still come from the marks
    assert set(cleared["here"]) == {"lo", f"ngw{pid}"}, cleared["here"]
    assert set(cleared["host"]) == {"lo", f"ngh{pid}"}, cleared["host"]
    assert cleared["here"]["lo"] == ["noqueue"] and cleared["host"][f"ngh{pid}"] == ["noqueue"]
    assert f"link ngd{pid}" not in cleared["ledger"] and "NETGENT" not in cleared["rules"]


BRIDGED_CLIENT = """
import json, socket, sys, time

from pytest_netgent.network import netns

assert netns.isolate() == ""
url = sys.argv[1]
assert netns.bridge().reach(url) == ""
address = ("127.0.0.1", int(url.rsplit(":", 1)[1]))
out = {}
if sys.argv[2] == "stall":
    stalled = socket.create_connection(address)  # never read while the other one runs
    time.sleep(1.5)
    other = socket.create_connection(address, timeout=5)
    got, end = 0, time.monotonic() + 2.0
    try:
        while time.monotonic() < end:
            got += len(other.recv(65536))
    except TimeoutError:
        pass
    out["other"] = got
    stalled.settimeout(5)
    out["stalled"] = len(stalled.recv(65536))  # held back, not dropped
else:
    conn = socket.create_connection(address, timeout=10)
    conn.sendall(b"hello")
    conn.shutdown(socket.SHUT_WR)
    reply = b""
    try:
        while data := conn.recv(65536):
            reply += data
        out["closed"] = True  # the server's close came through as an end of stream
    except OSError as exc:
        out["closed"] = str(exc)
    out["reply"] = reply.decode()
print(json.dumps(out), flush=True)
"""


class Streams(socketserver.ThreadingTCPServer):
    """A server on 127.0.0.1 whose handler is given as a function of the socket."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, handle: Any) -> None:
        self.stop = threading.Event()
        self.seen: list[bytes] = []
        self.handle = handle
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(socketserver.BaseRequestHandler):
    server: Streams

    def handle(self) -> None:
        self.server.handle(self.server, self.request)


@pytest.fixture
def streams() -> Iterator[list[Streams]]:
    started: list[Streams] = []
    yield started
    for server in started:
        server.stop.set()
        server.shutdown()
        server.server_close()


def start(streams: list[Streams], handle: Any) -> Streams:
    server = Streams(handle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    streams.append(server)
    return server


def bridged(url: str, mode: str, tmp_path: Path) -> dict[str, Any]:
    """Run the client in a namespace of its own, reaching ``url`` through its bridge."""
    script = tmp_path / "client.py"
    script.write_text(BRIDGED_CLIENT)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    answer = subprocess.run(
        [sys.executable, str(script), url, mode],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr[-3000:]
    result: dict[str, Any] = json.loads(answer.stdout.splitlines()[-1])
    return result


def endless(server: Streams, sock: socket.socket) -> None:
    """Send until the client goes."""
    chunk = b"x" * 65536
    try:
        while not server.stop.is_set():
            sock.sendall(chunk)
    except OSError:
        pass


def echo_after_eof(server: Streams, sock: socket.socket) -> None:
    """Read the whole request (until the client's end of stream), then reply and close."""
    request = b""
    while data := sock.recv(65536):
        request += data
    server.seen.append(request)
    sock.sendall(b"reply:" + request)


@needs_namespaces
def test_a_stalled_reader_does_not_stall_another_bridged_connection(
    streams: list[Streams], tmp_path: Path
) -> None:
    """Two connections through the bridge to a server that sends without end: the first
    client never reads, yet the second gets megabytes meanwhile (it got nothing: the
    bridge's one thread blocked writing to the first); the first is held back, not
    dropped."""
    server = start(streams, endless)
    out = bridged(server.url, "stall", tmp_path)
    assert out["other"] >= 1_000_000, out
    assert out["stalled"] > 0, out


@needs_namespaces
def test_a_bridged_connection_half_closes(streams: list[Streams], tmp_path: Path) -> None:
    """The client sends its request and shuts down its sending side; the server reads to
    the end, replies and closes; the client gets the reply, then the end of the stream
    (the bridge closed both sides at the client's end of stream, and the reply was lost)."""
    server = start(streams, echo_after_eof)
    out = bridged(server.url, "half-close", tmp_path)
    assert out == {"reply": "reply:hello", "closed": True}
    assert server.seen == [b"hello"]


class FakeKernel:
    """A :class:`~pytest_netgent.network.netem.Shaper` that records what it is asked and
    refuses ``refuse`` with ``code``."""

    def __init__(self, refuse: str = "", code: int = 0) -> None:
        self.refuse, self.code = refuse, code
        self.calls: list[tuple[Any, ...]] = []
        self.devices: list[str] = []

    def _answer(self, what: str, *args: Any) -> None:
        self.calls.append((what, *args))
        if what == self.refuse:
            raise OSError(self.code, f"add {what}: {os.strerror(self.code)}")

    def ifb(self, name: str) -> int:
        self._answer("ifb", name)
        self.devices.append(name)
        return len(self.devices)

    def netem(self, index: int, name: str, delay_us: int, jitter_us: int, loss: float,
              limit: int) -> None:  # fmt: skip
        self._answer("netem", name, delay_us, jitter_us, loss)

    def redirect_ingress(self, index: int, name: str, to: int, mark: int | None = None,
                         prio: int = 1) -> None:  # fmt: skip
        self._answer("redirect", name, self.devices[to - 1], mark)


def test_netem_is_detected_from_the_kernels_answer() -> None:
    """The probe makes what the netem path makes (an ifb, a netem on it, the ingress
    redirect by mark); a kernel without netem (ENOENT: no such qdisc kind), or without the
    ``fw`` classifier, sends the link to its delay line and says why."""
    from pytest_netgent.network.netem import probe

    kernel = FakeKernel()
    assert probe(kernel) == ""
    assert kernel.calls == [
        ("ifb", "ngprobe0"),
        ("ifb", "ngprobe1"),
        ("netem", "ngprobe1", 1000, 0, 0.0),
        ("redirect", "ngprobe0", "ngprobe1", 1),
    ]
    for refuse, code in (("netem", errno.ENOENT), ("redirect", errno.ENOENT),
                         ("ifb", errno.EOPNOTSUPP)):  # fmt: skip
        why = probe(FakeKernel(refuse, code))
        assert why == (
            f"this kernel cannot delay packets with netem on ingress "
            f"([Errno {code}] add {refuse}: {os.strerror(code)})"
        )


def test_the_netem_request_keeps_order_and_draws_jitter_above_the_delay() -> None:
    """netem draws from ``latency ± jitter``: the request asks for ``delay + jitter/2 ±
    jitter/2``, so each packet waits between delay and delay + jitter, as in the delay
    line; its own rate (4 GB/s) makes packets leave in order."""
    from pytest_netgent.network.netlink import netem_options

    options = netem_options(40_000, 10_000, 1.0, 65536, ticks_per_us=15.625)
    assert options["delay"] == 45_000 * 15.625 and options["jitter"] == 5_000 * 15.625
    assert options["loss"] == round((2**32 - 1) / 100) and options["limit"] == 65536
    ((name, rate),) = options["attrs"]
    assert name == "TCA_NETEM_RATE" and rate["rate"] == 4_000_000_000


def test_the_namespace_calls_move_only_the_calling_thread_and_back() -> None:
    """unshare and setns, by Python's own calls where it has them (3.12), else libc's."""
    from pytest_netgent.network.kernel import CLONE_NEWNET, setns, unshare

    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    seen: list[str] = []

    def elsewhere() -> None:
        unshare(CLONE_NEWNET)
        seen.append(os.readlink("/proc/thread-self/ns/net"))
        setns(home, CLONE_NEWNET)
        seen.append(os.readlink("/proc/thread-self/ns/net"))

    try:
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    finally:
        os.close(home)
    here = os.readlink("/proc/thread-self/ns/net")
    assert seen[0] != here and seen[1] == here
    with pytest.raises(OSError) as bad:
        setns(-1, CLONE_NEWNET)
    assert bad.value.errno == errno.EBADF


@needs_shaping
def test_a_session_leaves_its_process_on_the_network_it_came_with(project: Project) -> None:
    """An inline run (pytest.main() in a longer-lived process) that captured or shaped
    moved the process into a sealed namespace; it ends back where it started, so what
    runs next reaches this machine's other interfaces (and DNS, registries, a Grid)."""
    before = os.readlink("/proc/thread-self/ns/net")
    interfaces = {name for _, name in socket.if_nameindex()}
    file = project.workflow(
        "home", 'name: home\nstart_url: "{base_url}/wiki/"\nstates:\n  - {name: Home, end: done}\n'
    )
    project.states(file, "home", {"Home": ([element("#search-input")], [])})
    for options in (("--netgent-capture=pcap",), ("--netgent-network=delay=20ms",)):
        project.run(*options).assert_outcomes(passed=1)
        assert os.readlink("/proc/thread-self/ns/net") == before, options
        assert not netns.isolated()
        assert {name for _, name in socket.if_nameindex()} == interfaces
