"""A network namespace of its own for each xdist worker, so that its packet capture holds
only its own traffic and its network conditions shape only its own browser.

:func:`isolate` moves the calling process (an xdist worker, or pytest itself without
``-n``) into a fresh network namespace with loopback up: the local applications its
fixtures start, its browser and its tcpdump all live there, and no other worker's packets
ever cross its loopback. Servers that listen on the host's loopback (``--netgent-base-url
http://127.0.0.1:8000`` with the server started beforehand) are reached through
:class:`~pytest_netgent.network.bridge.LoopbackBridge`: a listener on the same address
inside the namespace whose connections are carried to the host's.

Linux only, and only as root (creating a network namespace needs ``CAP_SYS_ADMIN``).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import ipaddress
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..system import leftovers
from .kernel import CLONE_NEWNET, setns, unshare

if TYPE_CHECKING:
    from .bridge import LoopbackBridge

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1

_host_namespace: int | None = None
"""A handle on the namespace this process started in, once :func:`isolate` has run."""
_own_namespace: int | None = None
"""A handle on the namespace :func:`isolate` made."""


def unavailable(remote: str = "", tools: dict[str, str] | None = None) -> str:
    """Why a worker cannot get a namespace of its own here (one line), or "" when it
    can. ``tools`` maps the programs the caller needs to the Debian packages that bring
    them (default: tcpdump, for packet capture)."""
    if remote:
        return (
            "the browsers run on the Selenium Grid (--netgent-remote), out of reach of "
            "this machine's network"
        )
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux-only (this is {sys.platform})"
    if os.geteuid() != 0:
        return (
            f"giving each worker its own network namespace needs root (running as uid "
            f"{os.geteuid()}); run as root or with CAP_SYS_ADMIN and CAP_NET_RAW (and "
            "CAP_NET_ADMIN for network conditions)"
        )
    needed = {"tcpdump": "tcpdump"} if tools is None else tools
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        packages = " ".join(dict.fromkeys(needed[tool] for tool in missing))
        verb = "is" if len(missing) == 1 else "are"
        return f"{' and '.join(missing)} {verb} not installed: apt-get install -y {packages}"
    probe = shutil.which("unshare")
    if probe is not None:
        answer = subprocess.run(
            [probe, "--net", "true"], capture_output=True, text=True, check=False
        )
        if answer.returncode != 0:
            why = (answer.stderr.strip().splitlines() or ["refused"])[-1]
            return f"this system refuses new network namespaces ({why})"
    return ""


def isolate() -> str:
    """Move this process into a new network namespace with loopback up.

    Returns "" on success, else why it could not (one line). Threads started before the
    call stay where they were; everything started after it (servers, browsers, tcpdump)
    is inside.
    """
    global _host_namespace, _own_namespace
    if _host_namespace is not None:
        return ""
    leftovers.watch()  # on the host's network: it removes this worker's host objects
    host = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        unshare(CLONE_NEWNET)
    except OSError as error:
        os.close(host)
        code = error.errno or 0
        return (
            f"unshare(CLONE_NEWNET) failed: {errno.errorcode.get(code, code)} {os.strerror(code)}"
        )
    _host_namespace = host
    _own_namespace = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))
    return ""


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def beyond_loopback(hosts: Iterable[str]) -> bool:
    """Whether any of ``hosts`` (host names or patterns, ``*`` for any) is off this
    machine's loopback."""
    for host in hosts:
        host = host.lower()
        if host == "*" or not (
            host in LOOPBACK_HOSTS or host.startswith("127.") or host.endswith(".localhost")
        ):
            return True
    return False


_uplinked = False


def ensure_uplink() -> str:
    """Give this namespace its uplink, once: "" when it has one, else why not. Only
    workflows that may leave the machine ask for it, so local runs stay sealed (nothing
    the browser does in the background leaves the machine)."""
    global _uplinked, uplink_error
    if not isolated():
        return ""
    if not _uplinked:
        _uplinked = True
        uplink_error = uplink_unavailable() or _uplink()
    return uplink_error


UPLINK_NETWORK = ipaddress.ip_network("100.64.0.0/10")
"""Addresses of the workers' uplinks: a /30 each (RFC 6598 shared space, rarely a LAN's)."""

uplink_error = ""
"""Why this worker's namespace has no uplink ("" when it has one, or before isolate())."""


def interfaces() -> list[str]:
    """The interfaces this process's traffic crosses: loopback, and the uplink if any."""
    if not isolated():
        return ["lo"]
    names = [name for _, name in socket.if_nameindex()]  # this namespace's, unlike /sys
    return ["lo", *(name for name in names if name.startswith("ngw"))]


def uplink_unavailable() -> str:
    """Why a worker's namespace could not reach beyond this machine ("" if it can)."""
    from .netlink import missing

    if shutil.which("nft") is None:
        return (
            "nft is not installed (apt-get install -y nftables): the workers reach only "
            "applications on this machine's loopback"
        )
    if why := missing():
        return f"{why}: the workers reach only applications on this machine's loopback"
    return ""


def in_host(*command: str, text: str | None = None) -> str:
    """Run ``command`` in the namespace this process started in (the host's); its
    output, or OSError saying why it failed."""
    return host_call(lambda: _run(command, text))


T = TypeVar("T")


def host_call(call: Callable[[], T]) -> T:
    """``call()`` on a thread in the host's namespace: what it opens (a netlink socket)
    and the processes it starts belong to the host's network."""
    out: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            _enter_host()
            out.append(call())
        except BaseException as exc:  # handed to the caller
            error.append(exc)

    thread = threading.Thread(target=run, name="netgent-host-call")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return out[0]


def _run(command: Iterable[str], text: str | None = None) -> str:
    """Run ``command`` where the calling thread is (a child starts in the namespace of
    the thread that starts it); its output."""
    argv = list(command)
    answer = subprocess.run(argv, input=text, capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        raise OSError(f"{' '.join(argv)}: {answer.stderr.strip() or answer.returncode}")
    return answer.stdout


def _sweep_host() -> None:
    """Remove the NAT tables (``netgent_<pid>``) that workers killed outright left on the
    host (their veth pairs went with their namespaces, their tables did not): those no
    running process lists in its ledger, whatever runs under their pid now."""
    with contextlib.suppress(OSError):
        tables = in_host("nft", "list", "tables")
        for name in re.findall(r"^table ip (netgent_\d+)$", tables, re.M):
            if not leftovers.claimed("nft-table", name):
                leftovers.remove_host_object("nft-table", name, in_host)


UPLINK_HOST_END = re.compile(r"ngh\d+")
"""The host's ends of the workers' uplinks (``ngh<pid>``)."""


def _uplink() -> str:
    """A veth pair from this namespace to the host, a default route through it, the
    host's forwarding and its NAT for this address, so sites beyond this machine stay
    reachable; "" or why not. All of it is removed when the process exits. Netlink
    calls, no ``ip`` process: the host's side from a thread in the host's namespace."""
    from . import forwarding
    from .netlink import opened

    _sweep_host()
    pid = os.getpid()
    base = int(UPLINK_NETWORK.network_address) + (pid % (UPLINK_NETWORK.num_addresses // 4)) * 4
    host_ip, inner_ip = ipaddress.ip_address(base + 1), ipaddress.ip_address(base + 2)
    outside, inside = f"ngh{pid}", f"ngw{pid}"
    table = f"netgent_{pid}"
    assert _own_namespace is not None

    def host_side() -> None:
        with opened() as nl:
            nl.veth(outside, inside, _own_namespace)
            index = nl.index(outside)
            nl.address(index, outside, str(host_ip), 30)
            nl.up(index, outside)
        # forwarding on (the veth is listed first: see forwarding); NAT for this
        # worker's address only
        forwarding.switch_on()
        _run(
            ["nft", "-f", "-"],
            f"table ip {table} {{\n  chain postrouting {{\n"
            "    type nat hook postrouting priority srcnat; policy accept;\n"
            f'    ip saddr {inner_ip} oifname != "{outside}" masquerade\n  }}\n}}\n',
        )

    leftovers.claim("link", outside)  # listed first: removed even if this worker dies now
    leftovers.claim("nft-table", table)
    atexit.register(_remove_uplink, table, outside)
    _uplink_objects[:] = [table, outside]
    try:
        host_call(host_side)
        with opened() as nl:
            index = nl.index(inside)
            nl.address(index, inside, str(inner_ip), 30)
            nl.up(index, inside)
            nl.default_route(str(host_ip))
    except OSError as exc:
        atexit.unregister(_remove_uplink)
        _remove_uplink(table, outside)
        _uplink_objects.clear()
        return f"no uplink for this worker ({exc}): it reaches only this machine's loopback"
    return ""


_uplink_objects: list[str] = []
"""The NAT table and the host's veth end of this worker's uplink, while it has one."""


def rejoin() -> None:
    """Undo :func:`isolate`: this process back on the network it started on, its
    uplink removed and its bridge closed; what starts afterwards (a later session of
    ``pytest.main()`` in the same process, the rest of a pytester test) reaches the
    network it had. A second :func:`isolate` makes a new namespace. Called on the thread
    that isolated the process (pytest's main thread)."""
    global _host_namespace, _own_namespace, _bridge, _uplinked, uplink_error
    if _host_namespace is None:
        return
    if _bridge is not None:
        _bridge.close()
        _bridge = None
    if _uplink_objects:
        atexit.unregister(_remove_uplink)
        _remove_uplink(*_uplink_objects)
        _uplink_objects.clear()
    _enter_host()
    for handle in (_host_namespace, _own_namespace):
        if handle is not None:
            os.close(handle)
    _host_namespace = _own_namespace = None
    _uplinked, uplink_error = False, ""


def _remove_uplink(table: str, outside: str) -> None:
    """Remove the worker's NAT table and veth pair now (the kernel would remove the
    pair with the namespace, but later), and put the host's forwarding back if this was
    the last uplink."""
    from . import forwarding
    from .netlink import opened

    def host_side() -> None:  # on the host's side already: its commands run there
        leftovers.remove_host_object("nft-table", table, lambda *command: _run(command))
        leftovers.release("nft-table", table)
        with opened() as nl:
            with contextlib.suppress(OSError):
                nl.delete(outside)
            leftovers.release("link", outside)
            forwarding.restore(lambda: any(UPLINK_HOST_END.fullmatch(n) for n in nl.names()))

    with contextlib.suppress(OSError):
        host_call(host_side)


def isolated() -> bool:
    """Whether :func:`isolate` moved this process into a namespace of its own."""
    return _host_namespace is not None


def _enter_host() -> None:
    """Move the calling thread back into the namespace the process started in."""
    assert _host_namespace is not None
    try:
        setns(_host_namespace, CLONE_NEWNET)
    except OSError as error:
        code = error.errno or 0
        raise OSError(code, f"setns into the host network namespace: {os.strerror(code)}") from None


# /proc/net/tcp states of a connection that is over, or of no connection at all
_SETTLED = {"06", "07", "0A"}  # TIME_WAIT, CLOSE, LISTEN


def open_connections(exclude_ports: Iterable[int] = ()) -> int:
    """TCP connections of this namespace still open or closing, besides those on
    ``exclude_ports``."""
    skip = {f"{p:04X}" for p in exclude_ports}
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] in _SETTLED:
                continue
            ports = {fields[1].rsplit(":", 1)[-1], fields[2].rsplit(":", 1)[-1]}
            if not ports & skip:
                count += 1
    return count


def settle(exclude_ports: Iterable[int] = (), timeout: float = 1.0) -> int:
    """Wait until this namespace's connections (besides ``exclude_ports``) have closed,
    at most ``timeout`` seconds; how many are still open."""
    ports = list(exclude_ports)
    deadline = time.monotonic() + timeout
    while (left := open_connections(ports)) and time.monotonic() < deadline:
        time.sleep(0.01)
    return left


_bridge: LoopbackBridge | None = None


def bridge() -> LoopbackBridge:
    """This namespace's one :class:`~pytest_netgent.network.bridge.LoopbackBridge`
    (capture and network conditions share it: a port is bridged once)."""
    global _bridge
    if _bridge is None:
        from .bridge import LoopbackBridge

        _bridge = LoopbackBridge(_enter_host, isolated)
    return _bridge
