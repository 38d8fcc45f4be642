"""Delay, jitter and loss by the kernel's netem, where the kernel has it.

netem delays what leaves a qdisc; a link's delay belongs after the sender has let go of
its packets (on the way *in*), or TCP's small-queue limit throttles the sender while its
packets wait. So the packets a device receives are redirected (``mirred``) to an ifb
device, whose egress qdisc is the netem, and which hands each one back to the device's
receive path when netem lets it go:

* the loopback's packets of each direction (by the mark the link's iptables rule gives
  them, with the ``fw`` classifier) go to an ifb of their own: ``ngup`` and ``ngdown``;
  the control traffic has no mark and is not redirected;
* a worker's uplink: what comes in on its veth (``ngw<pid>``) goes to ``ngwin`` in its
  namespace, what the host receives from it (``ngh<pid>``) to ``ngd<pid>`` in the host's.

Where the kernel lacks any of netem, ifb, ``fw`` or ``mirred`` (this project's CI kernel
has no netem), :func:`unavailable` says so and the link uses its NFQUEUE delay line and
iptables' random drops instead. The probe runs in a scratch network namespace of its own
thread, which ends with it: the host never sees its devices.
"""

from __future__ import annotations

import functools
import threading
from typing import Protocol

from .conditions import Condition
from .kernel import CLONE_NEWNET, unshare

LIMIT = 65536
"""Packets a netem holds (the delay line's queue length too): a second of 1 Gbit/s."""
UP_IFB, DOWN_IFB = "ngup", "ngdown"
UPLINK_IFB = "ngwin"
"""The ifb devices in a worker's namespace."""


class Shaper(Protocol):
    """What :func:`probe` and :func:`delay_ingress` need of a
    :class:`~.netlink.Netlink` (a test passes a fake)."""

    def ifb(self, name: str) -> int: ...
    def netem(
        self, index: int, name: str, delay_us: int, jitter_us: int, loss: float, limit: int
    ) -> None: ...
    def redirect_ingress(
        self, index: int, name: str, to: int, mark: int | None = None, prio: int = 1
    ) -> None: ...


def host_ifb(inner: str) -> str:
    """The host's ifb of the worker behind uplink ``inner`` (``ngw<pid>``)."""
    return "ngd" + inner.removeprefix("ngw")


def delay_ingress(
    nl: Shaper, index: int, name: str, ifb: str, condition: Condition, mark: int | None = None
) -> None:
    """What ``name`` receives (marked ``mark``, if given) waits in a netem of
    ``condition``'s delay, jitter and loss on a new ifb device ``ifb``."""
    to = nl.ifb(ifb)
    delay_us, jitter_us = round(condition.delay * 1e6), round(condition.jitter * 1e6)
    nl.netem(to, ifb, delay_us, jitter_us, condition.loss, LIMIT)
    prio = 1 if mark is None else 10 + (mark & 0xFF)
    nl.redirect_ingress(index, name, to, mark=mark, prio=prio)


def probe(nl: Shaper) -> str:
    """Why ``nl``'s kernel cannot delay received packets with netem ("" if it can):
    it makes what :func:`delay_ingress` makes, with a mark, on scratch devices."""
    try:
        first = nl.ifb("ngprobe0")
        delay_ingress(nl, first, "ngprobe0", "ngprobe1", Condition("probe", delay=0.001), 1)
    except OSError as exc:
        return f"this kernel cannot delay packets with netem on ingress ({exc})"
    return ""


@functools.cache
def unavailable() -> str:
    """Why this machine's kernel cannot give delay, jitter and loss by netem ("" if it
    can); asked once per process."""
    from .netlink import missing, opened

    if why := missing():
        return why
    answer: list[str] = []

    def scratch() -> None:
        try:
            unshare(CLONE_NEWNET)  # this thread only; its namespace ends with it
        except OSError as error:
            answer.append(f"no scratch namespace to probe netem in: {error.strerror}")
            return
        with opened() as nl:
            answer.append(probe(nl))

    thread = threading.Thread(target=scratch, name="netgent-netem-probe")
    thread.start()
    thread.join()
    return answer[0] if answer else "the netem probe failed"
