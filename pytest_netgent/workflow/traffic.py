"""``expect_traffic:``: what a workflow's captured packets must show for its item to
pass, so that a green item proves its traffic and not only its pages (a player that
reached "Watching" while its video stayed paused fetched no media).

Each expectation names at least one figure, all at least-bounds: ``down`` and ``up``
(bytes received by and sent from the browser's side, a size such as ``500 kB`` or
``2 MB``), ``flows`` (connections and UDP flows) and ``rtp_streams`` (RTP streams each
way, a call's audio and video); optionally narrowed to the packets seen while ``state``
was the current state and to the server ``host`` (a host, ``host:port`` or a URL, which
may use ``{base_url}`` and vars). The figures are read from the item's pcap
(:mod:`pytest_netgent.capture.traffic`).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?)?b?\s*$", re.I)
UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def size_bytes(value: int | float | str) -> int:
    """``value`` in bytes: a number is bytes; text is a number with a unit, B, kB, MB,
    GB (powers of 1000) or KiB, MiB, GiB (powers of 1024)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int | float):
        number, unit = float(value), ""
    else:
        match = SIZE.match(value)
        if match is None:
            raise ValueError(f"{value!r} is not a size: give bytes, or e.g. 500 kB, 2 MB, 1 MiB")
        number, unit = float(match[1]), (match[2] or "").lower()
    if number < 0:
        raise ValueError(f"{value!r} is not a size: it is below 0")
    return int(number * UNITS[unit])


def size_text(count: float) -> str:
    """``count`` bytes as people read them: ``12.3 kB``, ``4.56 MB``."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{int(count)} B"


class TrafficExpectation(BaseModel):
    """One ``expect_traffic`` entry: at least these figures, where it says."""

    model_config = ConfigDict(extra="forbid")

    state: str | None = Field(
        None, description="Only the packets seen while this state was the current one."
    )
    host: str | None = Field(
        None,
        description="Only traffic with this server: a host, host:port or URL (may use "
        "{base_url} and vars).",
    )
    down: int | None = Field(
        None, description="At least this many bytes received (e.g. 2 MB, 500 kB, 1 MiB)."
    )
    up: int | None = Field(None, description="At least this many bytes sent.")
    flows: int | None = Field(None, ge=0, description="At least this many flows.")
    rtp_streams: int | None = Field(
        None, ge=0, description="At least this many RTP streams each way (a call's media)."
    )

    @field_validator("down", "up", mode="before")
    @classmethod
    def _size(cls, value: object) -> int | None:
        if value is None:
            return None
        if not isinstance(value, int | float | str):
            raise ValueError(f"{value!r} is not a size: give bytes, or e.g. 500 kB, 2 MB")
        return size_bytes(value)

    @model_validator(mode="after")
    def _one_figure(self) -> TrafficExpectation:
        if all(v is None for v in (self.down, self.up, self.flows, self.rtp_streams)):
            raise ValueError(
                "names no figure: give at least one of down, up, flows, rtp_streams "
                "(e.g. {state: Watching, down: 1 MB})"
            )
        return self
