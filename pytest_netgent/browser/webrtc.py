"""WebRTC quality metrics behind NetGent's ``start_webrtc_tracking`` and
``collect_webrtc_metrics`` actions.

``start_webrtc_tracking`` wraps the page's ``RTCPeerConnection`` before the page's own
scripts run (in the current page and every page loaded after it, in this tab and in
tabs the run opens) and samples every connection's ``getStats()`` once a second, one
sample per RTP stream: bitrate, frames per second, resolution, jitter, packets lost and
round-trip time. Each engine tick takes the samples waiting in the page, as it does the
video sampler's; they land in the item's ``webrtc.jsonl`` beside ``qoe.jsonl``, with
the same ``time``, ``elapsed``, ``state`` and ``page`` as every other sample.
``collect_webrtc_metrics`` writes NetGent's one-off summary of the meeting's tabs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ..system.redaction import redact_values
from .chain import Chain
from .meter import Meter
from .page import in_far_frames, script
from .qoe import OutputPathError, output_path
from .session import browser_gone, cdp
from .tabs import TabMemory
from .waits import ActionFailed, Waits

if TYPE_CHECKING:
    pass

WebrtcSample = dict[str, Any]
"""One sample of one RTP stream: ``time`` (ISO 8601 UTC), ``elapsed`` (seconds since the
run started), ``state``, ``page``, ``connection`` (its number on the page),
``connection_state``, ``direction`` (inbound or outbound), ``kind`` (audio or video),
``ssrc``, ``track``, ``bytes``, ``packets``, ``bitrate_bps`` (over the last second),
``packets_lost``, ``jitter`` and ``rtt`` (seconds; of the remote's report for an
outbound stream), ``frames``, ``frames_per_second``, ``width`` and ``height``."""

INTERVAL_S = 1.0
"""Seconds between two samples of a connection."""

TAKE = "return ngRtcTake(window, false);"
STOP = "return [ngRtcTake(window, true), ngFarFrames()];"
"""(with deep.js) Take the samples of the page and its frames of the same site; STOP
stops their samplers too, and lists the frames of other sites to stop next."""


class FrameScripts(Protocol):
    """What runs a script in the frames of other sites (the browser's navigation guard:
    Chromium runs them as targets of their own, out of a tab's reach)."""

    def add_frame_script(self, source: str) -> None: ...

    def drop_frame_script(self, source: str) -> None: ...


_TOTALS = """
const done = arguments[arguments.length - 1];
const n = (v) => Number(v || 0);
ngRtcTotals(window).then((webrtc) => {
  const resources = performance.getEntriesByType("resource");
  done({url: location.href, title: document.title, resources: {count: resources.length,
    transfer_bytes: resources.reduce((t, r) => t + n(r.transferSize), 0),
    decoded_body_bytes: resources.reduce((t, r) => t + n(r.decodedBodySize), 0)},
    webrtc, far: ngFarFrames()});
}).catch((error) => done({url: location.href, error: String(error)}));
"""
"""(with deep.js) A tab's page in NetGent's summary: its resources and the WebRTC totals
of its peer connections and its frames' of the same site; ``far``: its frames of other
sites, read next."""


@cache
def tracker_source() -> str:
    """The in-page tracker and sampler."""
    return script("webrtc.js").replace("(INTERVAL)", f"({round(INTERVAL_S * 1000)})")


class WebrtcMeter(Meter):
    """The WebRTC samples of one run (:attr:`samples`), from every tab it tracks."""

    tabs: frozenset[str] = frozenset()
    """The tabs (window handles) whose pages are tracked."""
    _scripts: dict[str, str] = {}  # noqa: RUF012 (replaced, never changed in place)
    """Each tracked tab's new-document script."""
    frames: FrameScripts | None = None
    """Runs the tracker in the frames of other sites too (a call embedded from another
    site): the browser's guard, or a connection of its own where it has none (UC mode);
    ``None``: those frames are not tracked."""

    @property
    def active(self) -> bool:
        """Whether ``start_webrtc_tracking`` ran."""
        return bool(self.tabs)

    def start(self) -> None:
        """Track the current tab: its page now and every page it loads."""
        handle = self.driver.current_window_handle
        if handle in self.tabs:
            return
        source = tracker_source()
        answer = cdp(self.driver, "Page.addScriptToEvaluateOnNewDocument", {"source": source})
        if isinstance(answer, dict) and answer.get("identifier"):
            self._scripts = {**self._scripts, handle: str(answer["identifier"])}
        self.driver.execute_script(source)
        if self.frames is not None:
            self.frames.add_frame_script(source)
        self.tabs = self.tabs | {handle}

    def follow(self) -> None:
        """A tab the run opened is current: track it too, once tracking is on."""
        if self.active:
            self.start()

    def collect(self, raw: Any) -> None:
        """Keep the samples ``raw`` taken from a page (only while tracking)."""
        if not isinstance(raw, list) or not self.active:
            return
        for entry in raw:
            if not isinstance(entry, dict) or "t" not in entry:
                continue
            sample: WebrtcSample = self.envelope(entry)
            sample.update((k, v) for k, v in entry.items() if k not in ("t", "page"))
            self.samples.append(sample)

    def poll(self) -> None:
        """Take the samples waiting in the current page (long waits call it)."""
        if self.active:
            self.collect(self.driver.execute_script(script("deep.js") + TAKE))

    def close(self) -> None:
        """The run ended: take what every tracked tab still holds, in time order."""
        if not self.active:
            return
        try:
            self._each_tab(self._stop, self.tabs)
        finally:  # (a connection of its own is closed with it)
            if self.frames is not None:
                self.frames.drop_frame_script(tracker_source())
        self.tabs, self._scripts = frozenset(), {}
        self.samples.sort(key=lambda s: s["time"])

    def _stop(self) -> None:
        """In the current tab: the last samples (of its frames too), the samplers
        stopped, and no tracker in the pages it loads next (the browser may serve another
        run)."""
        raw, far = self.driver.execute_script(script("deep.js") + STOP)
        self.collect(raw)
        self._stop_far([str(path) for path in far])
        added = self._scripts.get(self.driver.current_window_handle)
        if added is not None:
            cdp(self.driver, "Page.removeScriptToEvaluateOnNewDocument", {"identifier": added})

    def _stop_far(self, queue: list[str]) -> None:
        """The last samples of the tab's frames of other sites (``queue``: their paths),
        entered through WebDriver, with their samplers stopped; a frame gone meanwhile
        has nothing to give. Only where the tracker ran in them (:attr:`frames`)."""
        from selenium.common.exceptions import WebDriverException

        if self.frames is None:
            return
        try:
            for raw in in_far_frames(Chain(self.driver), queue, "ngRtcTake(window, true)"):
                self.collect(raw)
        except WebDriverException as exc:
            if browser_gone(exc):
                raise

    def summary(self, meeting_url: str) -> dict[str, Any]:
        """NetGent's ``collect_webrtc_metrics`` document: for each tab on the meeting's
        page (same host and path as ``meeting_url``), its resource and RTP totals."""
        want = urlsplit(meeting_url)
        pages: list[dict[str, Any]] = []

        def one() -> None:
            here = urlsplit(self.driver.current_url)
            if (here.hostname, here.path) == (want.hostname, want.path):
                page = self.driver.execute_async_script(script("deep.js") + _TOTALS)
                far = [str(path) for path in page.pop("far", [])]
                if "webrtc" in page and self.frames is not None:
                    # a call embedded from another site counts as the tab's
                    chain = Chain(self.driver)
                    for totals in in_far_frames(chain, far, "ngRtcTotals(window)", wait=True):
                        _add_totals(page["webrtc"], totals)
                pages.append(page)

        self._each_tab(one, self.driver.window_handles)
        # a meeting's address may carry its token
        return {"page_count": len(pages), "pages": redact_values(pages, self.redact)}

    def _each_tab(self, do: Callable[[], None], handles: Any) -> None:
        from selenium.common.exceptions import WebDriverException

        current = self.driver.current_window_handle
        try:
            for handle in list(handles):
                try:
                    self.driver.switch_to.window(handle)
                    do()
                except WebDriverException as exc:
                    if browser_gone(exc):
                        raise
                    # a tab closed meanwhile has nothing more to give
        finally:
            with contextlib.suppress(WebDriverException):  # the run's own tab may be gone
                self.driver.switch_to.window(current)


def _add_totals(into: dict[str, Any], more: Any) -> None:
    """Add a frame's WebRTC totals (``more``) to its tab's (``into``)."""
    if not isinstance(more, dict):
        return  # the frame went away as it was read
    for key, value in more.items():
        if key == "connection_states":
            into[key] = [*into.get(key, []), *value]
        elif key == "jitter_seconds_max":
            into[key] = max(into.get(key, 0), value)
        elif isinstance(value, int | float):
            into[key] = into.get(key, 0) + value


class WebrtcActions(Waits):
    """``start_webrtc_tracking`` and ``collect_webrtc_metrics``."""

    webrtc: WebrtcMeter | None
    memory: TabMemory

    def _meter(self, action: str) -> WebrtcMeter:
        if self.webrtc is None:
            raise ActionFailed(f"{action} needs a workflow run (no WebRTC meter here)")
        return self.webrtc

    def start_webrtc_tracking(self, params: dict[str, Any]) -> None:
        """Track the peer connections of this tab's pages from now on (and of the tabs
        ``open_stored_url`` opens), sampled once a second into ``webrtc.jsonl``."""
        self._meter("start_webrtc_tracking").start()

    def collect_webrtc_metrics(self, params: dict[str, Any]) -> None:
        """Write ``out_path`` (in the run's output folder): for each tab on the meeting
        (the address stored as ``meeting_url``, else the current page's), its peer
        connections' byte, packet and frame totals and its resources."""
        meter = self._meter("collect_webrtc_metrics")
        meeting = self.memory.urls.get("meeting_url") or str(self.driver.current_url)
        try:
            path = output_path(str(params["out_path"]), meter.output_dir)
        except OutputPathError as exc:
            raise ActionFailed(f"collect_webrtc_metrics: {exc}") from None
        document = meter.summary(meeting)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise ActionFailed(f"collect_webrtc_metrics: cannot write {path}: {exc}") from None
