"""The video quality sampler behind the ``start_video_sampling`` /
``stop_video_sampling`` actions and NetGent's ``start_stats_logging`` /
``stop_stats_logging`` ("Stats for Nerds") JSONL log.

While sampling, every ``<video>`` of the page is sampled in the page itself every
``interval`` seconds (playback time, resolution, buffered time ahead, decoded and dropped
frames, stalls); each engine tick collects the samples waiting in the page, so sampling
costs no extra browser round trip. Pages loaded while sampling start their own sampler.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .chain import Chain
from .meter import Meter
from .page import FAR_FRAMES, script
from .session import browser_gone, cdp, driver_errors

if TYPE_CHECKING:
    pass

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
TAKE = "return window.__netgentQoe && window.__netgentQoe.take ? window.__netgentQoe.take() : [];"

FOLLOW_AGAIN_S = 1.0
"""Shortest time between two looks for frames added to a page while sampling."""

STATS_DEFAULT = "netgent_video_stats.jsonl"
"""NetGent's default ``out_path`` of ``start_stats_logging``."""


class OutputPathError(ValueError):
    """An action's output path leaves the run's output folder."""


DOCKER_OUT = "/out/"
"""NetGent's output folder inside its Docker image (``-v "$PWD/out:/out"``): its
workflows name their logs ``/out/<file>``."""


def output_path(out_path: str, folder: Path) -> Path:
    """``out_path`` resolved in ``folder`` (the run's output folder); a path that leaves
    it (``..``, an absolute path elsewhere, a symlink out) raises :class:`OutputPathError`.

    NetGent's ``/out/<file>`` (its Docker image's output folder) is ``<file>`` in
    ``folder``, so NetGent's workflows write their logs beside the run's result."""
    base = folder.resolve()
    if out_path.startswith(DOCKER_OUT):
        out_path = out_path[len(DOCKER_OUT) :]
    target = (base / out_path).resolve()
    if target != base and base not in target.parents:
        raise OutputPathError(
            f"out_path {out_path!r} leaves the output folder {base}: give a file name or a "
            "path inside that folder"
        )
    if target == base:
        raise OutputPathError(f"out_path {out_path!r} names the output folder, not a file")
    return target


def _main_video(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The page's main video of one sampling tick: the playing one, else the largest."""
    return max(
        entries,
        key=lambda e: (
            e.get("video") is not None,
            not e.get("paused", True),
            (e.get("width") or 0) * (e.get("height") or 0),
        ),
    )


class StatsLog:
    """NetGent's "Stats for Nerds" log: one JSON line per sampling tick, flushed at once,
    so the file survives an interrupted run."""

    def __init__(self, path: Path, redact: Callable[[str], str]) -> None:
        self.path = path
        self.redact = redact
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("a", encoding="utf-8", buffering=1)
        self.lines = 0

    def write(self, entries: list[dict[str, Any]], state: str) -> None:
        """One line for the main video of one tick's ``entries`` (all taken at ``t``)."""
        main = _main_video(entries)
        line: dict[str, Any] = {
            "ts": round(float(main["t"]) / 1000.0, 3),
            "url": self.redact(str(main.get("page", ""))),
            "state": state,
        }
        if main.get("video") is not None:
            line.update(
                width=main.get("width"),
                height=main.get("height"),
                current_time=main.get("playback_time"),
                buffered_ahead=main.get("buffered_ahead"),
                dropped_frames=main.get("dropped_frames"),
                total_frames=main.get("decoded_frames"),
                paused=main.get("paused"),
                ended=main.get("ended"),
                playback_rate=main.get("playback_rate"),
                stalls=main.get("stalls"),
                element=main.get("element"),
            )
        player = main.get("player")
        if isinstance(player, dict):
            line.update((k, player[k]) for k in ("stats_for_nerds", "video_data") if k in player)
        text = json.dumps(line, ensure_ascii=False, default=str)
        self._file.write(self.redact(text) + "\n")
        self.lines += 1

    def close(self) -> None:
        """Flush and close the file."""
        with contextlib.suppress(OSError):
            self._file.flush()
            os.fsync(self._file.fileno())
        self._file.close()


@cache
def _source() -> str:
    # deep.js's helpers go inside the sampler's function: nothing of them is left on the page
    return script("video.js").replace("/* deep.js */", script("deep.js"), 1)


def sampler_source(interval: float) -> str:
    """The in-page sampler, sampling every ``interval`` seconds."""
    return _source().replace("(INTERVAL)", f"({max(50, round(interval * 1000))})")


class VideoSampler(Meter):
    """Samples the videos of one run: :attr:`samples` holds what ``start_video_sampling``
    collected; :attr:`log` is the ``start_stats_logging`` file being written."""

    sampling = False
    """Whether ``start_video_sampling`` is on (samples go to :attr:`samples`)."""
    log: StatsLog | None = None
    interval = 1.0
    _running = False
    _tabs: dict[str, str | None] = {}  # noqa: RUF012 (replaced, never changed in place)
    """The tabs sampled: window handle → its new-document script's identifier."""
    _doc = ""
    _followed = 0.0
    _unsampled = 0

    @property
    def active(self) -> bool:
        """Whether the page is being sampled (for either purpose)."""
        return self._running

    def start(self, interval: float = 1.0) -> None:
        """Sample every video of this page and of the pages loaded after it."""
        self.sampling = True
        if self._running:
            self._halt()
        self._install(interval)

    def start_log(self, out_path: str, interval: float) -> Path:
        """Start NetGent's stats log at ``out_path``; when it is already logging, nothing
        changes. Returns the file's path."""
        if self.log is not None:
            return self.log.path
        self.log = StatsLog(output_path(out_path, self.output_dir), self.redact)
        if not self._running:
            self._install(interval)
        return self.log.path

    def stop(self) -> None:
        """Stop ``start_video_sampling`` (its last samples are taken now)."""
        self.sampling = False
        if self._running and self.log is None:
            self._halt()

    def stop_log(self) -> None:
        """Stop the stats log: its last line is written and the file closed."""
        if self.log is None:
            return
        try:
            if self._running and not self.sampling:
                self._halt()
        finally:
            log, self.log = self.log, None
            log.close()

    def close(self) -> None:
        """The run ended: take the last samples, close the stats log."""
        try:
            if self._running:
                self._halt()
        finally:
            self.sampling = False
            if self.log is not None:
                log, self.log = self.log, None
                log.close()

    def abandon(self) -> None:
        """The browser is gone: close the stats log with what it has."""
        self._running = self.sampling = False
        self._tabs = {}
        if self.log is not None:
            log, self.log = self.log, None
            log.close()

    def poll(self) -> None:
        """Take the samples waiting in the page now (long waits call it)."""
        if self._running:
            self.collect(self.driver.execute_script(TAKE))

    def collect(self, raw: Any) -> None:
        """Keep the samples ``raw`` taken from the page."""
        if not isinstance(raw, list):
            return
        ticks: dict[Any, list[dict[str, Any]]] = {}
        for entry in raw:
            if not isinstance(entry, dict) or "t" not in entry:
                continue
            ticks.setdefault(entry["t"], []).append(entry)
            if not self.sampling or entry.get("video") is None:
                continue
            sample: QoeSample = self.envelope(entry)
            sample.update((k, entry[k]) for k in FIELDS if k in entry)
            self.samples.append(sample)
        if self.log is not None:
            for entries in ticks.values():
                self.log.write(entries, self.state_at(float(entries[0]["t"]) / 1000.0))

    def see(self, doc: str, raw: Any, unsampled: int = 0) -> bool:
        """An engine tick on document ``doc`` brought the samples ``raw``. True when
        ``doc`` is new while sampling, or when the page has frames of another site the
        sampler has not reached (``unsampled``: more than at the last look, or the same
        after FOLLOW_AGAIN_S, as a frame's sampler is heard from after its first
        interval): :meth:`follow_frames` is due there (no browser call here, so a tick
        without sampling pays nothing)."""
        if raw:
            self.collect(raw)
        if not self._running:
            return False
        now = time.monotonic()
        again = unsampled > self._unsampled or now - self._followed >= FOLLOW_AGAIN_S
        if (doc and doc != self._doc) or (unsampled and again):
            self._doc, self._followed, self._unsampled = doc or self._doc, now, unsampled
            return True
        return False

    def follow_frames(self) -> None:
        """Start the sampler in this page's frames of other sites (the page's own
        script starts it in the page); in a tab the run opened or switched to while
        sampling, in the tab first."""
        source = sampler_source(self.interval)
        if self.driver.current_window_handle not in self._tabs:
            self._install_here(source)
        else:
            self._install_far(source)

    def _install(self, interval: float) -> None:
        self.interval = interval
        self._tabs = {}
        self._install_here(sampler_source(interval))
        self._running = True

    def _install_here(self, source: str) -> None:
        """Sample this tab's page, the pages it loads next, and its frames."""
        answer = cdp(self.driver, "Page.addScriptToEvaluateOnNewDocument", {"source": source})
        identifier = str(answer.get("identifier", "")) if isinstance(answer, dict) else ""
        self._tabs = {**self._tabs, self.driver.current_window_handle: identifier or None}
        self.driver.execute_script(source)
        self._install_far(source)

    def _install_far(self, source: str) -> None:
        """Start the sampler in the page's frames of other sites too (embedded players):
        a script of the page cannot reach them, WebDriver enters each."""
        from selenium.common.exceptions import WebDriverException

        chain = Chain(self.driver)
        try:
            paths = self.driver.execute_script(script("deep.js") + "return ngFarFrames();")
            for path in list(paths)[:FAR_FRAMES]:
                if chain.enter(path):
                    self.driver.execute_script(source)
                chain.leave()
        except WebDriverException as exc:
            if browser_gone(exc):
                raise
            # a frame that went away meanwhile: its videos are not sampled
        finally:
            chain.leave()

    def _halt(self) -> None:
        """Take the last samples and stop the in-page sampler, in every tab sampled."""
        self._running = False
        tabs, self._tabs = self._tabs, {}
        try:
            self.collect(self.driver.execute_script(STOP))
        finally:
            self._unload(tabs)

    def _unload(self, tabs: dict[str, str | None]) -> None:
        """Stop the sampler in the other ``tabs`` (their last samples taken), remove its
        new-document script from each, and come back to the run's tab."""
        try:
            here = str(self.driver.current_window_handle)
        except driver_errors():  # the run's tab closed: the others are still stopped
            here = ""
        current = here
        for handle, identifier in tabs.items():
            try:
                if handle != current:
                    self.driver.switch_to.window(handle)
                    current = handle
                if handle != here:
                    self.collect(self.driver.execute_script(STOP))
                if identifier is not None:
                    cdp(
                        self.driver,
                        "Page.removeScriptToEvaluateOnNewDocument",
                        {"identifier": identifier},
                    )
            except Exception:  # a tab closed or between documents: sampling ends there
                continue
        if here and current != here:
            with contextlib.suppress(Exception):  # the run's tab closed meanwhile
                self.driver.switch_to.window(here)
