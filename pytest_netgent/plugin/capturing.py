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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
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
    from ..capture.netlog import CapturedBrowser
    from ..network.conditions import Condition
    from ..replay.run import RunResult
    from ..replay.runner import NetgentBrowser
    from ..system.redaction import Secret
    from ..workflow.spec import LoadedWorkflow, Workflow
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


@runtime_checkable
class DescribedItem(Protocol):
    """An item of a workflow or scenario file: it says what its captures are of."""

    def capture_fields(self) -> dict[str, Any]:
        """The workflow, category, parameters and kind of the item's captures."""
        ...

    def artifacts_dir(self, root: Path) -> Path:
        """The item's own folder under ``root``."""
        ...


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
        self._browsers: dict[BrowserPool, CapturedBrowser] = {}
        """Each pool's capturing launcher (a pool is hashed by identity)."""

    def attach(self, pool: BrowserPool, scratch: Path) -> None:
        """Make ``pool`` start its browsers with the capture's flags and logs."""
        from ..capture.netlog import CapturedBrowser
        from ..capture.pcap import CLEAR_NETWORK_STATE

        browsers = CapturedBrowser(pool.options, self.settings.capture, scratch)
        self._browsers[pool] = browsers
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
            if not isinstance(item, DescribedItem):
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

        An item of a workflow or scenario file tells what it is (a :class:`DescribedItem`)."""
        root = self.settings.capture.root
        values: dict[str, Any] = {"workflow": "", "category": "", "parameters": {}}
        if isinstance(item, DescribedItem):
            values.update(item.capture_fields())
            folder = folder or item.artifacts_dir(root)
        values.update(fields)
        return ItemCapture(
            settings=settings or self.settings.capture,
            nodeid=item.nodeid,
            folder=folder or root / folder_name(item.nodeid),
            worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
            **values,
        )

    def _uplink_for(self, workflow: Workflow, base_url: str) -> None:
        """Give the worker's namespace its uplink if ``workflow`` may leave the machine; a
        worker that cannot have one says so once."""
        from ..network import netns
        from ..replay.run import substitute

        start = str(substitute(workflow.start_url, {**workflow.vars, "base_url": base_url}))
        hosts = list(workflow.allowed_hosts or [])
        if start:
            hosts.append(urlsplit(start).hostname or "")
        if not netns.beyond_loopback(h for h in hosts if h):
            return
        if (why := netns.ensure_uplink()) and why not in self._warned:
            self._warned.append(why)
            warnings.warn(pytest.PytestWarning(f"--netgent-capture=pcap: {why}"), stacklevel=1)

    def around(
        self, item: pytest.Item, pool: BrowserPool, base_url: str, network: Condition | None
    ) -> Generator[CaptureRun, None, None]:
        """The captures of one test on the worker's running browser, under the ``network``
        condition held on the wire: started before its first page, stopped after its
        browser's reset, then written with its runs."""
        from ..browser.environment import browser_facts
        from ..browser.session import browser_ports
        from ..capture import CaptureError
        from ..capture.pcap import CLEAR_NETWORK_STATE
        from ..network import netns
        from ..system.machine import cpu_facts, cpu_times
        from .shaping import workflows_of

        capture = self.item_capture(item)
        item.stash[capture_key] = capture
        if network is not None:
            from .shaping import network_plugin

            network_plugin(item.config).record(item, network)  # into the capture's record
        capture.prepare()
        sealed = self.settings.capture.pcap and netns.isolated()  # in this worker's namespace
        for workflow, _ in workflows_of(item) if sealed else ():
            self._uplink_for(workflow, base_url)
        if sealed and base_url and (why := netns.bridge().reach(base_url)):
            pytest.fail(f"--netgent-capture=pcap: {base_url}: {why}", pytrace=False)
        driver = pool.start()  # running already: the rung below started it
        options = pool.options
        capture.environment = browser_facts(driver, uc=bool(options.uc), grid=bool(options.remote))
        busy = cpu_times()
        try:
            if sealed:
                # nothing the browser opened between two captures may reach into this one
                driver.execute_script(CLEAR_NETWORK_STATE)
                netns.settle(browser_ports(driver))
            capture.start(driver)
        except (BrowserError, CaptureError) as exc:
            capture.stop()
            pool.close()
            pytest.fail(exc.report(), pytrace=False)
        logs = self._browsers[pool]
        logs.begin(capture)
        run = CaptureRun(capture, pool, self if sealed else None)
        try:
            yield run
        finally:
            capture.stop()
            capture.environment.update(cpu_facts(busy, cpu_times()))
            logs.end(capture)
            capture.workflow = capture.workflow or ", ".join(
                dict.fromkeys(r.workflow for r in run.results)
            )
            capture.write(run.results, run.events, run.secrets)


@dataclass
class CaptureRun:
    """One test's captures while it runs: what its browser rung tells them."""

    capture: ItemCapture
    pool: BrowserPool
    sealed: CapturePlugin | None = None
    """The plugin, when the test's packets are captured in this worker's own namespace."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """The HAR's events, taken before the reset (answers are read from open pages)."""
    results: list[RunResult] = field(default_factory=list)
    secrets: dict[str, str | Secret] = field(default_factory=dict)

    def before_run(self, loaded: LoadedWorkflow, base_url: str) -> None:
        """Before each run of the test: a Python test's workflow may leave the machine."""
        if self.sealed is not None:
            self.sealed._uplink_for(loaded.workflow, base_url)
            self.capture.follow_interfaces()

    def before_reset(self, browser: NetgentBrowser) -> None:
        """The test's runs, and its HAR's answers while its pages are still open."""
        self.results, self.secrets = browser.results, browser.secrets
        if self.pool.running is not None:
            self.events = self.capture.har_events(self.pool.running, HAR_ANSWERS_S)
