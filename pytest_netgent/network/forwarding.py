"""The host's IPv4 forwarding: on while any worker has an uplink, then back to what it
was.

Why the host-wide switch, not one interface's: a worker's packets come in on its veth
and leave by another interface (``eth0``), and the replies come in on that other
interface. Linux forwards an IPv4 packet only if forwarding is on for the interface it
*came in on* (``net.ipv4.conf.<in>.forwarding``), so forwarding on the veth alone lets
the requests out and drops every reply; any interface a reply may come in on needs it,
which is what ``net.ipv4.ip_forward`` switches (it sets every interface's value).

So the first uplink switches ``ip_forward`` on and keeps the values it found (the switch
and each interface's) in a file of the host's network namespace,
``/run/netgent-forwarding.<namespace cookie>.json``; the last uplink to go writes them
back and removes the file. Workers of every run share that file under a lock; an uplink
is listed (its veth exists) before it switches forwarding on, and the last one is told
under the lock, so none is left without forwarding. A host where forwarding was on
already keeps it, untouched. A worker killed outright leaves the file: the next uplink
that is the last one restores it.

Every function here runs on a thread in the host's namespace
(:func:`~pytest_netgent.network.netns.host_call`): ``/proc/sys/net`` shows the calling
thread's namespace.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from ..system import atomic

STATE = Path("/run")
"""Where the values before the first uplink, and the lock, are kept."""
IPV4 = Path("/proc/sys/net/ipv4")


SO_NETNS_COOKIE = 71
"""A network namespace's number, never reused until the machine restarts (Linux 5.14)."""


def _state_file() -> Path:
    """The saved values of this thread's network namespace: named by its cookie (an
    inode number may come back for a later namespace)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            cookie = probe.getsockopt(socket.SOL_SOCKET, SO_NETNS_COOKIE, 8)
            tag = str(struct.unpack("Q", cookie)[0])
        except OSError:  # an older kernel
            tag = f"inode-{os.stat('/proc/thread-self/ns/net').st_ino}"
    return STATE / f"netgent-forwarding.{tag}.json"


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    fd = os.open(STATE / "netgent-forwarding.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and the lock with it


def _values() -> dict[str, str]:
    """``ip_forward`` and each interface's ``forwarding`` (``default`` too), as now."""
    values = {"ip_forward": (IPV4 / "ip_forward").read_text().strip()}
    for conf in sorted((IPV4 / "conf").iterdir()):
        if conf.name != "all":  # the same as ip_forward
            with contextlib.suppress(OSError):
                values[f"conf/{conf.name}"] = (conf / "forwarding").read_text().strip()
    return values


def switch_on() -> None:
    """Forwarding on for a new uplink (whose veth exists already), keeping the values it
    replaces if it was off and no other uplink keeps them."""
    with _locked():
        state = _state_file()
        if (IPV4 / "ip_forward").read_text().strip() == "1":
            return  # on: by an earlier uplink (its values are kept), or by the host's owner
        if not state.exists():  # else: switched off under a live uplink; those values stand
            with atomic.replacing(state) as out:
                json.dump(_values(), out)
        (IPV4 / "ip_forward").write_text("1")


def restore(uplinks_left: Callable[[], bool]) -> bool:
    """After an uplink has gone: unless ``uplinks_left()`` (asked under the lock), put
    back the values the first uplink found; whether it did."""
    with _locked():
        state = _state_file()
        if not state.exists() or uplinks_left():
            return False
        saved: dict[str, str] = json.loads(state.read_text())
        # ip_forward first: writing it sets every interface's value, which the saved
        # ones then correct (an interface may have forwarded on a host that did not)
        (IPV4 / "ip_forward").write_text(saved.pop("ip_forward"))
        for key, value in saved.items():
            with contextlib.suppress(OSError):  # an interface gone meanwhile
                (IPV4 / key / "forwarding").write_text(value)
        state.unlink()
        return True
