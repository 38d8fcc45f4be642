"""Who opened each flow: the kernel's own record of the process behind a socket.

Every member of a scenario runs under a group id of its own: a browser member's
ChromeDriver (and so its Chromium, whose network service opens the sockets), a command
member's shell and everything it starts. In the worker's network namespace, a netfilter
rule sends the first packet that a process of those groups sends on each connection
(TCP) or 5-tuple (UDP) to a queue, whichever side opened it (a WebRTC peer on the
server may speak first); :class:`SocketOwners` reads each such packet with the group id
the kernel attaches to it, notes its 5-tuple and lets it go at once. A connection mark
bit, set once the packet is on its way out, keeps the rest of the flow off the queue.

Two members that talk to the same host, even at the same moment, are told apart: the
label is which process sent on the socket, not where it went or when.

Needs root in the worker's own namespace (``--netgent-capture=pcap`` gives it one),
iptables and the ``fnfqueue`` package (``pip install 'pytest-netgent[network]'``).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass

from ..capture.pcap import ip_five_tuple

FIRST_GROUP = 64100
"""The group id of a scenario's first member; the next ones follow."""

MAX_MEMBERS = 200
"""Most members one scenario may have (their group ids are consecutive)."""

QUEUE = 4703
"""The netfilter queue of the worker's namespace that sees new flows."""

CHAIN = "NETGENT-OWNERS"

SEEN = 0x40000000
"""The connection mark bit of a flow whose member is noted (no other bit is touched)."""


@dataclass(frozen=True)
class Opened:
    """The first packet of a flow, as its member's process sent it."""

    proto: str
    src: str
    sport: int
    dst: str
    dport: int
    group: int
    at: float
    """Epoch seconds when the packet was seen."""


def unavailable() -> str:
    """Why flows cannot be labelled here (one line), or "" when they can."""
    if shutil.which("iptables") is None:
        return "iptables is not installed: apt-get install -y iptables"
    try:
        import fnfqueue  # noqa: F401
    except ImportError:
        return (
            "the fnfqueue package is missing (it reads which process opened each flow): "
            "pip install 'pytest-netgent[network]'"
        )
    return ""


def _iptables(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", *args], capture_output=True, text=True, check=False)


class SocketOwners:
    """Notes every flow that members' processes open while it runs (in this process's
    network namespace)."""

    def __init__(self, members: int) -> None:
        import fnfqueue

        if members > MAX_MEMBERS:
            raise ValueError(f"a scenario has at most {MAX_MEMBERS} members")
        self.groups = range(FIRST_GROUP, FIRST_GROUP + members)
        self.opened: list[Opened] = []
        self._conn = fnfqueue.Connection()
        self._accept = fnfqueue.ACCEPT
        try:
            queue = self._conn.bind(QUEUE)
            queue.set_mode(64, fnfqueue.COPY_PACKET)  # the headers: addresses and ports
            queue.set_maxlen(65536)
            queue.uid_gid = True
        except BaseException:  # cleaned up, then raised as it came
            self._conn.close()
            raise
        self._thread = threading.Thread(target=self._read, name="netgent-owners", daemon=True)
        self._thread.start()
        owned = ["-m", "owner", "--gid-owner", f"{FIRST_GROUP}-{self.groups[-1]}",
                 "-m", "connmark", "--mark", f"0/{SEEN:#x}"]  # fmt: skip
        rules = [
            ["-t", "filter", "-N", CHAIN],
            ["-t", "filter", "-A", CHAIN, *owned, "-j", "NFQUEUE", "--queue-num", str(QUEUE),
             "--queue-bypass"],
            ["-t", "filter", "-I", "OUTPUT", "1", "-j", CHAIN],
            ["-t", "mangle", "-N", CHAIN],
            ["-t", "mangle", "-A", CHAIN, *owned, "-j", "CONNMARK", "--or-mark", f"{SEEN:#x}"],
            ["-t", "mangle", "-I", "POSTROUTING", "1", "-j", CHAIN],
        ]  # fmt: skip
        for rule in rules:
            done = _iptables(*rule)
            if done.returncode != 0 and not (rule[2] == "-N" and "exists" in done.stderr):
                self.close()
                raise OSError(f"iptables {' '.join(rule)}: {done.stderr.strip()}")

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # the connection closed
            for packet in self._conn:
                with contextlib.suppress(Exception):  # a packet that is not TCP/UDP over IPv4 or 6
                    opened = _parse(packet.payload, int(packet.gid), time.time())
                    if opened is not None:
                        self.opened.append(opened)
                packet.verdict(self._accept)

    def close(self) -> None:
        """Remove the rule and stop reading (flows opened from now on are not noted)."""
        for table, hook in (("filter", "OUTPUT"), ("mangle", "POSTROUTING")):
            _iptables("-t", table, "-D", hook, "-j", CHAIN)
            _iptables("-t", table, "-F", CHAIN)
            _iptables("-t", table, "-X", CHAIN)
        with contextlib.suppress(Exception):  # closing a queue already gone
            self._conn.close()
        self._thread.join(timeout=5)


def _parse(data: bytes, group: int, at: float) -> Opened | None:
    key = ip_five_tuple(data)
    return None if key is None else Opened(*key, group=group, at=at)
