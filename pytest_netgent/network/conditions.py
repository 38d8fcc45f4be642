"""Network conditions: bandwidth, delay, jitter, loss and queue, and the named profiles.

``--netgent-network PROFILE`` (ini ``netgent_network``) or a workflow's ``network:`` key
(which wins, and may hold a placeholder such as ``"{net}"``) names a condition: a named
profile from :data:`PROFILES`, ``key=value`` pairs, or a profile with pairs that change
it (``3g,loss=1``)::

    rate    downlink rate, e.g. 2mbit, 500kbit, 1gbit
    up      uplink rate (default: rate)
    delay   one-way delay added in each direction, e.g. 40ms (the round trip grows by
            twice it)
    jitter  a random extra delay of up to this much per packet, e.g. 10ms (packets keep
            their order)
    loss    percent of packets lost in each direction, e.g. 1 or 1%
    queue   the bottleneck's buffer: packets (100) or milliseconds at rate (50ms)

A light module: configuration parses conditions without loading what applies them
(:mod:`pytest_netgent.network`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

UNITS = {"bit": 1, "kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}
"""Rate units, as ``tc`` writes them (bits per second)."""

TIMES = {"us": 1e-6, "ms": 1e-3, "s": 1.0}

KEYS = ("rate", "up", "delay", "jitter", "loss", "queue")


@dataclass(frozen=True)
class Condition:
    """One network condition: what :mod:`.link` puts on the wire for an item."""

    name: str = "custom"
    """The profile's name, or ``custom`` for pairs alone."""
    rate: int | None = None
    """Downlink rate in bit/s; None for no limit."""
    up: int | None = None
    """Uplink rate in bit/s; None for the downlink's."""
    delay: float = 0.0
    """One-way delay in seconds, added in each direction."""
    jitter: float = 0.0
    """Up to this many seconds more per packet, at random; order is kept."""
    loss: float = 0.0
    """Percent of packets dropped in each direction."""
    queue: int | None = None
    """The bottleneck's buffer in packets (None: :attr:`queue_ms` or the default)."""
    queue_ms: float | None = None
    """The bottleneck's buffer in milliseconds at its rate."""
    source: str = ""
    """Where a named profile's numbers come from."""

    @property
    def uplink(self) -> int | None:
        """The uplink rate in bit/s (the downlink's unless set)."""
        return self.up if self.up is not None else self.rate

    def packets(self, rate: int | None, mtu: int = 1500) -> int:
        """The buffer in packets for a bottleneck at ``rate``: :attr:`queue`, or
        :attr:`queue_ms` worth of full packets, or 100 ms worth (at least 10)."""
        if self.queue is not None:
            return self.queue
        ms = 100.0 if self.queue_ms is None else self.queue_ms
        if rate is None:
            return 1000
        return max(2 if self.queue_ms is not None else 10, int(rate * ms / 1000 / 8 / mtu))

    def text(self) -> str:
        """``rate=2mbit,delay=40ms``: the condition as ``key=value`` pairs."""
        parts = []
        if self.rate is not None:
            parts.append(f"rate={rate_text(self.rate)}")
        if self.up is not None:
            parts.append(f"up={rate_text(self.up)}")
        for key in ("delay", "jitter"):
            value = getattr(self, key)
            if value:
                parts.append(f"{key}={value * 1000:g}ms")
        if self.loss:
            parts.append(f"loss={self.loss:g}%")
        if self.queue is not None:
            parts.append(f"queue={self.queue}")
        elif self.queue_ms is not None:
            parts.append(f"queue={self.queue_ms:g}ms")
        return ",".join(parts) or "unshaped"

    def record(self) -> dict[str, Any]:
        """The columns a dataset is split by: the name and every number."""
        return {
            "network": self.name,
            "network_rate_bps": self.rate or "",
            "network_up_bps": self.uplink or "",
            "network_delay_ms": round(self.delay * 1000, 3),
            "network_jitter_ms": round(self.jitter * 1000, 3),
            "network_loss_pct": self.loss,
            "network_queue": self.queue if self.queue is not None else (
                f"{self.queue_ms:g}ms" if self.queue_ms is not None else ""
            ),
        }  # fmt: skip


def rate_text(bps: int) -> str:
    """``2mbit`` for 2,000,000."""
    for unit in ("gbit", "mbit", "kbit"):
        if bps % UNITS[unit] == 0:
            return f"{bps // UNITS[unit]}{unit}"
    return f"{bps}bit"


PROFILES: dict[str, Condition] = {
    "edge": Condition(
        "edge", rate=240_000, up=200_000, delay=0.420,
        source='WebPageTest "Mobile Edge (240 Kbps/200 Kbps 840ms RTT)"',
    ),
    "3g-slow": Condition(
        "3g-slow", rate=400_000, up=400_000, delay=0.200,
        source='WebPageTest "3G Slow (400 Kbps/400 Kbps 400ms RTT)"',
    ),
    "3g": Condition(
        "3g", rate=1_600_000, up=768_000, delay=0.150,
        source='WebPageTest "Mobile 3G (1.6 Mbps/768 Kbps 300ms RTT)"',
    ),
    "4g": Condition(
        "4g", rate=9_000_000, up=9_000_000, delay=0.085,
        source='WebPageTest "4G (9 Mbps/9 Mbps 170ms RTT)"',
    ),
    "lte": Condition(
        "lte", rate=12_000_000, up=12_000_000, delay=0.035,
        source='WebPageTest "LTE (12 Mbps/12 Mbps 70ms RTT)"',
    ),
    "dsl": Condition(
        "dsl", rate=1_500_000, up=384_000, delay=0.025,
        source='WebPageTest "DSL (1.5 Mbps/384 Kbps 50ms RTT)"',
    ),
    "cable": Condition(
        "cable", rate=5_000_000, up=1_000_000, delay=0.014,
        source='WebPageTest "Cable (5/1 Mbps 28ms RTT)"',
    ),
    "fios": Condition(
        "fios", rate=20_000_000, up=5_000_000, delay=0.002,
        source='WebPageTest "FIOS (20/5 Mbps 4ms RTT)"',
    ),
    "satellite": Condition(
        "satellite", rate=12_000_000, up=3_000_000, delay=0.300,
        source="geostationary: about 480 ms round trip by distance alone "
        "(4 x 35,786 km at the speed of light) and about 600 ms as measured for "
        "satellite service in the FCC's Measuring Broadband America reports; 12/3 Mbit/s "
        "is a common satellite plan of those reports",
    ),
    "lossy-wifi": Condition(
        "lossy-wifi", rate=20_000_000, up=20_000_000, delay=0.010, jitter=0.005, loss=2.0,
        source="WebPageTest-like home Wi-Fi numbers chosen here, with 2% loss in "
        "each direction: enough to put TCP into loss recovery several times per second "
        "of video",
    ),
}  # fmt: skip
"""The named profiles. Round trips published as such are halved into ``delay``. The
WebPageTest presets are those of its ``www/settings/connectivity.ini.sample``
(github.com/WPO-Foundation/webpagetest)."""


_RATE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmg]?bit)", re.IGNORECASE)
_TIME = re.compile(r"(\d+(?:\.\d+)?)\s*(us|ms|s)", re.IGNORECASE)


def parse(text: str, where: str = "--netgent-network") -> Condition | None:
    """The condition ``text`` names (None for ``none``/``off``/empty); ValueError says
    which part of ``text`` is wrong, names ``where`` (the option or key) and how to write
    it."""
    text = str(text).strip()
    where = f"{where}: " if where else ""
    if text.lower() in ("", "none", "off", "unshaped"):
        return None
    condition: Condition | None = None
    changes: dict[str, Any] = {}
    given: set[str] = set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError(
                f"{where}{text!r} has an empty part: write a profile name and key=value "
                "pairs separated by single commas, with none at either end (e.g. 3g,loss=1)"
            )
        if "=" not in part:
            if condition is not None or changes:
                raise ValueError(
                    f"{where}{part!r}: a profile name comes first, then key=value pairs "
                    f"(e.g. 3g,loss=1)"
                )
            condition = PROFILES.get(part.lower())
            if condition is None:
                raise ValueError(
                    f"{where}unknown network profile {part!r}; use one of "
                    f"{', '.join(PROFILES)}, or key=value pairs of {', '.join(KEYS)} "
                    "(e.g. rate=2mbit,delay=40ms)"
                )
            continue
        key, _, value = (s.strip() for s in part.partition("="))
        key = key.lower()
        if key not in KEYS:
            raise ValueError(
                f"{where}unknown key {key!r} in {text!r}; the keys are {', '.join(KEYS)}"
            )
        if key in given:
            raise ValueError(f"{where}{key!r} is given twice in {text!r}: give each key once")
        given.add(key)
        changes.update(_value(key, value, where))
    base = condition or Condition()
    name = base.name if condition is not None else "custom"
    if changes and condition is not None:
        name = f"{condition.name}+" + ",".join(p.strip() for p in text.split(",")[1:])
    return replace(base, name=name, **changes)


def _value(key: str, value: str, where: str) -> dict[str, Any]:
    if key in ("rate", "up"):
        m = _RATE.fullmatch(value)
        if m is None or float(m[1]) <= 0:
            raise ValueError(
                f"{where}{key}={value!r} is not a rate; write a number and kbit, mbit or "
                f"gbit (bits per second, as tc does), e.g. {key}=2mbit"
            )
        return {key: int(float(m[1]) * UNITS[m[2].lower()])}
    if key in ("delay", "jitter"):
        m = _TIME.fullmatch(value)
        if m is None:
            raise ValueError(
                f"{where}{key}={value!r} is not a time; write a number and ms (or s, us), "
                f"e.g. {key}=40ms"
            )
        seconds = float(m[1]) * TIMES[m[2].lower()]
        if seconds > 10:
            raise ValueError(f"{where}{key}={value!r}: at most 10s")
        return {key: seconds}
    if key == "loss":
        try:
            loss = float(value.rstrip("%").strip())
        except ValueError:
            loss = -1.0
        if not 0 <= loss < 100:
            raise ValueError(
                f"{where}loss={value!r} is not a percentage from 0 to under 100, e.g. loss=1"
            )
        return {"loss": loss}
    # queue: packets, or a time of buffer at the rate
    if value.isdigit() and int(value) > 0:
        return {"queue": int(value), "queue_ms": None}
    m = _TIME.fullmatch(value)
    if m is not None and float(m[1]) > 0:
        return {"queue_ms": float(m[1]) * TIMES[m[2].lower()] * 1000, "queue": None}
    raise ValueError(
        f"{where}queue={value!r}; write packets (queue=100) or milliseconds of buffer "
        "at the rate (queue=50ms)"
    )
