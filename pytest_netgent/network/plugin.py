"""The pytest side of network conditions: which condition an item gets, the worker's own
network namespace it needs, and the condition on the wire around the item's browser.

An item's condition is its workflow's ``network:`` (placeholders filled by the item's
values), else ``--netgent-network`` / the ini ``netgent_network``. It holds from just
after the item's browser is ready, before anything navigates, until after the browser's
reset at the end of the item; the next item sets its own.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

import pytest

from ..conditions import Condition, parse
from ..keys import NETWORK_PLUGIN, NETWORK_PROPERTY, capture_key
from ..settings import runs_items

if TYPE_CHECKING:
    from ..runner import BrowserPool, NetgentBrowser
    from ..settings import Settings
    from .link import Link


SHAPING_TOOLS = {"tc": "iproute2", "iptables-restore": "iptables"}
"""The programs network conditions need, and their Debian packages."""


def unavailable(remote: str) -> str:
    """Why this machine cannot give a worker a namespace of its own to shape ("" if it
    can)."""
    from .. import netns

    return netns.unavailable(remote, SHAPING_TOOLS)


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
        condition = config.getoption("netgent_network")
        if condition is None and config.getini("netgent_network"):
            try:
                condition = parse(str(config.getini("netgent_network")), "ini netgent_network")
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None
        settings.network = condition
        plugin = cls(settings, remote)
        if condition is not None:
            from .link import unavailable as link_unavailable

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
        from .. import netns

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
        """A workflow's ``network:`` needs the namespace before any fixture starts a server."""
        collect = sys.modules.get("pytest_netgent.collect")
        if collect is None:
            return  # no workflow file was collected: nothing heavy is imported for this
        if runs_items(config) and any(
            isinstance(i, collect.WorkflowItem) and i.loaded.workflow.network for i in items
        ):
            self.prepare()

    def condition_for(self, item: pytest.Item) -> Condition | None:
        """The item's condition; a workflow's value that is not one fails the item."""
        from ..collect import WorkflowItem
        from ..errors import display_path
        from ..run import substitute

        if isinstance(item, WorkflowItem) and item.loaded.workflow.network:
            workflow = item.loaded.workflow
            text = str(substitute(workflow.network, {**workflow.vars, **item.params}))
            where = f"{display_path(item.loaded.path)}:{item.loaded.line_of('network')}: network"
            try:
                return parse(text, where)
            except ValueError as exc:
                pytest.fail(str(exc), pytrace=False)
        return self.settings.network

    def around(
        self,
        item: pytest.Item,
        pool: BrowserPool,
        browsers: Generator[NetgentBrowser, None, None],
        base_url: str,
    ) -> Iterator[NetgentBrowser]:
        """``browsers`` (the fixture's own generator) with the item's condition applied
        once its browser is ready and removed after its teardown."""
        condition = self.condition_for(item)
        if condition is None:
            try:
                self._bridge(base_url)  # unshaped, in the namespace another item needed
            except OSError as exc:
                browsers.close()
                pytest.fail(f"--netgent-network: {exc}", pytrace=False)
            yield from browsers
            return
        where = self._where(item)
        if why := self.prepare():
            pytest.fail(f"{where} cannot be put on the wire here: {why}", pytrace=False)
        from .link import Link
        from .link import unavailable as link_unavailable

        if why := link_unavailable(condition):
            pytest.fail(f"{where} cannot be put on the wire here: {why}", pytrace=False)
        self._uplink(item, base_url, where)
        from ..errors import BrowserError

        try:
            # the browser first, so that its control ports are known and left unshaped;
            # then the condition, before the fixture starts any capture or navigation
            driver = pool.start()
        except BrowserError:
            yield from browsers  # which fails the setup with the browser's own report
            return
        try:
            self._bridge(base_url)
            from ..browser.session import browser_ports

            self.link = self.link or Link()
            self.link.apply(condition, browser_ports(driver))
        except OSError as exc:
            browsers.close()
            pytest.fail(
                f"{where}: could not put {condition.text()} on the wire: {exc}", pytrace=False
            )
        try:
            browser = next(browsers)
        except BaseException:
            self.link.clear()
            raise
        capture = item.stash.get(capture_key, None)
        if capture is not None:
            capture.network = condition.record()
        item.user_properties.append((NETWORK_PROPERTY, f"{condition.name}: {condition.text()}"))
        try:
            yield browser
        finally:
            try:
                next(browsers, None)  # the fixture's teardown: reset, captures written
            finally:
                self.link.clear()

    def _where(self, item: pytest.Item) -> str:
        from ..collect import WorkflowItem

        if isinstance(item, WorkflowItem) and item.loaded.workflow.network:
            workflow = item.loaded.workflow
            return f"network {workflow.network!r} of workflow {workflow.name!r}"
        return "--netgent-network"

    def _uplink(self, item: pytest.Item, base_url: str, where: str) -> None:
        """Give the namespace its uplink now if the workflow may leave the machine, so
        that the condition is put on it too; a worker that cannot have one fails the
        item rather than run it half shaped."""
        from urllib.parse import urlsplit

        from .. import netns
        from ..collect import WorkflowItem
        from ..run import substitute

        if not isinstance(item, WorkflowItem):
            return
        workflow = item.loaded.workflow
        values = {**workflow.vars, **item.params, "base_url": base_url}
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
        from .. import netns

        if not base_url or not netns.isolated():
            return
        if why := netns.bridge().reach(base_url):
            raise OSError(f"{base_url}: {why}")
