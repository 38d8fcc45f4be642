"""A network condition on the loopback of this worker's own network namespace, and on
its uplink when it has one.

Everything the browser exchanges with the sites it visits crosses the namespace's
loopback, and so does the control traffic between the test, ChromeDriver and the
browser's DevTools endpoint. The link shapes the first and leaves the second alone:

* **Which way.** An ``iptables`` rule on the way out marks each packet by its
  connection's direction (conntrack: the side that opened it sends *up*, the other side
  *down*), except packets to or from the control ports, which are never marked.
* **Rate and queue.** The mark sends the packet into an HTB class with the direction's
  rate and a FIFO of the condition's queue, so packets leave at the bottleneck's pace
  and a full buffer drops; a capture on the loopback sees them at that pace.
* **Delay, jitter and loss**, on the way in, after the sender has let go of the packet
  (as on a real wire, so TCP's small-queue limit does not throttle the sender), by one
  of two mechanisms, recorded with the item (:attr:`Link.mechanism`):

  - ``netem``, where the kernel has it: marked packets are redirected to an ifb device
    of their direction whose netem holds them for ``delay`` plus up to ``jitter``, in
    order, and drops ``loss`` percent (:mod:`.netem`);
  - ``nfqueue`` otherwise: a marked packet is dropped at random with the condition's
    probability (``iptables -m statistic``), and waits in a delay line of its direction
    (NFQUEUE, released in order by :class:`DelayLine`).
* The loopback's MTU is set to Ethernet's 1500 bytes, and segmentation offload off,
  while the condition holds, so packets have the sizes of a real link.

The uplink (a veth pair to the host, for sites beyond this machine) carries the sites'
traffic only, so it needs no marks: its uplink rate is an HTB on the way out of the
namespace, its downlink rate one on the host's end of the pair; loss and delay act where
each direction's packets come in (on the host: an ifb ``ngd<pid>``, or a delay line
reading an NFQUEUE of the host's).

Links, qdiscs and classes are made over netlink (:mod:`.netlink`), not by ``ip`` or
``tc``; the iptables rules go in as one ``iptables-restore`` batch. :meth:`Link.clear`
removes all of it. Linux only, as root, inside a namespace of this process's own
(:func:`~pytest_netgent.network.netns.isolate`): the host's loopback is never touched, and on
the host only the worker's own end of its veth pair, its ifb and a mangle chain
``NETGENT-<pid>`` for it.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import os
import random
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterable
from typing import Any

from ..system import leftovers
from . import netem
from .conditions import Condition
from .netlink import Netlink, opened

UP_MARK, DOWN_MARK = 0x4E4701, 0x4E4702
"""Packet marks of the two directions (``NG`` and a number)."""
UP_QUEUE, DOWN_QUEUE = 4701, 4702
"""The NFQUEUE numbers of the delay lines (per network namespace)."""
DOWN_CLASS, UP_CLASS = "1:1", "1:2"
LOOPBACK_MTU = 65536
WIRE_MTU = 1500


def unavailable(condition: Condition) -> str:
    """What ``condition`` needs beyond the namespace's tools ("" when nothing): the
    netlink library, and for delay and jitter without netem the delay line's NFQUEUE
    library."""
    from .netlink import missing

    if why := missing():
        return why
    if condition.delay or condition.jitter:
        try:
            import fnfqueue  # noqa: F401
        except ImportError:
            if why := netem.unavailable():
                return (
                    f"delay and jitter need netem ({why}) or the delay line's NFQUEUE "
                    "library: pip install 'pytest-netgent[network]'"
                )
    return ""


def mechanism(condition: Condition) -> str:
    """What gives ``condition``'s delay, jitter and loss here: ``netem`` where the kernel
    has it, else ``nfqueue`` (the delay line and iptables' drops); "" when it has none."""
    if not (condition.delay or condition.jitter or condition.loss):
        return ""
    return "nfqueue" if netem.unavailable() else "netem"


def _run(*command: str, text: str | None = None) -> None:
    answer = subprocess.run(command, input=text, capture_output=True, text=True, check=False)
    if answer.returncode != 0:
        raise OSError(f"{' '.join(command)}: {answer.stderr.strip() or answer.returncode}")


class Link:
    """Applies one :class:`Condition` at a time to this namespace's loopback."""

    def __init__(self) -> None:
        self.condition: Condition | None = None
        self.mechanism = ""
        """What gives the condition's delay, jitter and loss (:func:`mechanism`)."""
        self._delay: DelayLine | None = None
        self._uplinks: list[str] = []
        self._host_delay: DelayLine | None = None
        self._ifbs: list[str] = []
        self._chains = False

    def apply(self, condition: Condition, control_ports: Iterable[int]) -> None:
        """Put ``condition`` on the wire, leaving ``control_ports`` (WebDriver, DevTools)
        unshaped; OSError says what failed (nothing stays applied then)."""
        from . import netns

        if not netns.isolated():
            raise OSError("not in a network namespace of its own: the host is never shaped")
        self.clear()
        self.condition = condition
        try:
            self.mechanism = mechanism(condition)
            with opened() as nl:
                lo = nl.index("lo")
                # packets of a real link: no 64 KiB loopback frames, no segmentation offload
                nl.mtu(lo, "lo", WIRE_MTU, 1)
                if condition.rate is not None:  # unclassified (control): unshaped
                    nl.htb(lo, "lo", 0, _classes(condition, condition.rate, condition.uplink))
                if self.mechanism == "netem":
                    for mark, ifb in ((UP_MARK, netem.UP_IFB), (DOWN_MARK, netem.DOWN_IFB)):
                        self._ifbs.append(ifb)
                        netem.delay_ingress(nl, lo, "lo", ifb, condition, mark)
            if self.mechanism == "nfqueue" and (condition.delay or condition.jitter):
                self._delay = DelayLine(condition.delay, condition.jitter)
            rules = _rules(
                condition, sorted(set(control_ports)), self._delay is not None,
                self.mechanism == "nfqueue",
            )  # fmt: skip
            self._chains = True
            _run("iptables-restore", "--noflush", text=rules)
            if shutil.which("ip6tables-restore"):
                _run("ip6tables-restore", "--noflush", text=rules)
            for inner in netns.interfaces()[1:]:
                self._uplinks.append(inner)
                self._shape_uplink(condition, inner)
        except BaseException:  # cleaned up, then raised as it came
            self.clear()
            raise

    def _shape_uplink(self, condition: Condition, inner: str) -> None:
        """The condition on the worker's uplink (veth ``inner`` in here, its peer in the
        host's namespace), which carries only the sites' traffic: the uplink's rate on
        the way out of here; the downlink's rate, and the uplink's loss and delay, on the
        host's side; the downlink's loss and delay on the way in here."""
        from . import netns

        outer = "ngh" + inner.removeprefix("ngw")
        delayed = condition.delay or condition.jitter

        def shape(nl: Netlink, device: str, rate: int | None, ifb: str) -> None:
            index = nl.index(device)
            if rate is not None:
                nl.htb(index, device, 1, _classes(condition, rate))  # all of it: the sites'
            if self.mechanism == "netem":
                netem.delay_ingress(nl, index, device, ifb, condition)

        def host_side() -> None:
            with opened() as nl:
                _sweep_host_ifbs(nl)
                if self.mechanism == "netem":
                    leftovers.claim("link", netem.host_ifb(inner))  # removed if this worker dies
                shape(nl, outer, condition.rate, netem.host_ifb(inner))

        with opened() as nl:
            shape(nl, inner, condition.uplink, netem.UPLINK_IFB)
        netns.host_call(host_side)
        if self.mechanism != "nfqueue":
            return
        _sweep_host_chains()
        here = [f"-A PREROUTING -i {inner} -j NETGENT-UPLINK"]
        there = [f"-A PREROUTING -i {outer} -j {_host_chain(inner)}"]
        queue = _host_queue(inner)
        for out, chain, number in (
            (here, "NETGENT-UPLINK", DOWN_QUEUE),
            (there, _host_chain(inner), queue),
        ):
            if condition.loss:
                out.append(
                    f"-A {chain} -m statistic --mode random --probability "
                    f"{condition.loss / 100:.6f} -j DROP"
                )
            if delayed:
                out.append(f"-A {chain} -j NFQUEUE --queue-num {number}")
        if delayed:
            self._host_delay = netns.host_call(
                lambda: DelayLine(condition.delay, condition.jitter, (queue,))
            )
        _run("iptables-restore", "--noflush", text=_table("NETGENT-UPLINK", here))
        leftovers.claim("mangle-chain", _host_chain(inner))  # removed if this worker dies
        netns.in_host("iptables-restore", "--noflush", text=_table(_host_chain(inner), there))

    def _clear_uplinks(self) -> None:
        from . import netns

        for inner in self._uplinks:
            outer = "ngh" + inner.removeprefix("ngw")
            chain = _host_chain(inner)
            host_ifbs = [netem.host_ifb(inner)] if self.mechanism == "netem" else []
            if self.mechanism == "nfqueue":
                _remove_chains("iptables", [("PREROUTING", f"-i {inner}", "NETGENT-UPLINK")])
            if self._host_delay is not None:
                self._host_delay.close()
                self._host_delay = None

            with contextlib.suppress(OSError):
                with opened() as nl:
                    _unshape(nl, inner, [netem.UPLINK_IFB] if host_ifbs else [])
                netns.host_call(functools.partial(self._unshape_host, outer, chain, host_ifbs))
        self._uplinks = []

    def _unshape_host(self, outer: str, chain: str, ifbs: list[str]) -> None:
        """The host's side of :meth:`_clear_uplinks` (on a thread in its namespace)."""
        if self.mechanism == "nfqueue":
            _remove_chains("iptables", [("PREROUTING", f"-i {outer}", chain)])
            leftovers.release("mangle-chain", chain)
        with opened() as nl:
            _unshape(nl, outer, ifbs)
        for ifb in ifbs:
            leftovers.release("link", ifb)

    def clear(self) -> None:
        """Remove the condition: rules first (no packet waits any more), then the delay
        line (what waits in it goes on at once), the qdiscs and ifbs, and the MTU."""
        self._clear_uplinks()
        for tool in ("iptables", "ip6tables") if self._chains else ():
            if shutil.which(f"{tool}-restore") is not None:
                _remove_chains(tool, _LOOPBACK_CHAINS)
        self._chains = False
        if self._delay is not None:
            self._delay.close()
            self._delay = None
        if self.condition is not None:
            with contextlib.suppress(OSError), opened() as nl:
                _unshape(nl, "lo", self._ifbs)
                nl.mtu(nl.index("lo"), "lo", LOOPBACK_MTU, 65535)
        self._ifbs = []
        self.condition = None
        self.mechanism = ""


_LOOPBACK_CHAINS = (
    ("OUTPUT", "-o lo", "NETGENT-OUT"),
    ("POSTROUTING", "-o lo", "NETGENT-CLS"),
    ("PREROUTING", "-i lo", "NETGENT-IN"),
)
"""Where the loopback's mangle chains hang: (hook, interface match, chain)."""


def _remove_chains(tool: str, chains: Iterable[tuple[str, str, str]]) -> None:
    """Remove ``chains`` and their jumps, in one ``<tool>-restore`` batch; one command
    at a time if the batch is refused (a chain or jump was not there)."""
    chains = list(chains)
    commands = [f"-D {hook} {way} -j {chain}" for hook, way, chain in chains]
    commands += [f"-{op} {chain}" for _, _, chain in chains for op in "FX"]
    try:
        _run(f"{tool}-restore", "--noflush", text="\n".join(["*mangle", *commands, "COMMIT", ""]))
    except OSError:
        for command in commands:
            with contextlib.suppress(OSError):
                _run(tool, "-t", "mangle", *command.split())


def _classes(condition: Condition, *rates: int | None) -> list[tuple[int, int, int]]:
    """HTB classes ``1:1``, ``1:2``... of ``rates``, each with a FIFO of the
    condition's queue at its rate."""
    out = []
    for minor, rate in enumerate(rates, start=1):
        assert rate is not None
        out.append((minor, rate, condition.packets(rate, WIRE_MTU)))
    return out


def _unshape(nl: Netlink, device: str, ifbs: list[str]) -> None:
    """Remove the qdiscs of ``device`` and the ifb devices its ingress went to."""
    nl.clear_ingress(device)
    for ifb in ifbs:
        nl.delete(ifb)
    nl.clear_root(device)


def _host_chain(inner: str) -> str:
    """The host's mangle chain of the worker behind uplink ``inner`` (``ngw<pid>``)."""
    return "NETGENT-" + inner.removeprefix("ngw")


def _sweep_host_ifbs(nl: Netlink) -> None:
    """Remove the host's ifb devices (``ngd<pid>``) that workers killed outright left:
    those no running process lists in its ledger."""
    for name in nl.names():
        if re.fullmatch(r"ngd\d+", name) and not leftovers.claimed("link", name):
            with contextlib.suppress(OSError):
                nl.delete(name)


def _sweep_host_chains() -> None:
    """Remove the host's mangle chains (``NETGENT-<pid>``) and their jumps that workers
    killed outright left behind (a worker removes its own when it ends): those no running
    process lists in its ledger, whatever runs under their pid now."""
    from . import netns

    with contextlib.suppress(OSError):
        rules = netns.in_host("iptables", "-w", "-t", "mangle", "-S")
        for name in re.findall(r"^-N (NETGENT-\d+)$", rules, re.M):
            if not leftovers.claimed("mangle-chain", name):
                leftovers.remove_host_object("mangle-chain", name, netns.in_host)


def _host_queue(inner: str) -> int:
    """The host's NFQUEUE number of the worker behind uplink ``inner``."""
    return 20000 + int(inner.removeprefix("ngw")) % 40000


def _table(chain: str, rules: list[str]) -> str:
    return "\n".join(["*mangle", f":{chain} - [0:0]", *rules, "COMMIT", ""])


def _rules(condition: Condition, control: list[int], delayed: bool, drops: bool) -> str:
    """The mangle rules of ``condition`` for iptables-restore (the same for IPv6); with
    ``delayed`` the marked packets go to the delay lines, with ``drops`` some are
    dropped at random (netem does both otherwise)."""
    out = ["-A OUTPUT -o lo -j NETGENT-OUT", "-A PREROUTING -i lo -j NETGENT-IN"]
    # the class (the packet's priority) is given after every OUTPUT rule: a packet that
    # has a priority when a queue reads it reaches the reader without its payload (seen
    # with fnfqueue here), and a scenario's socket owners read one in filter OUTPUT
    out.append("-A POSTROUTING -o lo -j NETGENT-CLS")
    for port in control:
        for proto in ("tcp", "udp"):
            out.append(f"-A NETGENT-OUT -p {proto} --dport {port} -j RETURN")
            out.append(f"-A NETGENT-OUT -p {proto} --sport {port} -j RETURN")
    out.append(f"-A NETGENT-OUT -m conntrack --ctdir ORIGINAL -j MARK --set-mark {UP_MARK}")
    out.append(f"-A NETGENT-OUT -m conntrack --ctdir REPLY -j MARK --set-mark {DOWN_MARK}")
    if condition.rate is not None:
        out.append(f"-A NETGENT-CLS -m mark --mark {UP_MARK} -j CLASSIFY --set-class {UP_CLASS}")
        out.append(
            f"-A NETGENT-CLS -m mark --mark {DOWN_MARK} -j CLASSIFY --set-class {DOWN_CLASS}"
        )
    for mark, queue in ((UP_MARK, UP_QUEUE), (DOWN_MARK, DOWN_QUEUE)):
        if condition.loss and drops:
            p = condition.loss / 100
            out.append(
                f"-A NETGENT-IN -m mark --mark {mark} -m statistic --mode random "
                f"--probability {p:.6f} -j DROP"
            )
        if delayed:
            out.append(f"-A NETGENT-IN -m mark --mark {mark} -j NFQUEUE --queue-num {queue}")
    chains = [f":{chain} - [0:0]" for chain in ("NETGENT-OUT", "NETGENT-CLS", "NETGENT-IN")]
    return "\n".join(["*mangle", *chains, *out, "COMMIT", ""])


def _punctual(thread: threading.Thread | None) -> None:
    """Give ``thread`` a real-time priority, so that a loaded machine (browsers, other
    workers) does not add its scheduling delay to the condition's; as it was if the
    system refuses."""
    native = getattr(thread, "native_id", None)
    if native is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(native, os.SCHED_FIFO, os.sched_param(10))


class DelayLine:
    """Holds each queued packet for ``delay`` plus up to ``jitter`` seconds, then lets it
    go; packets of one direction leave in the order they came."""

    def __init__(
        self, delay: float, jitter: float, queues: tuple[int, ...] = (UP_QUEUE, DOWN_QUEUE)
    ) -> None:
        import fnfqueue

        self.delay, self.jitter = delay, jitter
        self._conn: Any = fnfqueue.Connection()  # its socket: in this thread's namespace
        self._accept = fnfqueue.ACCEPT
        try:
            for number in queues:
                queue = self._conn.bind(number)
                queue.set_mode(0, fnfqueue.COPY_META)  # the verdict needs no payload
                queue.set_maxlen(65536)
        except BaseException:  # cleaned up, then raised as it came
            self._conn.close()
            raise
        self._due: list[tuple[float, int, Any]] = []
        self._last: dict[int, float] = {}
        self._count = 0
        self._wake = threading.Condition()
        self._closing = False
        self._random = random.Random()
        self._threads = [
            threading.Thread(target=self._take, name="netgent-delay-in", daemon=True),
            threading.Thread(target=self._release, name="netgent-delay-out", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        for worker in (*self._threads, getattr(self._conn, "_worker", None)):
            _punctual(worker)  # fnfqueue's reader thread too

    def _take(self) -> None:
        with contextlib.suppress(Exception):  # the connection closed
            for packet in self._conn:
                now = time.monotonic()
                queue = int(packet.packet.queue_id)
                extra = self._random.uniform(0, self.jitter) if self.jitter else 0.0
                due = now + self.delay + extra
                due = max(due, self._last.get(queue, 0.0))  # no reordering
                self._last[queue] = due
                with self._wake:
                    self._count += 1
                    heapq.heappush(self._due, (due, self._count, packet))
                    self._wake.notify()

    def _release(self) -> None:
        while True:
            with self._wake:
                while not self._due and not self._closing:
                    self._wake.wait()
                if not self._due:
                    return
                due, _, packet = self._due[0]
                wait = due - time.monotonic()
                if wait > 0 and not self._closing:
                    self._wake.wait(wait)
                    continue
                heapq.heappop(self._due)
            with contextlib.suppress(Exception):  # a packet the kernel dropped meanwhile
                packet.verdict(self._accept)

    def close(self) -> None:
        """Let every waiting packet go now, and stop."""
        with self._wake:
            self._closing = True
            self._wake.notify_all()
        self._threads[1].join(timeout=5)
        with contextlib.suppress(Exception):  # closing a queue already gone
            self._conn.close()
        self._threads[0].join(timeout=5)
