"""NetGent's network measurement steps as actions of a state: ``ping``, ``iperf``,
``ndt`` and ``wget`` run the real tools (:mod:`..measure`) and keep their parsed results
with the run, for the item's folder and the dataset manifest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .waits import ActionFailed, Waits

if TYPE_CHECKING:
    from ..measure import Peer


class StepFailed(ActionFailed):
    """A measurement step failed: the tool is missing, the far end did not answer, or it
    ran out of time; the message says which and what to do."""

    cause = "network measurement failed"


class MeasureActions(Waits):
    """The measurement steps, writing in the run's ``output`` folder and keeping their
    results in ``measurements`` (secrets redacted)."""

    measurements: list[dict[str, Any]]
    output: Path
    redact: Callable[[str], str]

    def ping(self, params: dict[str, Any]) -> None:
        """``ping {host, count, interval_seconds, timeout_seconds, packet_size}``."""
        self._step("ping", params)

    def iperf(self, params: dict[str, Any]) -> None:
        """``iperf {host, port, duration_seconds, interval_seconds, omit_seconds, udp,
        reverse, bitrate, parallel}`` (iperf3's client)."""
        self._step("iperf", params)

    def ndt(self, params: dict[str, Any]) -> None:
        """``ndt {download, upload, server, service_url, ...}`` (an NDT7 client)."""
        self._step("ndt", params)

    def wget(self, params: dict[str, Any]) -> None:
        """``wget {url, output_file, timeout_seconds, tries, user_agent,
        no_check_certificate}``."""
        self._step("wget", params)

    def _step(self, kind: str, params: dict[str, Any]) -> None:
        __tracebackhide__ = True  # ``params`` holds the filled values, secrets too
        from ..measure import MeasureError, peers, run_step

        try:
            for peer in peers(kind, params):
                if why := _way_to(peer):
                    raise StepFailed(self.redact(f"{kind} step: {why}"))
            result = run_step(
                kind,
                params,
                folder=self.output,
                deadline=self.deadline,
                redact=self.redact,
                stop=self.cancel,
            )
        except MeasureError as exc:
            raise StepFailed(self.redact(str(exc))) from None  # secrets out at the source
        self.measurements.append(result)


def _way_to(peer: Peer) -> str:
    """Open the way from a worker's own network namespace to ``peer``: a server on the
    host's loopback is bridged (TCP), any other host goes by the worker's uplink; "" or
    why it cannot be reached. Outside a namespace every way is open already."""
    from ..network import netns

    if not netns.isolated():
        return ""
    host = peer.host.strip("[]").lower()
    if netns.beyond_loopback([host]):
        if why := netns.ensure_uplink():
            return f"{peer.host} is beyond this machine: {why}"
        return ""
    if peer.udp:
        return (
            f"UDP to {peer.host} cannot reach a server on this machine's loopback from the "
            "worker's own network namespace (packet capture or network conditions give it "
            "one): measure over TCP, or to a server on another address"
        )
    if peer.port is None:
        return ""  # ICMP is answered by the namespace's own loopback, as by the host's
    if host not in ("127.0.0.1", "localhost"):
        return (
            f"{peer.host}:{peer.port} on this machine's loopback is carried into the "
            "worker's own network namespace only as 127.0.0.1: use that address"
        )
    return netns.bridge().reach(f"http://127.0.0.1:{peer.port}")
