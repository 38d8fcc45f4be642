"""The pytest side of traffic capture, registered only when ``--netgent-capture`` asks
for it: each test's captures around its browser, its outcome on its files, and on the
controller (or pytest without ``-n``) the session's manifest and labels.

The browser pool knows nothing of capture: :meth:`CapturePlugin.attach` gives it the
capture's way to launch a browser and what to do after a reset and a close.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from ..capture import CaptureSettings, folder_name
from ..capture.item import HAR_ANSWERS_S, ItemCapture
from ..dataset.shards import Shard
from ..errors import BrowserError
from .keys import (
    CAPTURE_PLUGIN,
    CAPTURE_PROPERTY,
    capture_key,
    member_captures_key,
    phases_key,
)
from .settings import runs_items

if TYPE_CHECKING:
    from ..browser.pool import BrowserPool
    from ..replay.runner import NetgentBrowser
    from ..workflow.spec import LoadedWorkflow
    from .settings import Settings
    from .sharding import ShardPlugin


def prepare_capture(config: pytest.Config, capture: CaptureSettings, remote: str) -> None:
    """Check that ``capture`` can run here; a process that runs items and captures
    packets moves into a network namespace of its own here, before any fixture starts a
    server."""
    modes, sslkeylog = capture.modes, capture.sslkeylog
    # A dataset job that asked for packets and would get none must stop before it runs.
    if "netlog" in modes and remote:
        cannot_capture(
            "netlog", "the browsers run on the Selenium Grid, whose nodes keep their net log"
        )
    if sslkeylog and remote:
        raise pytest.UsageError(
            "--netgent-sslkeylog cannot run here: the browsers run on the Selenium Grid "
            "(--netgent-remote), whose nodes keep their TLS keys; drop --netgent-sslkeylog "
            "to go on without it"
        )
    if "pcap" in modes:
        from ..network import netns

        if why := netns.unavailable(remote):
            cannot_capture("pcap", why)
        if runs_items(config):
            capture.pcap_off = netns.isolate()
        capture.uplink_off = netns.uplink_unavailable()


def cannot_capture(mode: str, why: str) -> None:
    raise pytest.UsageError(
        f"--netgent-capture={mode} cannot run here: {why}. Drop {mode} from "
        "--netgent-capture (or the ini netgent_capture) to go on without it"
    )


class CaptureLog:
    """On the controller (or pytest without ``-n``): gathers every item's capture row
    and writes ``manifest.csv`` and ``labels.csv`` at the end of the session."""

    def __init__(self, settings: CaptureSettings, config: pytest.Config) -> None:
        self.settings = settings
        self.config = config
        self.rows: list[dict[str, str]] = []
        self.written: tuple[Path, Path] | None = None

    def pytest_report_header(self) -> str:
        return self.settings.summary()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == CAPTURE_PROPERTY and isinstance(value, str):
                self.rows.append(json.loads(value))

    def pytest_sessionfinish(self) -> None:
        from ..capture.manifest import write_manifest
        from .sharding import shard_plugin

        shards = shard_plugin(self.config)
        # a shard left with no item still says so: the merge counts every shard
        empty_shard = shards is not None and shards.shard is not None and shards.collection
        if self.rows or empty_shard:
            self.written = write_manifest(self.settings.root, self.rows)
            self._record(shards)

    def _record(self, shards: ShardPlugin | None) -> None:
        """``dataset.json`` and ``DATASET.md``: what the run (or this shard) collected and
        wrote, with a hash of every file, for ``netgent merge``."""
        from ..dataset import CARD, card, record
        from ..system import atomic
        from .sharding import run_id

        collection = shards.collection if shards else None
        if collection is None:  # collected by no one this process heard of
            ids = list(dict.fromkeys(record.owner(r) for r in self.rows))
            collection = record.Collection(ids, ids, Shard(1, 1))
        root = self.settings.root
        document = record.build(
            root,
            self.rows,
            collection,
            run_id=run_id(self.config),
            durations=shards.measured if shards else None,
        )
        document["card"] = card.summary(self.rows, document)
        record.write(root, document)
        atomic.write_text(root / CARD, card.markdown(document["card"]))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.written is None:
            return
        from ..capture import MODES

        counts = []
        for kind in (*MODES, "qoe", "webrtc"):
            files = [r for r in self.rows if r.get(kind)]
            if files:
                size = sum(int(r.get(f"{kind}_bytes") or 0) for r in files)
                counts.append(f"{len(files)} {kind} ({size / 1e6:.1f} MB)")
        failed = sum(1 for r in self.rows if r.get("outcome") != "passed")
        terminalreporter.write_sep("=", "netgent capture")
        terminalreporter.write_line(
            f"{len(self.rows)} items ({failed} not passed): {', '.join(counts) or 'no captures'}"
        )
        terminalreporter.write_line(f"manifest: {self.written[0]}")
        terminalreporter.write_line(f"labels:   {self.written[1]}")


def capture_plugin(config: pytest.Config) -> CapturePlugin:
    """This process's :class:`CapturePlugin` (registered when capture is on)."""
    plugin = config.pluginmanager.get_plugin(CAPTURE_PLUGIN)
    assert isinstance(plugin, CapturePlugin), "pytest_configure registers it under capture"
    return plugin


class CapturePlugin:
    """Captures each test that uses ``netgent_browser`` on this process."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._warned: list[str] = []
        self._browsers: dict[int, Any] = {}

    def attach(self, pool: BrowserPool, scratch: Path) -> None:
        """Make ``pool`` start its browsers with the capture's flags and logs."""
        from ..capture.netlog import CapturedBrowser
        from ..capture.pcap import CLEAR_NETWORK_STATE

        browsers = CapturedBrowser(pool.options, self.settings.capture, scratch)
        self._browsers[id(pool)] = browsers
        pool.launch = browsers.launch
        # no cache, connection or renderer process carries over from one item into the next
        pool.after_reset = lambda driver: driver.execute_script(CLEAR_NETWORK_STATE)
        pool.cold = True
        pool.after_close = browsers.closed

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        self._outcome(item, call.when, report)
        return report

    def _outcome(self, item: pytest.Item, when: str, report: pytest.TestReport) -> None:
        """Mark the item's captures with its outcome, and send its manifest row along with
        the teardown report (to the xdist controller)."""
        settings = self.settings
        phases = item.stash.get(phases_key, {})
        if when != "teardown":
            return
        capture = item.stash.get(capture_key, None)
        if capture is None:
            if not hasattr(item, "capture_fields"):
                return  # a test without netgent_browser captured nothing
            capture = self.item_capture(item)  # failed before its browser started
        if phases.get("setup") == "failed" or phases.get("teardown") == "failed":
            capture.outcome = "error"
        elif "failed" in phases.values():
            capture.outcome = "failed"
        elif "skipped" in phases.values():
            capture.outcome = "skipped"
        else:
            capture.outcome = "passed"
        if capture.folder.is_dir():
            capture.save()
            self._plot(capture.folder)
        # a JSON string: junitxml shows it as it is (a dict would be its Python repr)
        row = json.dumps(capture.row(settings.capture.root))
        report.user_properties.append((CAPTURE_PROPERTY, row))
        for member in item.stash.get(member_captures_key, []):
            if member.folder.is_dir():
                member.save()
            row = json.dumps(member.row(settings.capture.root))
            report.user_properties.append((CAPTURE_PROPERTY, row))

    def _plot(self, folder: Path) -> None:
        """Draw the item's plots (``--netgent-plots``); a capture that cannot be plotted
        is said once per item, as a warning: the item's outcome stays its own."""
        formats = self.settings.capture.plots
        if not formats:
            return
        from ..studio.plots import PlotError, draw

        try:
            draw(folder, formats)
        except PlotError as exc:
            warnings.warn(pytest.PytestWarning(f"--netgent-plots: {exc}"), stacklevel=1)

    def item_capture(
        self,
        item: pytest.Item,
        *,
        folder: Path | None = None,
        settings: CaptureSettings | None = None,
        **fields: Any,
    ) -> ItemCapture:
        """The captures of ``item`` (a workflow's name, category and parameters filled
        in), in ``folder`` (default: the item's own) as ``settings`` say (default: the
        session's); ``fields`` set any other of :class:`ItemCapture`'s fields.

        An item of a workflow file tells what it is through its ``capture_fields()``
        (workflow, category, parameters, kind) and ``artifacts_dir(root)``."""
        root = self.settings.capture.root
        values: dict[str, Any] = {"workflow": "", "category": "", "parameters": {}}
        described: Any = item
        if hasattr(described, "capture_fields"):
            values.update(described.capture_fields())
            folder = folder or described.artifacts_dir(root)
        values.update(fields)
        return ItemCapture(
            settings=settings or self.settings.capture,
            nodeid=item.nodeid,
            folder=folder or root / folder_name(item.nodeid),
            worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
            **values,
        )

    def _uplink_for(self, loaded: LoadedWorkflow, base_url: str) -> None:
        """Give the worker's namespace its uplink if the workflow may leave the machine; a
        worker that cannot have one says so once."""
        from ..network import netns
        from ..replay.run import substitute

        workflow = loaded.workflow
        start = str(substitute(workflow.start_url, {**workflow.vars, "base_url": base_url}))
        hosts = list(workflow.allowed_hosts or [])
        if start:
            hosts.append(urlsplit(start).hostname or "")
        if not netns.beyond_loopback(h for h in hosts if h):
            return
        if (why := netns.ensure_uplink()) and why not in self._warned:
            self._warned.append(why)
            warnings.warn(pytest.PytestWarning(f"--netgent-capture=pcap: {why}"), stacklevel=1)

    def browser(
        self, item: pytest.Item, pool: BrowserPool, base_url: str
    ) -> Generator[NetgentBrowser, None, None]:
        """The worker's browser for one test, with the test's captures running around it."""
        settings = self.settings
        from ..browser.session import browser_ports
        from ..capture import CaptureError
        from ..capture.pcap import CLEAR_NETWORK_STATE
        from ..network import netns
        from ..replay.runner import NetgentBrowser

        browsers = self._browsers[id(pool)]
        capture = self.item_capture(item)
        item.stash[capture_key] = capture
        capture.prepare()
        sealed = settings.capture.pcap and netns.isolated()  # in this worker's own namespace
        loaded = getattr(item, "loaded", None)
        if sealed and loaded is not None and hasattr(loaded, "workflow"):
            self._uplink_for(loaded, base_url)
        if sealed and base_url and (why := netns.bridge().reach(base_url)):
            pytest.fail(f"--netgent-capture=pcap: {base_url}: {why}", pytrace=False)
        try:
            driver = pool.start()
            if sealed:
                # nothing the browser opened between two captures may reach into this one
                driver.execute_script(CLEAR_NETWORK_STATE)
                netns.settle(browser_ports(driver))
            capture.start(driver)
        except (BrowserError, CaptureError) as exc:
            capture.stop()
            pool.close()
            pytest.fail(exc.report(), pytrace=False)
        browsers.begin(capture)
        browser = NetgentBrowser(pool, settings, base_url)
        if sealed:

            def before_run(loaded: LoadedWorkflow, url: str) -> None:
                self._uplink_for(loaded, url)  # a Python test's workflow may leave the machine
                capture.follow_interfaces()

            browser.before_run = before_run
        try:
            yield browser
        finally:
            events: list[dict[str, Any]] = []
            try:
                if pool.running is not None:
                    events = capture.har_events(pool.running, HAR_ANSWERS_S)
            finally:
                # the reset closes the item's connections: their last packets are its own
                browser.stop_video()
                pool.reset(browser.origins)
                capture.stop()
                browsers.end(capture)
                capture.workflow = capture.workflow or ", ".join(
                    dict.fromkeys(r.workflow for r in browser.results)
                )
                capture.write(browser.results, events, browser.secrets)
