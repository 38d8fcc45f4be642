"""What the item running in this process is doing, for whoever shows it (the live
status lines of :mod:`pytest_netgent.plugin.status`): one sink per process, connected
while they are drawn; without one, publishing costs a lookup."""

from __future__ import annotations

from collections.abc import Callable

Sink = Callable[[dict[str, str]], None]

_sink: Sink | None = None


def publish(**fields: str) -> None:
    """Tell the sink ``fields`` of the running item: ``doing`` (the last timeline event,
    as the log says it), ``pcap`` (the path its packets are captured to)."""
    sink = _sink
    if sink is not None:
        sink(fields)


def listening() -> bool:
    """Whether a sink is connected (what is published is worth making)."""
    return _sink is not None


def connect(sink: Sink | None) -> None:
    """Send what is published to ``sink`` from now on (``None``: nowhere)."""
    global _sink
    _sink = sink
