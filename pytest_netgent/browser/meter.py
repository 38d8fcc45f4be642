"""What the run's in-page samplers share (the video sampler, the WebRTC meter): the run's
start, the state running now, and the envelope every sample carries, so that video,
WebRTC and the timeline line up."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


class Meter:
    """Samples of one run taken in its pages; :attr:`samples` holds them."""

    def __init__(
        self,
        driver: WebDriver,
        started: float,
        redact: Callable[[str], str] = str,
        output_dir: Path | None = None,
    ) -> None:
        self.driver = driver
        self.started = started
        """Wall-clock time (seconds since the epoch) the run started."""
        self.redact = redact
        self.output_dir = output_dir or Path.cwd()
        """Where a relative ``out_path`` of the sampler's files is resolved."""
        self.samples: list[dict[str, Any]] = []
        self.state = ""
        """The state running now: samples taken are attributed to it."""

    def envelope(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A sample's ``time`` (ISO 8601 UTC), ``elapsed`` (seconds since the run
        started, as the timeline counts), ``state`` and ``page`` (redacted), from the
        page's ``t`` (milliseconds since the epoch) and ``page``."""
        at = float(entry["t"]) / 1000.0
        return {
            "time": datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds"),
            "elapsed": round(at - self.started, 3),
            "state": self.state,
            "page": self.redact(str(entry.get("page", ""))),
        }
