"""The ``ndt`` step: M-Lab's NDT7 speed test with the Go client (``ndt7-client``, or
NetGent's name for it, ``ndt-client``), read from the client's ``-format json`` lines."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .process import Completed, Params, Peer, Runner, arg, failure, find_tool

STEP = "ndt"
REQUIRED: tuple[str, ...] = ()
OPTIONAL = (
    "timeout",
    "download",
    "upload",
    "server",
    "service_url",
    "scheme",
    "no_verify",
    "client_name",
)
BINARIES = ("ndt7-client", "ndt-client")
INSTALL = (
    "`go install github.com/m-lab/ndt7-client-go/cmd/ndt7-client@latest` "
    "(then add $(go env GOPATH)/bin to PATH), or put a client named ndt7-client on PATH"
)
DEFAULT_TIMEOUT = "55s"
DURATION = re.compile(r"^(\d+(\.\d*)?(ns|us|µs|ms|s|m|h))+$")
SCHEMES = ("ws", "wss")
SUMMARY_KEYS = ("ServerFQDN", "Download", "Upload")
TO_MBPS = {"bit/s": 1e-6, "kbit/s": 1e-3, "mbit/s": 1.0, "gbit/s": 1e3}
TO_MS = {"us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}


def timeout(params: Params) -> str:
    """The ``-timeout`` as a Go duration: a bare number is seconds."""
    value = params.text("timeout") or DEFAULT_TIMEOUT
    try:
        return arg(float(value)) + "s"
    except ValueError:
        pass
    if not DURATION.match(value):
        raise failure(STEP, f"timeout {value!r} is not a duration", "give e.g. 55s or 2m")
    return value


LOCATE_HOST = "locate.measurementlab.net"
"""Where an NDT7 client asks for a server when it is given none (M-Lab's locate API)."""


def peers(params: Params) -> list[Peer]:
    """The server given (``server`` host[:port], or ``service_url``), else M-Lab's
    locate service (the server it names is beyond this machine too)."""
    scheme = (params.text("scheme") or "wss").lower()
    default = 80 if scheme == "ws" else 443
    if (url := params.text("service_url")) is not None:
        parts = urlsplit(url)
        with contextlib.suppress(ValueError):
            if parts.hostname:
                return [Peer(parts.hostname, parts.port or default)]
    if (server := params.text("server")) is not None:
        host, colon, port = server.rpartition(":")
        if not colon or ":" in host or not port.isdigit():  # no port, or an IPv6 address
            host, port = server.strip("[]"), ""
        return [Peer(host, int(port) if port else default)]
    return [Peer(LOCATE_HOST, 443)]


def command(params: Params, tool: str) -> list[str]:
    """``ndt7-client -format json -timeout T [-download=false] [-upload=false] ...``."""
    download, upload = params.flag("download", True), params.flag("upload", True)
    if not (download or upload):
        raise failure(STEP, "download and upload are both false", "let one of them be true")
    argv = [tool, "-format", "json", "-timeout", timeout(params)]
    argv += [] if download else ["-download=false"]
    argv += [] if upload else ["-upload=false"]
    for name, option in (("server", "-server"), ("service_url", "-service-url")):
        value = params.text(name)
        if value is not None:
            argv += [option, value]
    scheme = params.text("scheme")
    if scheme is not None:
        if scheme.lower() not in SCHEMES:
            raise failure(STEP, f"scheme {scheme!r} is not ws or wss", "give ws or wss")
        argv += ["-scheme", scheme.lower()]
    argv += ["-no-verify"] if params.flag("no_verify") else []
    client = params.text("client_name")
    if client is not None:
        argv += ["-client-name", client]
    return argv


def lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects the client printed, one a line (other lines are skipped)."""
    found = []
    for line in stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


def scaled(value: Any, table: Mapping[str, float]) -> float | None:
    """A ``{"Value", "Unit"}`` of the summary in the unit of ``table``."""
    if not isinstance(value, Mapping) or not isinstance(value.get("Value"), (int, float)):
        return None
    factor = table.get(str(value.get("Unit", "")).lower(), 1.0)
    return float(value["Value"]) * factor


def direction(summary: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The throughput, latency and retransmission of one direction."""
    part = summary.get(key) or {}
    name = key.lower()
    return {
        f"{name}_mbps": scaled(part.get("Throughput"), TO_MBPS),
        f"{name}_latency_ms": scaled(part.get("Latency"), TO_MS),
        f"{name}_retransmission_pct": scaled(part.get("Retransmission"), {"%": 1.0}),
    }


def failure_text(value: Any) -> str:
    """The text of an ``error`` line's value (``{"Failure": ..., "Test": ...}``)."""
    if isinstance(value, Mapping) and "Failure" in value:
        return str(value["Failure"])
    return str(value)


def parse(done: Completed) -> dict[str, Any]:
    """The client's last summary; a :class:`MeasureError` when it printed none."""
    objects = lines(done.stdout)
    summaries = [o for o in objects if any(k in o for k in SUMMARY_KEYS)]
    errors = [done.redact(failure_text(o.get("Value"))) for o in objects if o.get("Key") == "error"]
    if not summaries:
        what = "the client printed no summary" + (f": {'; '.join(errors)}" if errors else "")
        raise done.fail(what, "check the server, the network and the ndt params")
    summary = summaries[-1]
    return {
        "server": done.redact(str(summary.get("ServerFQDN") or "")) or None,
        "server_ip": summary.get("ServerIP"),
        "client_ip": summary.get("ClientIP"),
        **direction(summary, "Download"),
        **direction(summary, "Upload"),
        "errors": errors,
        "summary": summary,
    }


def run(values: Mapping[str, Any], runner: Runner) -> dict[str, Any]:
    """Run the NDT7 test to its end."""
    params = Params(STEP, values)
    argv = command(params, find_tool(STEP, BINARIES, INSTALL))
    done = runner.run(STEP, argv)
    done.check("check the server, the network and the ndt params")
    return {**done.record(), **parse(done)}


def summary(result: Mapping[str, Any]) -> str:
    """``ndt SERVER: 94.10 Mbit/s down, 12.30 Mbit/s up, latency 12.0 ms``."""
    parts = []
    for key, word in (("download_mbps", "down"), ("upload_mbps", "up")):
        if result.get(key) is not None:
            parts.append(f"{float(result[key]):.2f} Mbit/s {word}")
    if result.get("download_latency_ms") is not None:
        parts.append(f"latency {float(result['download_latency_ms']):.1f} ms")
    return f"ndt {result.get('server') or '?'}: {', '.join(parts) or 'no throughput'}"
