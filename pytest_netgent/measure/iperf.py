"""The ``iperf`` step: an ``iperf3 -J`` client test against a server, its intervals and
totals read from iperf3's JSON report."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .process import Completed, Params, Peer, Runner, arg, failure, find_tool, rate

STEP = "iperf"
REQUIRED = ("host",)
OPTIONAL = (
    "port",
    "duration_seconds",
    "interval_seconds",
    "omit_seconds",
    "udp",
    "reverse",
    "bitrate",
    "parallel",
)
INSTALL = "apt-get install -y iperf3"
DEFAULT_PORT = 5201
DEFAULT_DURATION = 10


def command(params: Params, tool: str) -> list[str]:
    """``iperf3 -J -c HOST -p PORT -t DURATION [-i] [-O] [-u] [-R] [-b] [-P]``."""
    host = params.required("host")
    if host.startswith("-"):
        raise failure(STEP, f"the host {host!r} starts with '-'", "give a host name or address")
    port = params.integer("port", DEFAULT_PORT, minimum=1) or DEFAULT_PORT
    duration = params.integer("duration_seconds", DEFAULT_DURATION, minimum=1)
    argv = [tool, "-J", "-c", host, "-p", arg(port), "-t", arg(duration or DEFAULT_DURATION)]
    interval = params.number("interval_seconds")
    if interval is not None:
        argv += ["-i", arg(interval)]
    omit = params.integer("omit_seconds")
    if omit is not None:
        argv += ["-O", arg(omit)]
    argv += ["-u"] if params.flag("udp") else []
    argv += ["-R"] if params.flag("reverse") else []
    bitrate = params.text("bitrate")
    if bitrate is not None:
        argv += ["-b", bitrate]
    parallel = params.integer("parallel", minimum=1)
    if parallel is not None:
        argv += ["-P", arg(parallel)]
    return argv


def peers(params: Params) -> list[Peer]:
    """The server: its control connection is TCP, the test's data UDP with ``udp``."""
    port = params.integer("port", DEFAULT_PORT, minimum=1) or DEFAULT_PORT
    host = params.required("host")
    return [Peer(host, port)] + ([Peer(host, None, udp=True)] if params.flag("udp") else [])


def fix_for(error: str, host: str, port: int) -> str:
    """What to do about iperf3's ``error`` text."""
    text = error.lower()
    if "connection refused" in text or "unable to connect" in text:
        return f"is `iperf3 -s -p {port}` running on {host}?"
    if "busy" in text:
        return "the server is running another test: wait for it, or use another server or port"
    if "resolve" in text or "name or service" in text:
        return f"check the host name {host!r}"
    return "check the iperf params and the server"


def report(done: Completed, host: str, port: int) -> dict[str, Any]:
    """iperf3's JSON report; a :class:`MeasureError` for its ``error`` or a bad exit."""
    try:
        data = json.loads(done.stdout)
    except ValueError:
        data = None
    shown = done.redact(host)
    if isinstance(data, dict) and data.get("error"):
        error = done.redact(str(data["error"]))
        raise failure(
            STEP, f"iperf3 to {shown}:{port} failed: {error}", fix_for(error, shown, port)
        )
    done.check(f"check that an iperf3 server listens on {shown}:{port}")
    if not isinstance(data, dict):
        raise done.fail("iperf3 printed no JSON report", "check the iperf3 version (3.x)")
    return data


def intervals(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each interval's sum over the streams."""
    found = []
    for interval in data.get("intervals") or []:
        total = interval.get("sum") or {}
        found.append(
            {
                "start": total.get("start"),
                "end": total.get("end"),
                "bytes": total.get("bytes"),
                "bits_per_second": total.get("bits_per_second"),
                "omitted": bool(total.get("omitted", False)),
            }
        )
    return found


def totals(end: Mapping[str, Any], udp: bool) -> dict[str, Any]:
    """The totals of iperf3's ``end`` section (UDP reports of old iperf3 have only ``sum``)."""
    sent = end.get("sum_sent") or end.get("sum") or {}
    received = end.get("sum_received") or end.get("sum") or {}
    found = {
        "sent_bytes": sent.get("bytes"),
        "received_bytes": received.get("bytes"),
        "sent_bps": sent.get("bits_per_second"),
        "received_bps": received.get("bits_per_second"),
        "seconds": sent.get("seconds") or received.get("seconds"),
    }
    if udp:
        found["jitter_ms"] = received.get("jitter_ms")
        found["lost_percent"] = received.get("lost_percent")
    else:
        found["retransmits"] = sent.get("retransmits")
    return found


def run(values: Mapping[str, Any], runner: Runner) -> dict[str, Any]:
    """Run the iperf3 client test to its end."""
    params = Params(STEP, values)
    argv = command(params, find_tool(STEP, ["iperf3"], INSTALL))
    host, port = argv[3], int(argv[5])
    udp, reverse = "-u" in argv, "-R" in argv
    done = runner.run(STEP, argv)
    data = report(done, host, port)
    return {
        **done.record(),
        "host": runner.redact(host),
        "port": port,
        "protocol": "udp" if udp else "tcp",
        "reverse": reverse,
        "intervals": intervals(data),
        **totals(data.get("end") or {}, udp),
    }


def summary(result: Mapping[str, Any]) -> str:
    """``iperf HOST:PORT: 9.41 Gbit/s sent, 9.40 Gbit/s received over 1.0 s``."""
    line = (
        f"iperf {result.get('host')}:{result.get('port')}"
        f"{' (udp)' if result.get('protocol') == 'udp' else ''}"
        f"{' (reverse)' if result.get('reverse') else ''}: "
        f"{rate(result.get('sent_bps'))} sent, {rate(result.get('received_bps'))} received"
    )
    if result.get("seconds") is not None:
        line += f" over {float(result['seconds']):.1f} s"
    if result.get("protocol") == "udp" and result.get("jitter_ms") is not None:
        line += f", jitter {float(result['jitter_ms']):.3f} ms, {result.get('lost_percent')}% lost"
    return line
