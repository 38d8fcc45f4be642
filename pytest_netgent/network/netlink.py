"""The kernel's routing and traffic-control calls of the network code, over netlink
(pyroute2): no ``ip``, ``tc`` or ``nsenter`` process, and errors with the kernel's errno.

A :class:`Netlink` talks to the network namespace of the thread that opened it: pyroute2
opens its socket in the calling thread's namespace (one socket per thread), so each one
is opened, used and closed in one thread (:func:`~pytest_netgent.network.netns.host_call` runs a
block in the host's namespace). pyroute2 is imported here only, when a namespace gets its
uplink or a condition, so a pytest start never pays for it.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

INSTALL = "pip install 'pyroute2>=0.9.7'"
"""What brings the netlink library."""

TC_H_ROOT = 0xFFFFFFFF
INGRESS = 0xFFFF0000
ETH_P_ALL = 0x0003
MATCH_ALL = "0x0/0x0+0"
"""A u32 key every packet matches (u32 is in every kernel that has traffic control)."""


def missing() -> str:
    """Why netlink calls cannot be made here ("" when they can); found, not imported."""
    from importlib.util import find_spec

    if find_spec("pyroute2") is None:
        return f"the netlink library pyroute2 is not installed: {INSTALL}"
    return ""


class Netlink:
    """Links, addresses, routes and qdiscs of the calling thread's network namespace."""

    def __init__(self) -> None:
        from pyroute2.iproute.linux import IPRoute

        self._ipr: Any = IPRoute()
        # nlm_request() reads this, and IPRoute (0.9.7) does not set it: whole answers
        self._ipr.status["nlm_generator"] = False

    def close(self) -> None:
        """Close the socket."""
        self._ipr.close()

    def _call(self, what: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """``IPRoute.<method>(*args, **kwargs)``; a refusal as OSError(errno, ``what``)."""
        from pyroute2.netlink.exceptions import NetlinkError

        try:
            return getattr(self._ipr, method)(*args, **kwargs)
        except NetlinkError as exc:
            raise OSError(exc.code, f"{what}: {os.strerror(exc.code)}") from None

    def index(self, name: str) -> int:
        """The index of interface ``name``; OSError(ENODEV) if there is none."""
        found = self._call(f"look up {name}", "link_lookup", ifname=name)
        if not found:
            raise OSError(errno.ENODEV, f"no interface {name} here")
        return int(found[0])

    def names(self) -> list[str]:
        """The names of this namespace's interfaces."""
        return [str(link.get("ifname")) for link in self._call("list links", "link", "dump")]

    def veth(self, name: str, peer: str, peer_netns: int) -> None:
        """A veth pair ``name`` (here) and ``peer`` (in the namespace open as fd
        ``peer_netns``)."""
        self._call(
            f"add veth {name} with peer {peer}", "link", "add",
            ifname=name, kind="veth", peer={"ifname": peer, "net_ns_fd": peer_netns},
        )  # fmt: skip

    def ifb(self, name: str) -> int:
        """An ifb device ``name``, up: where packets redirected from an ingress pass
        egress qdiscs; its index."""
        self._call(f"add ifb {name}", "link", "add", ifname=name, kind="ifb")
        index = self.index(name)
        self.up(index, name)
        return index

    def delete(self, name: str) -> bool:
        """Remove interface ``name``; whether it was there."""
        try:
            index = self.index(name)
        except OSError:
            return False
        try:
            self._call(f"delete {name}", "link", "del", index=index)
        except OSError as exc:
            if exc.errno == errno.ENODEV:
                return False
            raise
        return True

    def up(self, index: int, name: str) -> None:
        """Bring interface ``index`` (``name``) up."""
        self._call(f"set {name} up", "link", "set", index=index, state="up")

    def mtu(self, index: int, name: str, mtu: int, gso_max_segs: int) -> None:
        """Set the MTU and the largest segmentation-offload burst of ``name``."""
        self._call(
            f"set {name} mtu {mtu} gso_max_segs {gso_max_segs}", "link", "set",
            index=index, mtu=mtu, gso_max_segs=gso_max_segs,
        )  # fmt: skip

    def address(self, index: int, name: str, address: str, prefixlen: int) -> None:
        """Give ``name`` ``address/prefixlen``."""
        self._call(
            f"add {address}/{prefixlen} to {name}", "addr", "add",
            index=index, address=address, prefixlen=prefixlen,
        )  # fmt: skip

    def default_route(self, gateway: str) -> None:
        """A default route through ``gateway``."""
        self._call(f"add default route via {gateway}", "route", "add", dst="0.0.0.0/0",
                   gateway=gateway)  # fmt: skip

    def htb(self, index: int, name: str, default: int, classes: list[tuple[int, int, int]]) -> None:
        """An HTB root (``1:``) on ``name`` with a class ``1:<minor>`` per ``(minor,
        rate in bit/s, FIFO limit in packets)``, each ending in a FIFO of that limit;
        ``default`` is the minor of unclassified packets (0: they pass unshaped)."""
        self._call(f"add htb to {name}", "tc", "replace", "htb", index=index, handle=0x10000,
                   parent=TC_H_ROOT, default=default)  # fmt: skip
        for minor, rate, limit in classes:
            classid = 0x10000 | minor
            self._call(
                f"add htb class 1:{minor} of {rate}bit to {name}", "tc", "add-class", "htb",
                index=index, handle=classid, parent=0x10000, rate=f"{rate}bit",
                ceil=f"{rate}bit",
            )  # fmt: skip
            self._call(f"add pfifo of {limit} to {name} 1:{minor}", "tc", "add", "pfifo",
                       index=index, parent=classid, limit=limit)  # fmt: skip

    def netem(
        self, index: int, name: str, delay_us: int, jitter_us: int, loss: float, limit: int
    ) -> None:
        """A netem root on ``name``: each packet waits ``delay_us`` plus up to
        ``jitter_us`` (uniform), ``loss`` percent are dropped. netem's own rate (far above
        any condition's) makes each packet leave after the one before it, so jitter does
        not reorder packets, as in the delay line. The request is built here: pyroute2's
        ``tc()`` would also send its ``rate`` as the qdisc's rate estimator."""
        from pyroute2.netlink import NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE, NLM_F_REQUEST
        from pyroute2.netlink.rtnl import RTM_NEWQDISC
        from pyroute2.netlink.rtnl.tcmsg import tcmsg

        msg = tcmsg()
        msg["index"], msg["handle"], msg["parent"] = index, 0x10000, TC_H_ROOT
        msg["attrs"] = [["TCA_KIND", "netem"], ["TCA_OPTIONS", netem_options(
            delay_us, jitter_us, loss, limit, _ticks_per_us())]]  # fmt: skip
        flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE
        self._call(f"add netem to {name}", "nlm_request", msg, RTM_NEWQDISC, flags)

    def redirect_ingress(
        self, index: int, name: str, to: int, mark: int | None = None, prio: int = 1
    ) -> None:
        """Send what ``name`` receives (only packets marked ``mark``, if given) to the
        egress of interface ``to`` (an ifb), which hands it back to ``name``'s receive
        path once its qdisc lets it go. Marks are matched by the ``fw`` classifier, which
        is refused where the kernel lacks it (u32's mark match would match every packet
        where the kernel was built without it)."""
        redirect = [{"kind": "mirred", "direction": "egress", "action": "redirect",
                     "ifindex": to}]  # fmt: skip
        self._call(f"add ingress to {name}", "tc", "replace", "ingress", index=index)
        if mark is None:
            self._call(
                f"redirect the ingress of {name}", "tc", "add-filter", "u32", index=index,
                parent=INGRESS, protocol=ETH_P_ALL, prio=prio, target=0, keys=[MATCH_ALL],
                action=redirect,
            )  # fmt: skip
        else:
            self._call(
                f"redirect mark {mark:#x} of the ingress of {name}", "tc", "add-filter", "fw",
                index=index, parent=INGRESS, protocol=ETH_P_ALL, prio=prio, handle=mark,
                mask=0xFFFFFFFF, action=redirect,
            )  # fmt: skip

    def clear_root(self, name: str) -> None:
        """Remove the root qdisc of ``name`` (the default comes back), if it has one."""
        try:
            index = self.index(name)
        except OSError:
            return
        try:
            self._call(f"delete the qdisc of {name}", "tc", "del", index=index, handle=0x10000,
                       parent=TC_H_ROOT)  # fmt: skip
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.EINVAL):
                raise

    def clear_ingress(self, name: str) -> None:
        """Remove the ingress qdisc of ``name`` and its filters, if it has one."""
        try:
            index = self.index(name)
        except OSError:
            return
        try:
            self._call(f"delete the ingress of {name}", "tc", "del", "ingress", index=index)
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.EINVAL):
                raise

    def qdiscs(self, name: str) -> list[str]:
        """The kinds of the qdiscs on ``name``."""
        index = self.index(name)
        return [
            str(q.get_attr("TCA_KIND"))
            for q in self._call(f"list the qdiscs of {name}", "tc", "dump")
            if q.get("index") == index
        ]


NETEM_ORDER_RATE = 4_000_000_000
"""netem's own rate in bytes per second (32 Gbit/s): 16 µs for a 64 KiB frame, and
packets leave in order."""


def netem_options(
    delay_us: int, jitter_us: int, loss: float, limit: int, ticks_per_us: float
) -> dict[str, Any]:
    """netem's ``TCA_OPTIONS``: a uniform wait in ``[delay, delay + jitter]`` (netem
    draws from ``latency ± jitter``), ``loss`` percent dropped, ``limit`` packets held.
    Times are in the kernel's scheduler ticks (``/proc/net/psched``)."""
    half = jitter_us / 2
    return {
        "delay": int((delay_us + half) * ticks_per_us),
        "limit": limit,
        "loss": round((2**32 - 1) * loss / 100),
        "gap": 0,
        "duplicate": 0,
        "jitter": int(half * ticks_per_us),
        "attrs": [["TCA_NETEM_RATE", {"rate": NETEM_ORDER_RATE, "packet_overhead": 0,
                                      "cell_size": 0, "cell_overhead": 0}]],
    }  # fmt: skip


def _ticks_per_us() -> float:
    from pyroute2.netlink.rtnl.tcmsg.common import tick_in_usec

    return float(tick_in_usec)


@contextmanager
def opened() -> Iterator[Netlink]:
    """A :class:`Netlink` of the calling thread's namespace, closed after the block."""
    link = Netlink()
    try:
        yield link
    finally:
        link.close()
