"""The fixture ladder under ``netgent_browser``: each rung a few lines, wrapping the one
below it, each overridable in a ``conftest.py``::

    netgent_browser_options   session   the launch options of this worker's browser
    netgent_browser_pool      session   this worker's browser (one per xdist worker)
    netgent_webdriver         function  that browser, running for this test
    netgent_network           function  the test's link condition on the wire (or None)
    netgent_capture           function  the test's captures around it (or None)
    netgent_browser           function  the test's NetgentBrowser, reset after it

A rung asks only for the rungs below it; the browser pool, followed from any rung, is
started in one place (``netgent_webdriver``) and reset in one (``netgent_browser``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ..errors import BrowserError
from .keys import settings_key
from .pool import browser_options, browser_pool

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..browser.pool import BrowserPool
    from ..browser.session import BrowserOptions
    from ..network.conditions import Condition
    from ..replay.runner import NetgentBrowser
    from .capturing import CaptureRun
    from .settings import Settings


@pytest.fixture(scope="session")
def netgent_settings(pytestconfig: pytest.Config) -> Settings:
    """The run-wide settings (browser options, state timeout, artifacts folder)."""
    return pytestconfig.stash[settings_key]


@pytest.fixture(scope="session")
def netgent_browser_options(pytestconfig: pytest.Config) -> BrowserOptions:
    """The launch options of this worker's browser, from the command line and ini
    (``--netgent-headed``, ``--netgent-window-size``, ``--netgent-remote``, ...). Override it
    to change them for a suite, e.g. ``dataclasses.replace(netgent_browser_options,
    args=[...])``."""
    return browser_options(pytestconfig)


@pytest.fixture(scope="session")
def netgent_browser_pool(
    pytestconfig: pytest.Config, netgent_browser_options: BrowserOptions
) -> BrowserPool:
    """This process's browser (one per xdist worker) on ``netgent_browser_options``: started
    before the first test that needs it and closed after the last, outside their time (see
    :mod:`.pool`); with ``--netgent-capture``, launched with the capture's flags and logs."""
    return browser_pool(pytestconfig, netgent_browser_options)


@pytest.fixture
def netgent_webdriver(netgent_browser_pool: BrowserPool) -> WebDriver:
    """The worker's browser, running for this test (started again if it died): a browser
    that cannot start fails the test's setup with the browser's own report."""
    try:
        return netgent_browser_pool.start()
    except BrowserError as exc:
        pytest.fail(exc.report(), pytrace=False)


@pytest.fixture
def netgent_network(
    request: pytest.FixtureRequest, netgent_webdriver: WebDriver, netgent_base_url: str
) -> Iterator[Condition | None]:
    """The test's link condition (its workflow's ``network:``, else ``--netgent-network``)
    on the wire while it runs, the browser's control ports left unshaped; None when the
    test runs unshaped. A condition that cannot be applied fails the test."""
    from ..browser.session import browser_ports
    from .shaping import network_plugin

    ports = browser_ports(netgent_webdriver)
    with network_plugin(request.config).hold(request.node, ports, netgent_base_url) as held:
        yield held


@pytest.fixture
def netgent_capture(
    request: pytest.FixtureRequest,
    netgent_settings: Settings,
    netgent_browser_pool: BrowserPool,
    netgent_network: Condition | None,
    netgent_base_url: str,
) -> Iterator[CaptureRun | None]:
    """The test's captures (``--netgent-capture``), running from before its first page to
    after its browser's reset, then written into its own folder; None when capture is off."""
    if not netgent_settings.capture.on:
        yield None
        return
    from .capturing import capture_plugin

    plugin = capture_plugin(request.config)
    yield from plugin.around(request.node, netgent_browser_pool, netgent_base_url, netgent_network)


@pytest.fixture
def netgent_browser(
    netgent_browser_pool: BrowserPool,
    netgent_settings: Settings,
    netgent_base_url: str,
    netgent_network: Condition | None,
    netgent_capture: CaptureRun | None,
) -> Iterator[NetgentBrowser]:
    """A browser reset for this test (no cookies, storage or extra tabs afterwards).

    ``.driver`` is the Selenium WebDriver; ``.run(file, name)`` replays a workflow and
    returns its :class:`~pytest_netgent.RunResult`. With ``--netgent-capture`` the test's
    traffic is captured into its own folder, and the browser's caches and connections are
    dropped after it.
    """
    from ..replay.runner import NetgentBrowser

    browser = NetgentBrowser(netgent_browser_pool, netgent_settings, netgent_base_url)
    browser.network = netgent_network.text() if netgent_network is not None else ""
    if netgent_capture is not None:
        browser.before_run = netgent_capture.before_run
    try:
        yield browser
    finally:
        try:
            if netgent_capture is not None:
                netgent_capture.before_reset(browser)
        finally:
            # the reset closes the test's connections: their last packets are its own
            browser.stop_video()
            netgent_browser_pool.reset(browser.origins)
