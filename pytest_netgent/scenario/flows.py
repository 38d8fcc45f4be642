"""``flows.csv``: the flows of a scenario's pcap, each labelled with the member that
opened it.

A flow is a TCP connection or a UDP 5-tuple. Its label comes from
:class:`~.owners.SocketOwners` (which process opened it), never from its host or its
time; the workflow state it opened in comes from the member's own timeline.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..capture.pcap import Key, five_tuple, pcap_records
from ..system import atomic
from .owners import Opened

FLOWS_FILE = "flows.csv"
"""The file of a scenario's labelled flows, beside its ``capture.pcap``."""

FIELDS = (
    "proto", "src", "sport", "dst", "dport", "first", "last", "packets", "bytes",
    "member", "kind", "category", "state",
)  # fmt: skip
"""The columns of ``flows.csv``."""

MATCH_SLACK = 1.0
"""Seconds by which a flow's first captured packet may precede the moment its opening
was noted (two clocks read a few microseconds apart, threads scheduled late)."""


REUSE_S = 2.0
"""Two openings of one 5-tuple by one member closer than this are one flow (a port is
not used again so soon)."""

START = "(start_url)"
"""The state of a flow opened before the member's first state fired."""


@dataclass
class Flow:
    """One flow of the pcap, its initiator first."""

    proto: str
    src: str
    sport: int
    dst: str
    dport: int
    first: float
    last: float
    packets: int = 0
    bytes: int = 0
    member: str = ""
    kind: str = ""
    category: str = ""
    state: str = ""

    def row(self) -> dict[str, str]:
        return {
            "proto": self.proto,
            "src": self.src,
            "sport": str(self.sport),
            "dst": self.dst,
            "dport": str(self.dport),
            "first": f"{self.first:.6f}",
            "last": f"{self.last:.6f}",
            "packets": str(self.packets),
            "bytes": str(self.bytes),
            "member": self.member,
            "kind": self.kind,
            "category": self.category,
            "state": self.state,
        }


@dataclass
class Owner:
    """What flows.csv says of a member: its name, kind, category and state changes."""

    name: str
    kind: str
    category: str
    states: list[tuple[float, str]] = field(default_factory=list)
    """``(epoch, state)`` each time a state fired, in order."""

    def state_at(self, moment: float) -> str:
        current = START if self.states else ""
        for at, state in self.states:
            if at > moment:
                break
            current = state
        return current


def read_flows(pcap: Path, opened: Iterable[Opened]) -> tuple[list[Flow], int, dict[int, int]]:
    """The flows of ``pcap``; the total packet count; and which flow (by index) each
    noted opening became, keyed by the flow's index, value: the member's group."""
    openings: dict[Key, list[Opened]] = {}
    for o in opened:
        openings.setdefault((o.proto, o.src, o.sport, o.dst, o.dport), []).append(o)
    for key, found in openings.items():
        found.sort(key=lambda o: o.at)
        # a flow's second packet may be noted too while its first is still on its way
        openings[key] = [
            o for i, o in enumerate(found)
            if not i or o.group != found[i - 1].group or o.at - found[i - 1].at > REUSE_S
        ]  # fmt: skip
    flows: list[Flow] = []
    groups: dict[int, int] = {}
    current: dict[tuple[Key, int], int] = {}  # (initiator's key, opening) -> flow index
    total = 0
    for moment, _, frame in _records(pcap):
        total += 1
        parsed = five_tuple(frame)
        if parsed is None:
            continue
        key, length = parsed
        reverse: Key = (key[0], key[3], key[4], key[1], key[2])
        initiator, noted = key, openings.get(key)
        if noted is None and (back := openings.get(reverse)) is not None:
            initiator, noted = reverse, back
        which = -1
        if noted is not None:
            # the latest opening of this 5-tuple before the packet (a port used again);
            # packets before the first are its own (a server that spoke first)
            which = 0
            for i, o in enumerate(noted):
                if o.at <= moment + MATCH_SLACK:
                    which = i
        if noted is None or which < 0:
            # not opened by a member: one flow per 5-tuple, its first sender first
            initiator = reverse if (reverse, -1) in current else key
        index = current.get((initiator, which))
        if index is None:
            index = len(flows)
            current[(initiator, which)] = index
            flows.append(Flow(*initiator, first=moment, last=moment))
            if noted is not None and which >= 0:
                groups[index] = noted[which].group
        flow = flows[index]
        flow.last = moment
        flow.packets += 1
        flow.bytes += length
    return flows, total, groups


def _records(pcap: Path) -> Iterator[tuple[float, bytes, bytes]]:
    if pcap.is_file():
        yield from pcap_records(pcap)


def label(flows: list[Flow], groups: Mapping[int, int], owners: Mapping[int, Owner]) -> None:
    """Write each flow's member, kind, category and state from its group's owner."""
    for index, group in groups.items():
        owner = owners.get(group)
        if owner is None:
            continue
        flow = flows[index]
        flow.member, flow.kind, flow.category = owner.name, owner.kind, owner.category
        flow.state = owner.state_at(flow.first)


def write_flows(path: Path, flows: list[Flow]) -> None:
    """Write ``flows.csv`` (flows in the order their first packet came)."""
    with atomic.replacing(path, durable=True) as out:
        writer = csv.DictWriter(out, fieldnames=FIELDS)
        writer.writeheader()
        for flow in sorted(flows, key=lambda f: f.first):
            writer.writerow(flow.row())


def labelled_share(flows: list[Flow], total: int) -> float:
    """The share of the pcap's packets that lie in labelled flows (1.0 for none)."""
    if not total:
        return 1.0
    return sum(f.packets for f in flows if f.member) / total
