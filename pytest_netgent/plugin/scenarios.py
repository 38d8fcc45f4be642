"""A scenario as a pytest item: its members' browsers started, the item's network
condition and captures around them, the members run, every member's end reported.

With ``--netgent-capture=pcap`` the scenario's folder holds one ``capture.pcap`` of all
members and ``flows.csv``; each member's HAR, netlog, timeline and QoE samples are in
``<member>/``. Each member is one more row of the manifest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import BrowserError, NetgentError, display_path, heal_command
from ..measure import summary
from ..scenario.spec import LoadedScenario
from ..workflow.spec import Scalar
from .keys import MEASURED_PROPERTY, STATES_PROPERTY, capture_key, member_captures_key
from .reporting import ReportsErrors

if TYPE_CHECKING:
    from ..browser.pool import BrowserPool
    from ..capture.item import ItemCapture
    from ..capture.netlog import CapturedBrowser
    from ..scenario.members import Outcome
    from ..synthesis import RecordReport, Synthesiser
    from .settings import Settings


SCENARIO_BUFFER_KIB = 65536
"""tcpdump's kernel buffer for a scenario's pcap (KiB)."""


class ScenarioFailed(NetgentError):
    """Members of a scenario failed: one report per failed member, then the stopped ones."""

    def __init__(self, scenario: str, location: str, outcomes: list[Outcome]) -> None:
        self.scenario = scenario
        self.location = location
        self.outcomes = outcomes
        super().__init__(self.report())

    def report(self) -> str:
        failed = [o for o in self.outcomes if o.status == "failed"]
        stopped = [o for o in self.outcomes if o.status == "stopped"]
        lines = [
            f"{self.location}: scenario {self.scenario!r}: "
            + (
                f"{len(failed)} of {len(self.outcomes)} members failed"
                if failed
                else f"{len(stopped)} of {len(self.outcomes)} members were stopped before "
                "their end state"
            )
        ]
        for o in failed:
            lines.append(f"--- member {o.name!r} ({o.kind}) failed:")
            lines += [f"  {line}" for line in o.detail.splitlines()]
        for o in self.outcomes:
            if o.status == "stopped":
                lines.append(f"--- member {o.name!r} ({o.kind}): {o.detail}")
        return "\n".join(lines)


class ScenarioItem(ReportsErrors, pytest.Function):
    """One scenario (with one set of parameter values) as a test item."""

    def __init__(self, *, loaded: LoadedScenario, params: dict[str, Scalar], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.loaded = loaded
        self.params = params
        self.outcomes: list[Outcome] = []
        self.record_in_place: dict[str, Any] = {}
        """Members that record their missing states as the scenario runs: the
        synthesiser of each (see :meth:`record_members`)."""

    def capture_fields(self) -> dict[str, Any]:
        """What its captures' manifest row says of the scenario."""
        scenario = self.loaded.scenario
        return {
            "workflow": scenario.name,
            "category": scenario.category,
            "parameters": dict(self.params),
            "kind": "scenario",
        }

    def artifacts_dir(self, root: Path) -> Path:
        """This scenario's folder under ``--netgent-artifacts`` (``-retryN`` for a rerun)."""
        from ..capture import folder_name
        from .thirdparty import attempt_folder

        return attempt_folder(self, root / folder_name(self.nodeid))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.loaded.line - 1, f"scenario {self.name}"

    def secret_values(self) -> dict[str, str]:
        """The secrets of its members' workflows, name: value (kept out of its report)."""
        from ..workflow.secrets import cached_env_values, resolve_secrets

        found: dict[str, str] = {}
        for member in self.loaded.members:
            if member.loaded is not None:
                found.update(
                    (f"{member.name}.{n}", s.reveal())
                    for n, s in cached_env_values(member.loaded).items()
                )
                with contextlib.suppress(NetgentError):  # unset: the member fails on it
                    found.update(
                        (f"{member.name}.{n}", s.reveal())
                        for n, s in resolve_secrets(member.loaded).items()
                    )
        return found

    def values(self, base_url: str) -> dict[str, Any]:
        """The scenario's vars and this item's parameters (and ``base_url``)."""
        values: dict[str, Any] = {**self.loaded.scenario.vars, **self.params}
        if base_url:
            values["base_url"] = base_url.rstrip("/")
        return values

    def record_members(
        self, settings: Settings, base_url: str, synthesiser: Synthesiser | None
    ) -> None:
        """Under ``--netgent-record``: synthesise the missing and stale states of every
        browser member's workflow, so that the scenario does not depend on its members'
        own items having run first (collection order, or another xdist worker). A member
        whose workflow no other member runs records in place, as the scenario runs (a
        workflow with lasting effects, adding a name, cannot run twice alike); a workflow
        several members run is recorded before they start, on a browser of its own. A
        member whose states are all cached costs nothing; the cache is written as a
        workflow item's is, only after its run reached an end state."""
        __tracebackhide__ = True
        from ..browser.pool import BrowserPool
        from ..replay.runner import NetgentBrowser
        from ..scenario.members import member_params
        from ..workflow import store

        values = self.values(base_url)
        runs = Counter(
            (m.loaded.path, m.loaded.workflow.name) for m in self.loaded.members if m.loaded
        )
        for member in self.loaded.members:
            if member.loaded is None:
                continue
            workflow = member.loaded.workflow
            cached = store.load(store.cache_path(member.loaded.path, workflow.name))
            _, missing, stale = store.cached_states(workflow, cached)
            if cached is not None and not missing and not stale:
                continue
            if runs[(member.loaded.path, workflow.name)] == 1:
                self.record_in_place[member.name] = synthesiser
                continue
            pool = BrowserPool(settings.browser)
            try:
                browser = NetgentBrowser(pool, settings, base_url)
                result = browser.run(
                    member.loaded,
                    params=member_params(member, values),
                    heal=heal_command(f"{display_path(member.loaded.path)}::{workflow.name}"),
                    check=False,
                    record="missing",
                    synthesiser=synthesiser,
                )
            finally:
                pool.close()
            if result.record is not None:
                self._record_summary(member.name, result.record)
            if result.error is not None:
                where = f"{display_path(self.loaded.path)}:{member.line}"
                pytest.fail(
                    f"{where}: scenario {self.name!r}: the states of member {member.name!r} "
                    f"(workflow {workflow.name!r}) could not be recorded before the "
                    f"scenario:\n{result.error.report()}",
                    pytrace=False,
                )

    def _record_summary(self, member: str, record: RecordReport) -> None:
        """The record summary of ``member``'s run, as a workflow item's (the session's
        record totals and junit count it)."""
        from .record_summary import record_property

        self.user_properties.append(record_property(f"{self.nodeid}::{member}", record))

    def run_scenario(self, settings: Settings, base_url: str) -> None:
        """Run every member; raise :class:`ScenarioFailed` if any failed."""
        __tracebackhide__ = True
        values = self.values(base_url)
        with _Run(self, settings, values, base_url) as run:
            outcomes = run.members()
        self.outcomes = list(outcomes.values())
        self._member_files(settings)
        for o in self.outcomes:
            self.add_report_section("call", f"member {o.name}", _summary(o))
        expecting = [
            m.name for m in self.loaded.members if m.loaded and m.loaded.workflow.expect_traffic
        ]
        if expecting:  # said, never passed over in silence
            self.add_report_section(
                "call",
                "netgent traffic",
                f"expect_traffic not checked for member {', '.join(expecting)}: a scenario's "
                "pcap holds every member's traffic (flows.csv labels its flows); a "
                "workflow's expectations are checked when it runs as an item of its own",
            )
        # junit: the states each browser member went through, as an item's
        visited = [
            f"{o.name}: {' > '.join(o.result.states_visited)}"
            for o in self.outcomes
            if o.result is not None
        ]
        if visited:
            self.user_properties.append((STATES_PROPERTY, "; ".join(visited)))
        measured = [
            f"{o.name}: {summary(m)}"
            for o in self.outcomes
            if o.result is not None
            for m in o.result.measurements
        ]
        if measured:  # the measurement steps each member ran, as an item's
            self.user_properties.append((MEASURED_PROPERTY, " | ".join(measured)))
        for o in self.outcomes:  # record mode: what each member synthesised and wrote
            if o.result is not None and o.result.record is not None:
                self._record_summary(o.name, o.result.record)
        if any(not o.passed for o in self.outcomes):
            location = f"{display_path(self.loaded.path)}:{self.loaded.line}"
            raise ScenarioFailed(self.name, location, self.outcomes)

    def _member_files(self, settings: Settings) -> None:
        """Each browser member's video and trace in its folder (``--netgent-video``,
        ``--netgent-trace``: ``on``, or ``retain-on-failure`` when a member did not pass:
        the cause may be another member's), a report property each."""
        if not settings.artifacts:
            return
        failed = not all(o.passed for o in self.outcomes)
        folder = self.artifacts_dir(settings.artifacts)
        for outcome in self.outcomes:
            frames, outcome.frames = outcome.frames, []
            if frames and (settings.video == "on" or failed):
                self._member_video(outcome.name, frames, folder / outcome.name)
            trace, outcome.trace = outcome.trace, None
            if trace is not None and trace.runs and (settings.trace == "on" or failed):
                from ..capture import FILES
                from ..replay.trace_file import TRACE_FILE
                from .tracing import TRACE_PROPERTY

                path = folder / outcome.name / TRACE_FILE
                node = f"{self.nodeid}::{outcome.name}"
                trace.write(path, node, outcome.status, path.parent / FILES["har"])
                self.user_properties.append((TRACE_PROPERTY, str(path)))

    def _member_video(self, name: str, frames: list[tuple[float, bytes]], folder: Path) -> None:
        from ..studio.recording import VIDEO_FILE, VideoError, write_webm
        from .tracing import VIDEO_PROPERTY

        path = folder / VIDEO_FILE
        try:
            folder.mkdir(parents=True, exist_ok=True)
            write_webm(frames, path)
        except VideoError as exc:  # the scenario's outcome stays its own
            self.add_report_section("call", f"member {name} video", f"no video: {exc}")
            return
        self.user_properties.append((VIDEO_PROPERTY, str(path)))


def make_test() -> Any:
    def netgent_scenario(
        request: pytest.FixtureRequest, netgent_settings: Any, netgent_base_url: str
    ) -> None:
        """Run the members of this scenario together (see pytest_netgent.scenario)."""
        __tracebackhide__ = True
        item = request.node
        assert isinstance(item, ScenarioItem)
        if netgent_settings.record and netgent_settings.record != "propose":
            synthesiser = request.getfixturevalue("netgent_synthesiser")
            item.record_members(netgent_settings, netgent_base_url, synthesiser)
        item.run_scenario(netgent_settings, netgent_base_url)

    return netgent_scenario


def _summary(outcome: Outcome) -> str:
    took = f"{outcome.ended - outcome.started:.1f}s" if outcome.started else "never started"
    runs = f", {outcome.runs} runs" if outcome.kind == "command" else ""
    text = f"{outcome.status} ({took}{runs})"
    if outcome.result is not None:
        text += "\nstates: " + " > ".join(outcome.result.states_visited)
    return text + (f"\n{outcome.detail}" if outcome.detail else "")


class _Run:
    """What one scenario item holds while it runs: its browsers, condition and captures;
    all of it ended on leaving, whatever happened."""

    def __init__(
        self, item: ScenarioItem, settings: Settings, values: dict[str, Any], base_url: str
    ) -> None:
        self.item = item
        self.settings = settings
        self.values = values
        self.base_url = base_url
        self.pools: dict[str, BrowserPool] = {}
        self.stack = contextlib.ExitStack()
        self.capture: ItemCapture | None = None
        self.member_captures: dict[str, ItemCapture] = {}
        self.groups: dict[str, int] = {}
        self.logs: dict[str, CapturedBrowser] = {}
        """Each captured browser member's logs (netlog, TLS keys), split when it closes."""
        self.owners: Any = None

    def __enter__(self) -> _Run:
        try:
            self._start()
        except BaseException:  # cleaned up, then raised as it came
            self.stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stack.close()

    # ----------------------------------------------------------------- set-up

    def _start(self) -> None:
        from ..network import netns

        item, settings = self.item, self.settings
        capture = settings.capture
        members = item.loaded.members
        labelled = capture.pcap and netns.isolated()
        if labelled:
            from ..scenario.owners import FIRST_GROUP, unavailable

            why = unavailable()
            if settings.browser.uc and any(m.loaded is not None for m in members):
                why = (
                    "--netgent-uc starts browsers through SeleniumBase, which cannot run "
                    "them under a member's own group id; drop --netgent-uc for scenarios"
                )
            if why:
                pytest.fail(
                    f"--netgent-capture=pcap: scenario {item.name!r}: its flows cannot be "
                    f"labelled by member here: {why}",
                    pytrace=False,
                )
            self.groups = {m.name: FIRST_GROUP + i for i, m in enumerate(members)}
        if capture.on:
            self._prepare_captures()
        self.stack.callback(self._close_browsers)
        self._start_browsers()
        ports = self._control_ports()
        from .shaping import network_plugin

        self.stack.enter_context(network_plugin(item.config).hold(item, ports, self.base_url))
        if self.capture is not None:
            self.stack.callback(self._finish_captures)
            # several members' bursts at once: a larger buffer than one item's
            self.capture.start(None, exclude_ports=ports, buffer_kib=SCENARIO_BUFFER_KIB)
            for name, member_capture in self.member_captures.items():
                pool = self.pools.get(name)
                if pool is not None and pool.running is not None:
                    member_capture.start(pool.running)
                    self.logs[name].begin(member_capture)
        if labelled:
            from ..scenario.owners import SocketOwners

            self.owners = SocketOwners(len(members))
            self.stack.callback(self.owners.close)

    def _prepare_captures(self) -> None:
        from ..capture.item import ItemCapture
        from .capturing import capture_plugin

        item, settings = self.item, self.settings
        plugin = capture_plugin(item.config)
        folder = item.artifacts_dir(settings.capture.root)
        self.capture = plugin.item_capture(
            item,
            folder=folder,
            settings=dataclasses.replace(settings.capture, modes=settings.capture.modes & {"pcap"}),
        )
        self.capture.prepare()
        item.stash[capture_key] = self.capture
        # the browsers' whole logs, split into the members' folders when they close
        self.scratch = Path(tempfile.mkdtemp(prefix="netgent-scenario-"))
        self.stack.callback(shutil.rmtree, self.scratch, ignore_errors=True)
        member_settings = dataclasses.replace(
            settings.capture, modes=settings.capture.modes - {"pcap"}
        )
        commands = dataclasses.replace(settings.capture, modes=frozenset())
        for member in item.loaded.members:
            member_capture = ItemCapture(
                settings=member_settings if member.loaded is not None else commands,
                nodeid=f"{item.nodeid}::{member.name}",
                folder=folder / member.name,
                worker=self.capture.worker,
                workflow=member.loaded.workflow.name if member.loaded else member.member.run or "",
                category=member.category,
                parameters=dict(member.member.vars),
                kind=member.kind,
                scenario=item.nodeid,
            )
            member_capture.prepare()
            self.member_captures[member.name] = member_capture
        item.stash[member_captures_key] = list(self.member_captures.values())

    def _start_browsers(self) -> None:
        """Every browser member's browser, started side by side."""
        from ..browser.pool import BrowserPool
        from .status import live_stream

        settings = self.settings
        errors: list[str] = []
        threads = []
        for member in self.item.loaded.members:
            if member.loaded is None:
                continue
            options = dataclasses.replace(settings.browser, group=self.groups.get(member.name, 0))
            pool = BrowserPool(options)
            pool.live = live_stream(self.item.config, member.name)
            if member.name in self.member_captures:
                from ..capture.netlog import CapturedBrowser
                from ..capture.pcap import CLEAR_NETWORK_STATE

                scratch = self.scratch / member.name
                scratch.mkdir()
                browsers = CapturedBrowser(
                    options, self.member_captures[member.name].settings, scratch
                )
                pool.launch = browsers.launch
                pool.after_reset = lambda d: d.execute_script(CLEAR_NETWORK_STATE)
                pool.after_close = browsers.closed
                self.logs[member.name] = browsers
            self.pools[member.name] = pool

            def start(name: str = member.name, pool: BrowserPool = pool) -> None:
                try:
                    pool.start()
                except BrowserError as exc:
                    errors.append(f"member {name!r}: {exc.report()}")
                except Exception as exc:  # the member's failure, never an unhandled thread's
                    errors.append(f"member {name!r}: its browser did not start: {exc!r}")

            thread = threading.Thread(target=start, name=f"netgent-start-{member.name}")
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
        if errors:
            pytest.fail("\n".join(errors), pytrace=False)

    def _control_ports(self) -> list[int]:
        """The members' WebDriver and DevTools ports, and those of this worker's own
        browser, idle between items: none of them is the scenario's traffic."""
        from ..browser.session import browser_ports
        from .keys import pool_key

        ports: list[int] = []
        idle = self.item.config.stash.get(pool_key, None)
        for pool in [*self.pools.values(), idle]:
            if pool is not None and pool.running is not None:
                ports += browser_ports(pool.running)
        return ports

    # ----------------------------------------------------------------- the run

    def members(self) -> dict[str, Outcome]:
        from ..scenario.members import Members

        item = self.item
        folder = self.capture.folder if self.capture is not None else None
        if folder is None and self.settings.artifacts:
            folder = item.artifacts_dir(self.settings.artifacts)
        self.run = Members(
            item.loaded,
            self.values,
            self.settings,
            self.base_url,
            self.pools,
            groups=self.groups,
            folder=folder,
            command_logs=self.capture is not None,
            record=item.record_in_place,
        )
        return self.run.run()

    # ----------------------------------------------------------------- the end

    def _close_browsers(self) -> None:
        for pool in self.pools.values():
            pool.close()

    def _finish_captures(self) -> None:
        """Stop the pcap (after every member's browser closed its connections), write each
        member's files and the scenario's flows."""
        from ..capture.item import HAR_ANSWERS_S

        assert self.capture is not None
        run = getattr(self, "run", None)
        outcomes = run.outcomes if run is not None else {}
        secrets = run.secrets if run is not None else {}
        for name, member_capture in self.member_captures.items():
            pool = self.pools.get(name)
            events: list[dict[str, Any]] = []
            if pool is not None and pool.running is not None:
                with contextlib.suppress(NetgentError):
                    events = member_capture.har_events(pool.running, HAR_ANSWERS_S)
            outcome = outcomes.get(name)
            result = [outcome.result] if outcome is not None and outcome.result else []
            if outcome is not None and outcome.kind == "command":
                result = outcome.command_runs
            if name in self.logs:
                self.logs[name].end(member_capture)
            member_capture.stop()
            if outcome is not None and outcome.started:
                member_capture.started, member_capture.ended = outcome.started, outcome.ended
            member_capture.outcome = outcome.status if outcome is not None else "error"
            member_capture.write(result, events, secrets)
        self._close_browsers()  # their netlogs are split now; their connections close
        if self.owners is not None:
            self.owners.close()
        self.capture.stop()
        if self.owners is not None:
            self._write_flows(outcomes)

    def _write_flows(self, outcomes: dict[str, Outcome]) -> None:
        from datetime import datetime

        from ..scenario.flows import (
            FLOWS_FILE,
            Owner,
            label,
            labelled_share,
            read_flows,
            write_flows,
        )

        assert self.capture is not None
        owners: dict[int, Owner] = {}
        for member in self.item.loaded.members:
            owner = Owner(member.name, member.kind, member.category)
            outcome = outcomes.get(member.name)
            if outcome is not None and outcome.result is not None:
                owner.states = [
                    (datetime.fromisoformat(e.at).timestamp(), e.state)
                    for e in outcome.result.timeline
                    if e.event == "state" and e.at
                ]
            owners[self.groups[member.name]] = owner
        pcap = self.capture.folder / "capture.pcap"
        flows, total, groups = read_flows(pcap, self.owners.opened)
        label(flows, groups, owners)
        write_flows(self.capture.folder / FLOWS_FILE, flows)
        self.capture.labelled = labelled_share(flows, total)
