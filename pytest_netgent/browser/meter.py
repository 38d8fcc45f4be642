"""What the run's in-page samplers share (the video sampler, the WebRTC meter): the run's
start, the state running now, and the envelope every sample carries, so that video,
WebRTC and the timeline line up."""

from __future__ import annotations

import bisect
import time
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
        self._since: list[float] = []
        self._states: list[str] = []
        """The states the run went through, each from the time in ``_since``."""

    @property
    def state(self) -> str:
        """The state running now."""
        return self._states[-1] if self._states else ""

    @state.setter
    def state(self, name: str) -> None:
        if self.state != name:
            self._since.append(time.time())
            self._states.append(name)

    def state_at(self, at: float) -> str:
        """The state that ran at ``at`` (seconds since the epoch): a sample taken in a
        page is its state's even when taken from the page later (a tab in the background,
        a frame read at the end of the run)."""
        index = bisect.bisect_right(self._since, at)
        return self._states[index - 1] if index else ""

    def envelope(self, entry: dict[str, Any]) -> dict[str, Any]:
        """A sample's ``time`` (ISO 8601 UTC), ``elapsed`` (seconds since the run
        started, as the timeline counts), ``state`` (the one running when it was taken)
        and ``page`` (redacted), from the page's ``t`` (milliseconds since the epoch) and
        ``page``."""
        at = float(entry["t"]) / 1000.0
        return {
            "time": datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds"),
            "elapsed": round(at - self.started, 3),
            "state": self.state_at(at),
            "page": self.redact(str(entry.get("page", ""))),
        }
