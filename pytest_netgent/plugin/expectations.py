"""A workflow item's ``expect_traffic``, checked at the end of its run against the
packets its capture holds so far: an item whose traffic contradicts the states it
reached fails with the figures, in its call phase (as any other failure of its run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import ReplayError
from ..workflow.traffic import size_text
from .keys import capture_key

if TYPE_CHECKING:
    import pytest

    from ..replay.run import RunResult
    from ..workflow.spec import LoadedWorkflow

SECTION = "netgent traffic"
"""The report section that shows an item's figures and what was expected of them."""

CAUSE = "traffic contradicts the run"
"""What a failure of ``expect_traffic`` is (not UI drift: re-recording heals nothing)."""


def check_traffic(
    item: pytest.Item,
    loaded: LoadedWorkflow,
    values: Mapping[str, object],
    result: RunResult,
) -> None:
    """Check ``loaded``'s ``expect_traffic`` after a run that passed; a shortfall makes
    ``result`` fail with the figures. Without packet capture nothing is checked, and the
    item's report says so."""
    from ..capture.item import state_starts
    from ..capture.traffic import shortfalls
    from ..replay.run import substitute

    expectations = loaded.workflow.expect_traffic
    if not expectations or result.error is not None:
        return
    capture = item.stash.get(capture_key, None)
    traffic = capture.traffic_now(state_starts([result])) if capture is not None else None
    if traffic is None:
        item.add_report_section(
            "call",
            SECTION,
            "expect_traffic not checked: no packets are captured here (run with "
            "--netgent-capture=pcap)",
        )
        return
    hosts = {i: str(substitute(e.host, values)) for i, e in enumerate(expectations) if e.host}
    short = shortfalls(traffic, expectations, hosts)
    document = traffic.document()
    lines = [
        f"{document['packets']} packets: received {size_text(document['down'])}, sent "
        f"{size_text(document['up'])}, {document['flows']} flows, "
        f"{len(document['rtp_streams'])} RTP streams",
        *(
            f"  {row['state']}: received {size_text(row['down'])}, sent {size_text(row['up'])}"
            for row in document["states"]
        ),
    ]
    item.add_report_section("call", SECTION, "\n".join(lines))
    if not short:
        return
    shown = loaded.path.name
    reasons = [
        f"expect_traffic[{i}] ({shown}:{loaded.line_of('expect_traffic', i)}) {text}"
        for i, text in short
    ]
    result.passed = False
    result.error = ReplayError(
        "; ".join(reasons),
        workflow=item.name,
        location=f"{shown}:{loaded.line}",
        cause=CAUSE,
    )
