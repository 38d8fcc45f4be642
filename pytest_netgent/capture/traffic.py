"""An item's traffic in figures, read from its pcap: bytes each way per server and per
workflow state, flows, and the RTP streams of a call; and the workflow's
``expect_traffic`` checked against them.

A flow is a TCP connection or a UDP 5-tuple; its client is the side that sent its
first packet (the capture starts before the item's first page, with the browser's
connections closed, so a connection's first packet is its opening). ``up`` counts the
bytes of whole frames its client sent, ``down`` those its server sent. A server is
named by its address and port, and by the host name a DNS answer in the capture gave
that address. A packet belongs to the state that was current when it was captured (the
item's timeline says when each state began). An RTP stream is one SSRC in one direction
of a UDP flow (WebRTC's media, under SRTP: its RTP header stays readable).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..workflow.traffic import TrafficExpectation, size_text
from .pcap import five_tuple, pcap_records

START = "(start_url)"
"""The state of packets captured before the first state began (the start page's)."""

RTP_MIN_PACKETS = 10
"""Fewer packets of one SSRC than this are no stream (a probe, a stray packet)."""

Endpoint = tuple[str, int]


@dataclass
class Cell:
    """Bytes and packets each way of one server in one state, and the flows opened."""

    up: int = 0
    down: int = 0
    packets: int = 0
    flows: int = 0


@dataclass
class Stream:
    """One RTP stream: an SSRC sent one way on a UDP flow."""

    ssrc: int
    sender: Endpoint
    receiver: Endpoint
    upward: bool
    """Sent by the flow's client."""
    server: Endpoint
    packets: int = 0
    bytes: int = 0
    states: set[str] = field(default_factory=set)


@dataclass
class Traffic:
    """The figures of one item's packets."""

    packets: int = 0
    bytes: int = 0
    cells: dict[tuple[str, Endpoint], Cell] = field(default_factory=dict)
    """(state, server) -> its figures."""
    names: dict[str, str] = field(default_factory=dict)
    """Address -> the host name a DNS answer gave it."""
    streams: list[Stream] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    """State -> how long it was current (the last one: until the last packet)."""

    def cell(self, state: str, server: Endpoint) -> Cell:
        return self.cells.setdefault((state, server), Cell())

    def server_text(self, server: Endpoint) -> str:
        address, port = server
        shown = f"[{address}]" if ":" in address else address
        name = self.names.get(address)
        return f"{shown}:{port}" + (f" ({name})" if name else "")

    def document(self) -> dict[str, Any]:
        """The figures as ``traffic.json`` and ``item.json`` hold them."""
        servers: dict[Endpoint, Cell] = {}
        states: dict[str, Cell] = {}
        for (state, server), cell in self.cells.items():
            for total in (servers.setdefault(server, Cell()), states.setdefault(state, Cell())):
                total.up += cell.up
                total.down += cell.down
                total.packets += cell.packets
                total.flows += cell.flows
        rows = sorted(servers.items(), key=lambda kv: -(kv[1].up + kv[1].down))
        return {
            "packets": self.packets,
            "bytes": self.bytes,
            "down": sum(c.down for c in servers.values()),
            "up": sum(c.up for c in servers.values()),
            "flows": sum(c.flows for c in servers.values()),
            "servers": [{"server": self.server_text(s), **vars(c)} for s, c in rows],
            "states": [
                {
                    "state": name,
                    **vars(c),
                    "seconds": round(self.seconds.get(name, 0.0), 3),
                    "down_bps": _rate(c.down, self.seconds.get(name, 0.0)),
                    "up_bps": _rate(c.up, self.seconds.get(name, 0.0)),
                }
                for name, c in states.items()
            ],
            "rtp_streams": [
                {
                    "ssrc": s.ssrc,
                    "from": self.server_text(s.sender),
                    "to": self.server_text(s.receiver),
                    "packets": s.packets,
                    "bytes": s.bytes,
                    "states": sorted(s.states),
                }
                for s in self.streams
            ],
        }


def summarise(pcaps: Iterable[Path], states: Sequence[tuple[float, str]] = ()) -> Traffic:
    """The figures of the packets of ``pcaps`` (one item's: its parts per interface, or
    its merged file; a last packet cut short is left out), each counted in the state
    that began last before it (``states``: ``(epoch, name)`` in time order)."""
    starts = [at for at, _ in states]
    traffic = Traffic()
    clients: dict[tuple[str, Endpoint, Endpoint], bool] = {}  # (proto, a, b) -> a is client
    streams: dict[tuple[int, Endpoint, Endpoint], Stream] = {}
    first: float | None = None
    last: float | None = None
    for path in pcaps:
        for moment, _, frame in _records(path):
            first = moment if first is None else min(first, moment)
            last = moment if last is None else max(last, moment)
            traffic.packets += 1
            traffic.bytes += len(frame)
            parsed = five_tuple(frame)
            if parsed is None:
                continue
            (proto, src, sport, dst, dport), length = parsed
            here = bisect.bisect_right(starts, moment) - 1
            state = states[here][1] if here >= 0 else START
            sender, receiver = (src, sport), (dst, dport)
            upward = clients.get((proto, sender, receiver))
            if upward is None:
                upward = not clients.get((proto, receiver, sender), False)
                if upward:
                    clients[(proto, sender, receiver)] = True
                    traffic.cell(state, receiver).flows += 1
            server = receiver if upward else sender
            cell = traffic.cell(state, server)
            cell.packets += 1
            if upward:
                cell.up += length
            else:
                cell.down += length
            if proto == "udp":
                payload = _udp_payload(frame)
                if sport == 53 and payload:
                    traffic.names.update(_dns_answers(payload))
                elif (ssrc := _rtp_ssrc(payload)) is not None:
                    key = (ssrc, sender, receiver)
                    stream = streams.get(key)
                    if stream is None:
                        stream = streams[key] = Stream(ssrc, sender, receiver, upward, server)
                    stream.packets += 1
                    stream.bytes += length
                    stream.states.add(state)
    traffic.streams = [s for s in streams.values() if s.packets >= RTP_MIN_PACKETS]
    traffic.seconds = _durations(states, first, last)
    return traffic


def _durations(
    states: Sequence[tuple[float, str]], first: float | None, last: float | None
) -> dict[str, float]:
    """How long each state was current: from its start to the next one's, the last one
    to the last packet (the start page's from the first packet)."""
    if first is None or last is None:
        return {}
    bounds = [(first, START), *states]
    out: dict[str, float] = {}
    for (at, name), (until, _) in zip(bounds, [*bounds[1:], (last, "")], strict=True):
        out[name] = out.get(name, 0.0) + max(min(until, last) - max(at, first), 0.0)
    return out


def _rate(count: int, seconds: float) -> int | None:
    """Bits per second of ``count`` bytes over ``seconds`` (None under a millisecond)."""
    return round(count * 8 / seconds) if seconds >= 0.001 else None


def _records(path: Path) -> Iterable[tuple[float, bytes, bytes]]:
    try:
        yield from pcap_records(path)
    except FileNotFoundError:
        return


def _udp_payload(frame: bytes) -> bytes:
    """The UDP payload of an Ethernet frame (IPv4 or IPv6), b"" if none."""
    ip = frame[14:]
    if not ip:
        return b""
    header = (ip[0] & 15) * 4 if ip[0] >> 4 == 4 else 40
    return ip[header + 8 :]


def _rtp_ssrc(payload: bytes) -> int | None:
    """The SSRC of an RTP packet (version 2, not RTCP, STUN or DTLS), else None."""
    if len(payload) < 12 or payload[0] >> 6 != 2:
        return None
    if 72 <= (payload[1] & 0x7F) <= 76:  # RTCP's packet types 200-204
        return None
    ssrc: int = struct.unpack("!I", payload[8:12])[0]
    return ssrc


def _dns_answers(payload: bytes) -> dict[str, str]:
    """Address -> name of the A and AAAA answers of a DNS response."""
    import ipaddress

    found: dict[str, str] = {}
    if len(payload) < 12 or not payload[2] & 0x80:
        return found
    questions, answers = struct.unpack("!HH", payload[4:8])
    offset = 12
    try:
        for _ in range(questions):
            _, offset = _name(payload, offset)
            offset += 4
        for _ in range(answers):
            name, offset = _name(payload, offset)
            kind, _, _, size = struct.unpack("!HHIH", payload[offset : offset + 10])
            offset += 10
            data = payload[offset : offset + size]
            offset += size
            if kind == 1 and size == 4:
                found[str(ipaddress.IPv4Address(data))] = name
            elif kind == 28 and size == 16:
                found[str(ipaddress.IPv6Address(data))] = name
    except (struct.error, IndexError, ValueError):  # a malformed answer: what came before
        pass
    return found


def _name(payload: bytes, offset: int, depth: int = 0) -> tuple[str, int]:
    """A DNS name at ``offset`` (compressed pointers followed) and the offset after it."""
    labels = []
    while True:
        length = payload[offset]
        if length & 0xC0 == 0xC0:
            if depth > 16:
                raise ValueError("a DNS name points in a circle")
            pointer = struct.unpack("!H", payload[offset : offset + 2])[0] & 0x3FFF
            rest, _ = _name(payload, pointer, depth + 1)
            labels.append(rest)
            return ".".join(labels), offset + 2
        offset += 1
        if length == 0:
            return ".".join(labels), offset
        labels.append(payload[offset : offset + length].decode("ascii", "replace"))
        offset += length


# --------------------------------------------------------------------------- expectations


def host_matcher(host: str) -> tuple[str, int | None]:
    """(host name or address, port or None) of an ``expect_traffic`` host: a URL, a
    ``host:port`` or a host."""
    text = host.strip()
    if "://" in text:
        parts = urlsplit(text)
        default = {"https": 443, "wss": 443}.get(parts.scheme.lower(), 80)
        return (parts.hostname or "").lower(), parts.port or default
    if text.startswith("["):  # [::1]:8000
        address, _, port = text[1:].partition("]")
        port = port.lstrip(":")
        return address.lower(), int(port) if port.isdigit() else None
    name, colon, port = text.rpartition(":")
    if colon and ":" not in name and port.isdigit():
        return name.lower(), int(port)
    return text.lower(), None


def _matches(traffic: Traffic, server: Endpoint, host: tuple[str, int | None] | None) -> bool:
    if host is None:
        return True
    name, port = host
    address = server[0]
    known = {address, traffic.names.get(address, "").lower()}
    if address in ("127.0.0.1", "::1"):
        known.add("localhost")
    return name in known and (port is None or port == server[1])


def shortfalls(
    traffic: Traffic,
    expectations: Sequence[TrafficExpectation],
    hosts: Mapping[int, str] | None = None,
) -> list[tuple[int, str]]:
    """``(index, what fell short)`` of each expectation the figures do not meet; an
    expectation's host is ``hosts[index]`` (its placeholders filled) when given."""
    out = []
    for index, expect in enumerate(expectations):
        host_text = (hosts or {}).get(index, expect.host)
        host = host_matcher(host_text) if host_text else None
        cells = [
            c
            for (state, server), c in traffic.cells.items()
            if (expect.state is None or state == expect.state) and _matches(traffic, server, host)
        ]
        where = ", ".join(
            [*([f"while {expect.state!r}"] if expect.state else []),
             *([f"with {host_text}"] if host_text else [])]
        ) or "over the whole item"  # fmt: skip
        missing = []
        for figure, verb in (("down", "received"), ("up", "sent")):
            wanted = getattr(expect, figure)
            got = sum(getattr(c, figure) for c in cells)
            if wanted is not None and got < wanted:
                missing.append(f"{verb} {size_text(got)}, expected at least {size_text(wanted)}")
        if expect.flows is not None and (flows := sum(c.flows for c in cells)) < expect.flows:
            missing.append(f"opened {flows} flow(s), expected at least {expect.flows}")
        if expect.rtp_streams is not None:
            chosen = [
                s
                for s in traffic.streams
                if (expect.state is None or expect.state in s.states)
                and _matches(traffic, s.server, host)
            ]
            up = sum(1 for s in chosen if s.upward)
            down = len(chosen) - up
            if min(up, down) < expect.rtp_streams:
                missing.append(
                    f"carried {up} RTP stream(s) one way and {down} the other, expected at "
                    f"least {expect.rtp_streams} each way"
                )
        if missing:
            out.append((index, f"{where}: " + "; ".join(missing)))
    return out
