"""The video quality sampler behind the ``start_video_sampling`` and
``stop_video_sampling`` actions.

While sampling, every ``<video>`` of the page is sampled in the page itself every
``interval`` seconds (playback time, resolution, buffered time ahead, decoded and dropped
frames, stalls); each engine tick collects the samples waiting in the page, so sampling
costs no extra browser round trip. Pages loaded while sampling start their own sampler.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from .session import cdp

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

QoeSample = dict[str, Any]
"""One sample of one video: ``time`` (ISO 8601 UTC), ``elapsed`` (seconds since the run
started), ``state``, ``page``, ``video`` (its number on the page), ``element``,
``playback_time``, ``paused``, ``ended``, ``ready_state``, ``width``, ``height``,
``buffered_ahead`` (seconds), ``decoded_frames``, ``dropped_frames``, ``stalls`` (times
playback waited for data after it had started) and ``playback_rate``."""

FIELDS = (
    "video",
    "element",
    "playback_time",
    "paused",
    "ended",
    "ready_state",
    "width",
    "height",
    "buffered_ahead",
    "decoded_frames",
    "dropped_frames",
    "stalls",
    "playback_rate",
)
"""The fields the page measures, in the order samples list them."""

STOP = "return window.__netgentQoe && window.__netgentQoe.stop ? window.__netgentQoe.stop() : [];"


@cache
def _source() -> str:
    return resources.files(__package__).joinpath("video.js").read_text(encoding="utf-8")


def sampler_source(interval: float) -> str:
    """The in-page sampler, sampling every ``interval`` seconds."""
    return _source().replace("(INTERVAL)", f"({max(50, round(interval * 1000))})")


class VideoSampler:
    """Samples the videos of one run; :attr:`samples` holds what was collected."""

    def __init__(
        self, driver: WebDriver, started: float, redact: Callable[[str], str] = str
    ) -> None:
        self.driver = driver
        self.started = started
        """Wall-clock time (seconds since the epoch) the run started."""
        self.redact = redact
        self.samples: list[QoeSample] = []
        self.state = ""
        """The state running now: samples taken are attributed to it."""
        self.active = False
        self._script: str | None = None

    def start(self, interval: float = 1.0) -> None:
        """Sample every video of this page and of the pages loaded after it."""
        if self.active:
            self.stop()
        source = sampler_source(interval)
        answer = cdp(self.driver, "Page.addScriptToEvaluateOnNewDocument", {"source": source})
        if isinstance(answer, dict):
            self._script = str(answer.get("identifier", "")) or None
        self.driver.execute_script(source)
        self.active = True

    def collect(self, raw: Any) -> None:
        """Keep the samples ``raw`` taken from the page."""
        if not isinstance(raw, list):
            return
        for entry in raw:
            if not isinstance(entry, dict) or "t" not in entry:
                continue
            at = float(entry.pop("t")) / 1000.0
            sample: QoeSample = {
                "time": datetime.fromtimestamp(at, timezone.utc).isoformat(timespec="milliseconds"),
                "elapsed": round(at - self.started, 3),
                "state": self.state,
            }
            sample["page"] = self.redact(str(entry.get("page", "")))
            sample.update((k, entry[k]) for k in FIELDS if k in entry)
            self.samples.append(sample)

    def stop(self) -> None:
        """Take the last samples and stop sampling."""
        if not self.active:
            return
        self.active = False
        try:
            self.collect(self.driver.execute_script(STOP))
        finally:
            if self._script is not None:
                script, self._script = self._script, None
                with contextlib.suppress(Exception):  # the page may be gone; sampling ends
                    cdp(
                        self.driver,
                        "Page.removeScriptToEvaluateOnNewDocument",
                        {"identifier": script},
                    )
