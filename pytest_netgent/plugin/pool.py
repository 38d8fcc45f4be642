"""This process's browser for pytest: one pool per process (xdist worker), made on first
use by the ``netgent_browser_pool`` fixture, or just before the first item that needs it
so that starting the browser is not charged to that item's time."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

from ..system import interrupts
from .keys import options_key, pool_key, settings_key

if TYPE_CHECKING:
    from ..browser.pool import BrowserPool
    from ..browser.session import BrowserOptions


def browser_options(config: pytest.Config) -> BrowserOptions:
    """The launch options of this process's browser, as the command line and ini say;
    with ``--netgent-user-data-dir``, on this worker's own copy of the profile (made once)."""
    options = config.stash.get(options_key, None)
    if options is not None:
        return options
    from ..browser.pool import copy_profile

    settings = config.stash[settings_key]
    options = settings.browser
    if settings.profile is not None:
        copy = copy_profile(settings.profile, _temp(config).mktemp("profile"))
        options = dataclasses.replace(options, user_data_dir=str(copy))
    config.stash[options_key] = options
    return options


def browser_pool(config: pytest.Config, options: BrowserOptions | None = None) -> BrowserPool:
    """This process's browser pool (one per xdist worker) on ``options`` (default:
    :func:`browser_options`), made on first use; a pool made on other options (a
    ``netgent_browser_options`` fixture of a conftest.py) is closed and made again."""
    from ..browser.pool import BrowserPool

    options = options or browser_options(config)
    pool = config.stash.get(pool_key, None)
    if pool is not None and pool.options == options:
        return pool
    if pool is not None:
        _close(config)
    pool = BrowserPool(options)
    from .status import live_stream

    pool.live = live_stream(config)
    if config.stash[settings_key].capture.on:
        from .capturing import capture_plugin

        capture_plugin(config).attach(pool, _temp(config).mktemp("browsers"))
    config.stash[pool_key] = pool
    config.add_cleanup(pool.close)  # if no fixture ever took it (its item's setup failed)
    return pool


def _temp(config: pytest.Config) -> pytest.TempPathFactory:
    """The session's tmp_path_factory, which the fixture of that name also returns."""
    temp: pytest.TempPathFactory = getattr(config, "_tmp_path_factory")  # noqa: B009
    return temp


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Start this process's browser before an item that needs it, and close it after
    this process's last item (``nextitem`` is None), both outside the item's own time
    (a timeout plugin's timer starts and stops inside this hook): starting and stopping
    a browser is the session's cost, not the first or the last item's. A browser that
    cannot start is reported by the item's setup.

    No item starts once this process was asked to stop, and on Ctrl-C (or SIGTERM) the
    browser is closed at once, before pytest reports the interrupt: that report takes
    seconds on a busy machine, and an xdist worker that has not ended a few seconds after
    its controller stopped is interrupted again (in the middle of its clean-up), then
    ended outright."""
    interrupts.check()  # an interrupt lost on its way (see ..system.interrupts)
    if "netgent_browser" in getattr(item, "fixturenames", ()):
        settings = item.config.stash.get(settings_key, None)
        if settings is not None and not settings.browser.remote:
            with contextlib.suppress(Exception):  # the fixture tries again and says why
                browser_pool(item.config).start()
    try:
        return (yield)
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):  # the interrupt is what the run reports
            _close(item.config)
        raise
    finally:
        if nextitem is None:
            _close(item.config)


def _close(config: pytest.Config) -> None:
    """Close this process's browser, if one runs (a later item makes a new pool)."""
    if (pool := config.stash.get(pool_key, None)) is not None:
        del config.stash[pool_key]
        pool.close()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """Close the browser of a session that stopped before its last item (``-x``,
    ``--maxfail``, Ctrl-C), before the captures are summed up."""
    _close(session.config)
