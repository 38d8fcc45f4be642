"""The pytest side of network conditions: which condition an item gets, the worker's own
network namespace it needs, and the condition on the wire around the item's browser.

An item's condition is its workflow's ``network:`` (placeholders filled by the item's
values), else ``--netgent-network`` / the ini ``netgent_network``. It holds from just
after the item's browser is ready, before anything navigates, until after the browser's
reset at the end of the item; the next item sets its own.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ..network.conditions import Condition, parse
from .keys import NETWORK_PLUGIN, NETWORK_PROPERTY, capture_key
from .settings import runs_items

if TYPE_CHECKING:
    from ..network.link import Link
    from .settings import Settings


SHAPING_TOOLS = {"iptables-restore": "iptables"}
"""The programs network conditions need, and their Debian packages (links, qdiscs and
classes are made over netlink, with no program)."""


def unavailable(remote: str) -> str:
    """Why this machine cannot give a worker a namespace of its own to shape ("" if it
    can)."""
    from ..network import netns
    from ..network.netlink import missing

    return netns.unavailable(remote, SHAPING_TOOLS) or missing()


def network_plugin(config: pytest.Config) -> NetworkPlugin:
    """This process's :class:`NetworkPlugin`."""
    plugin = config.pluginmanager.get_plugin(NETWORK_PLUGIN)
    assert isinstance(plugin, NetworkPlugin), "pytest_configure registers it"
    return plugin


class NetworkPlugin:
    """Puts each item's network condition on the wire of this worker's namespace."""

    @classmethod
    def configure(cls, config: pytest.Config, settings: Settings, remote: str) -> NetworkPlugin:
        """The plugin for this run, with ``--netgent-network`` (or the ini key) in
        ``settings``; a condition this machine cannot apply stops the run before it starts,
        and a process that runs items moves into its own namespace before any fixture
        starts a server."""
        condition = settings.network
        plugin = cls(settings, remote)
        if condition is not None:
            from ..network.link import unavailable as link_unavailable

            if why := unavailable(remote) or link_unavailable(condition):
                raise pytest.UsageError(
                    f"--netgent-network {condition.name} cannot be put on the wire here: "
                    f"{why}. Drop --netgent-network (or the ini netgent_network) to run "
                    "unshaped"
                )
            if runs_items(config) and (why := plugin.prepare()):
                raise pytest.UsageError(f"--netgent-network {condition.name}: {why}")
        return plugin

    def __init__(self, settings: Settings, remote: str) -> None:
        self.settings = settings
        self.remote = remote
        self.link: Link | None = None
        self.why_not = ""
        """Why conditions cannot be applied in this process ("" when they can)."""
        self._prepared = False

    def prepare(self) -> str:
        """Move this process into a namespace of its own, once; "" or why it cannot."""
        if self._prepared:
            return self.why_not
        self._prepared = True
        from ..network import netns

        self.why_not = unavailable(self.remote) or netns.isolate()
        return self.why_not

    def pytest_report_header(self) -> str | None:
        condition = self.settings.network
        if condition is None:
            return None
        return f"netgent network: {condition.name} ({condition.text()})"

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """A workflow's (or scenario's) ``network:`` needs the namespace before any fixture
        starts a server."""
        collect = sys.modules.get("pytest_netgent.plugin.collect")
        if collect is None:
            return  # no workflow file was collected: nothing heavy is imported for this
        if runs_items(config) and any(_network_of(i)[0] for i in items):
            self.prepare()

    def condition_for(self, item: pytest.Item) -> Condition | None:
        """The item's condition; a workflow's value that is not one fails the item."""
        from ..errors import display_path
        from ..replay.run import substitute

        text, values, loaded = _network_of(item)
        if text and loaded is not None:
            where = f"{display_path(loaded.path)}:{loaded.line_of('network')}: network"
            try:
                return parse(str(substitute(text, values)), where)
            except ValueError as exc:
                pytest.fail(str(exc), pytrace=False)
        return self.settings.network

    @contextlib.contextmanager
    def hold(
        self,
        item: pytest.Item,
        control_ports: Iterable[int],
        base_url: str,
    ) -> Iterator[Condition | None]:
        """The item's condition on the wire while the block runs, leaving
        ``control_ports`` (the browsers' WebDriver and DevTools ports) unshaped; a
        condition that cannot be applied fails the item."""
        condition = self.condition_for(item)
        if condition is None:
            try:
                self._bridge(base_url)
            except OSError as exc:
                pytest.fail(f"--netgent-network: {exc}", pytrace=False)
            yield None
            return
        self._check(item, base_url)
        from ..network.link import Link

        try:
            self._bridge(base_url)
            self.link = self.link or Link()
            self.link.apply(condition, list(control_ports))
        except OSError as exc:
            pytest.fail(
                f"{self._where(item)}: could not put {condition.text()} on the wire: {exc}",
                pytrace=False,
            )
        try:
            self.record(item, condition)
            yield condition
        finally:
            self.link.clear()

    def _check(self, item: pytest.Item, base_url: str) -> None:
        """Fail the item unless its condition can be put on this worker's wire."""
        condition = self.condition_for(item)
        assert condition is not None
        where = self._where(item)
        if why := self.prepare():
            pytest.fail(f"{where} cannot be put on the wire here: {why}", pytrace=False)
        from ..network.link import unavailable as link_unavailable

        if why := link_unavailable(condition):
            pytest.fail(f"{where} cannot be put on the wire here: {why}", pytrace=False)
        self._uplink(item, base_url, where)

    def record(self, item: pytest.Item, condition: Condition | None) -> None:
        """Write the condition, and what gave its delay, jitter and loss, into the item's
        capture and report (once)."""
        if condition is None:
            return
        held = self.link is not None and self.link.condition == condition
        mechanism = self.link.mechanism if self.link is not None and held else ""
        capture = item.stash.get(capture_key, None)
        if capture is not None:
            capture.network = {**condition.record(), "network_mechanism": mechanism}
        prop = (NETWORK_PROPERTY, f"{condition.name}: {condition.text()}")
        if prop not in item.user_properties:
            item.user_properties.append(prop)

    def _where(self, item: pytest.Item) -> str:
        text, _, loaded = _network_of(item)
        if text and loaded is not None:
            kind = "workflow" if hasattr(loaded, "workflow") else "scenario"
            return f"network {text!r} of {kind} {loaded_name(loaded)!r}"
        return "--netgent-network"

    def _uplink(self, item: pytest.Item, base_url: str, where: str) -> None:
        """Give the namespace its uplink now if a workflow may leave the machine, so that
        the condition is put on it too; a worker that cannot have one fails the item
        rather than run it half shaped."""
        from urllib.parse import urlsplit

        from ..network import netns
        from ..replay.run import substitute

        for workflow, values in workflows_of(item):
            values = {**values, "base_url": base_url}
            hosts = [urlsplit(str(substitute(workflow.start_url, values))).hostname or ""]
            hosts += list(workflow.allowed_hosts or [])
            if netns.beyond_loopback(h for h in hosts if h) and (why := netns.ensure_uplink()):
                pytest.fail(
                    f"{where}: workflow {workflow.name!r} may leave this machine "
                    f"({', '.join(h for h in hosts if h)}) but this worker has no uplink to "
                    f"shape: {why}",
                    pytrace=False,
                )

    def _bridge(self, base_url: str) -> None:
        from ..network import netns

        if not base_url or not netns.isolated():
            return
        if why := netns.bridge().reach(base_url):
            raise OSError(f"{base_url}: {why}")


def _network_of(item: pytest.Item) -> tuple[str, dict[str, Any], Any]:
    """The item's own ``network:`` text, the values that fill it, and the loaded
    workflow or scenario it is written in (``("", {}, None)`` for none)."""
    collect = sys.modules.get("pytest_netgent.plugin.collect")
    scenario = sys.modules.get("pytest_netgent.plugin.scenarios")
    if collect is not None and isinstance(item, collect.WorkflowItem):
        workflow = item.loaded.workflow
        return workflow.network or "", {**workflow.vars, **item.params}, item.loaded
    if scenario is not None and isinstance(item, scenario.ScenarioItem):
        spec = item.loaded.scenario
        return spec.network or "", {**spec.vars, **item.params}, item.loaded
    return "", {}, None


def workflows_of(item: pytest.Item) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Each workflow the item runs, with its values."""
    collect = sys.modules.get("pytest_netgent.plugin.collect")
    scenario = sys.modules.get("pytest_netgent.plugin.scenarios")
    if collect is not None and isinstance(item, collect.WorkflowItem):
        workflow = item.loaded.workflow
        yield workflow, {**workflow.vars, **item.params}
    elif scenario is not None and isinstance(item, scenario.ScenarioItem):
        for member in item.loaded.members:
            if member.loaded is not None:
                workflow = member.loaded.workflow
                yield workflow, {**workflow.vars, **item.params, **member.member.vars}


def loaded_name(loaded: Any) -> str:
    """The name of a loaded workflow or scenario."""
    spec = getattr(loaded, "workflow", None) or loaded.scenario
    return str(spec.name)
