"""The ``ping`` step: iputils' ``ping`` to a host, its replies and round-trip times."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .process import Completed, Params, Peer, Runner, arg, failure, find_tool

STEP = "ping"
REQUIRED = ("host",)
OPTIONAL = ("count", "interval_seconds", "timeout_seconds", "packet_size")
INSTALL = "apt-get install -y iputils-ping"
DEFAULT_COUNT = 4

REPLY = re.compile(r"icmp_seq=(\d+)\s+ttl=(\d+)\s+time=([\d.]+)\s*ms")
COUNTS = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received")
LOSS = re.compile(r"([\d.]+)% packet loss")
RTT = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")


def command(params: Params, tool: str) -> list[str]:
    """``ping -c COUNT [-i I] [-W T] [-s S] HOST``."""
    host = params.required("host")
    argv = [tool, "-c", arg(params.integer("count", DEFAULT_COUNT, minimum=1) or 1)]
    for name, option in (("interval_seconds", "-i"), ("timeout_seconds", "-W")):
        value = params.number(name)
        if value is not None:
            argv += [option, arg(value)]
    size = params.integer("packet_size")
    if size is not None:
        argv += ["-s", arg(size)]
    if host.startswith("-"):
        raise failure(STEP, f"the host {host!r} starts with '-'", "give a host name or address")
    return [*argv, host]


def peers(params: Params) -> list[Peer]:
    """The pinged host (ICMP: no port)."""
    return [Peer(params.required("host"))]


def parse(output: str) -> dict[str, Any]:
    """The replies and the summary of iputils' ``ping`` output."""
    replies = [
        {"seq": int(seq), "ttl": int(ttl), "time_ms": float(ms)}
        for seq, ttl, ms in REPLY.findall(output)
    ]
    counts, loss, rtt = COUNTS.search(output), LOSS.search(output), RTT.search(output)
    transmitted = int(counts.group(1)) if counts else None
    received = int(counts.group(2)) if counts else len(replies)
    values: list[float | None] = [float(v) for v in rtt.groups()] if rtt else [None] * 4
    return {
        "transmitted": transmitted,
        "received": received,
        "loss_pct": float(loss.group(1)) if loss else None,
        "rtt_min_ms": values[0],
        "rtt_avg_ms": values[1],
        "rtt_max_ms": values[2],
        "rtt_mdev_ms": values[3],
        "replies": replies,
    }


def run(values: Mapping[str, Any], runner: Runner) -> dict[str, Any]:
    """Ping the host; a :class:`MeasureError` when ``ping`` fails or no reply comes."""
    params = Params(STEP, values)
    argv = command(params, find_tool(STEP, ["ping"], INSTALL))
    host = argv[-1]
    done = runner.run(STEP, argv)
    check(done, host)
    return {**done.record(), "host": runner.redact(host), **parse(done.stdout)}


def check(done: Completed, host: str) -> None:
    """iputils exits 1 when no reply came, 2 on other errors."""
    shown = done.redact(host)
    if done.returncode == 1:
        raise done.fail(f"no reply from {shown}", "check that the host is up and answers ICMP echo")
    done.check(f"check the host {shown!r} and the ping params")


def summary(result: Mapping[str, Any]) -> str:
    """``ping HOST: 3/3 replies, rtt min/avg/max 0.03/0.05/0.07 ms``."""
    line = (
        f"ping {result.get('host')}: {result.get('received')}/{result.get('transmitted')} replies"
    )
    if result.get("rtt_avg_ms") is not None:
        rtts = "/".join(f"{result[k]:.2f}" for k in ("rtt_min_ms", "rtt_avg_ms", "rtt_max_ms"))
        line += f", rtt min/avg/max {rtts} ms"
    return line
