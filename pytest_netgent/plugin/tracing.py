"""``--netgent-trace`` and ``--netgent-video``, on pytest's side: each item's trace and
video written (or not) at its end.

With ``on`` every item that ran a workflow gets ``trace.zip`` (``video.webm``) in its
artifacts folder; with ``retain-on-failure`` only an item that did not pass keeps one.
Its path is a property of the item's report (``netgent_trace``, ``netgent_video``:
junitxml shows them) and a line of the failure report names it.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..capture import FILES
from .keys import phases_key

if TYPE_CHECKING:
    from ..replay.runner import NetgentBrowser

TRACE_PROPERTY = "netgent_trace"
"""The report property naming an item's trace file."""
VIDEO_PROPERTY = "netgent_video"
"""The report property naming an item's video."""

TRACE_PLUGIN = "netgent-trace"


class TracePlugin:
    """Writes each item's trace after its teardown, where its outcome is known."""

    def __init__(self, mode: str, artifacts: Path, video: str = "off") -> None:
        self.mode = mode
        self.artifacts = artifacts
        self.video = video
        """``--netgent-video``'s mode."""

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        phases = item.stash.get(phases_key, {})
        browser = _browser(item)
        if browser is not None and browser.video is not None and browser.video.frames:
            self._video(item, browser, report, call.when, phases)
        if browser is None or browser.trace is None or not browser.trace.runs:
            return report
        from ..replay.trace_file import TRACE_FILE  # loaded already: the item has a trace

        path = _folder(item, browser, self.artifacts) / TRACE_FILE
        if call.when == "call" and report.failed:
            report.sections.append(("netgent trace", f"netgent show-trace {path}"))
        if call.when == "teardown":
            failed = any(p == "failed" for p in phases.values())
            if self.mode == "on" or failed:
                outcome = "failed" if failed else phases.get("call", "passed")
                har = path.parent / FILES["har"]
                browser.trace.write(path, item.nodeid, outcome, har)
                for where in (report.user_properties, item.user_properties):
                    where.append((TRACE_PROPERTY, str(path)))
        return report

    def _video(
        self,
        item: pytest.Item,
        browser: NetgentBrowser,
        report: pytest.TestReport,
        when: str,
        phases: dict[str, str],
    ) -> None:
        """Write the item's video at its teardown (if its mode keeps it)."""
        from ..studio.recording import VIDEO_FILE, VideoError, write_webm

        assert browser.video is not None
        path = _folder(item, browser, self.artifacts) / VIDEO_FILE
        if when == "call" and report.failed:
            report.sections.append(("netgent video", str(path)))
        if when != "teardown":
            return
        browser.video.stop()
        frames, browser.video.frames = browser.video.frames, []
        if self.video == "on" or any(p == "failed" for p in phases.values()):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_webm(frames, path)
            except VideoError as exc:  # the item's outcome stays its own
                report.sections.append(("netgent video", f"no video: {exc}"))
                return
            for where in (report.user_properties, item.user_properties):
                where.append((VIDEO_PROPERTY, str(path)))


def _browser(item: pytest.Item) -> NetgentBrowser | None:
    """The item's ``netgent_browser`` (until its teardown ends)."""
    found = (getattr(item, "funcargs", None) or {}).get("netgent_browser")
    return found if hasattr(found, "trace") else None


def _folder(item: pytest.Item, browser: NetgentBrowser, root: Path) -> Path:
    """The item's artifacts folder (a workflow item's own; a test's by its node id)."""
    folder = getattr(item, "artifacts_dir", None)
    if folder is not None:
        return Path(folder(root))
    from ..capture import folder_name

    values = [s if isinstance(s, str) else s.reveal() for s in browser.secrets.values()]
    return root / folder_name(item.nodeid, values)
