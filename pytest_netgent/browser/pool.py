"""The one browser of a process (an xdist worker, or pytest without ``-n``): started on
first use with a throw-away profile of its own, its navigations confined by the
allowed-hosts guard, reset between items, closed (and its folder removed) however the
process ends."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BrowserError, NetgentError
from ..system import interrupts
from ..system.leftovers import end_profile_processes, own_folder
from ..system.redaction import SecretLogs
from .guard import NavigationGuard
from .page import script, watch_requests
from .session import BrowserOptions, blank_profile, browser_gone, reset_browser, start_browser
from .tempdir import home_base
from .watchdog import devtools_endpoint

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from .screencast import LiveStream, Pictures


# Files a running Chromium keeps in its profile: a copy must not carry them over.
_PROFILE_SKIP = ("SingletonLock", "SingletonSocket", "SingletonCookie", "lockfile", "*.lock")


def _ended_by_sigint(driver: WebDriver) -> bool:
    """Whether the ChromeDriver of the quit ``driver`` had ended by SIGINT before it was
    quit (a live one ends by the SIGTERM of the quit)."""
    process = getattr(getattr(driver, "service", None), "process", None)
    return process is not None and process.poll() == -signal.SIGINT


def _remove_profile(home: str) -> None:
    """End what still runs on the throw-away browser folder ``home`` (a browser whose
    driver was killed) and remove it, profile and scratch files alike."""
    end_profile_processes(str(Path(home) / "profile"))
    deadline = time.monotonic() + 3.0
    while True:  # a helper of the browser may still be closing its last files
        shutil.rmtree(home, ignore_errors=True)
        if not os.path.lexists(home) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


def copy_profile(source: Path, into: Path) -> Path:
    """Copy the browser profile ``source`` to ``into/profile`` for one worker's browser,
    without the lock files of a browser that may be using ``source``."""
    target = into / "profile"
    try:
        shutil.copytree(
            source, target, symlinks=True, ignore=shutil.ignore_patterns(*_PROFILE_SKIP)
        )
    except (OSError, shutil.Error) as exc:
        raise BrowserError(
            f"--netgent-user-data-dir {source}: cannot copy the profile for this worker: {exc}"
        ) from None
    return target


class BrowserPool:
    """The one browser of this process (xdist worker), started on first use."""

    def __init__(self, options: BrowserOptions) -> None:
        self.options = options
        self._driver: WebDriver | None = None
        self.launch: Callable[[BrowserOptions], WebDriver] = start_browser
        """Starts the browser from its options (a capture adds its own flags)."""
        self.after_reset: Callable[[WebDriver], None] | None = None
        """Called after each reset between items (a capture drops caches and connections)."""
        self.cold = False
        """Whether each item starts in a new renderer process (a capture's cold start:
        nothing of the last item's pages stays in memory); else the blank page between
        items is opened by the page itself, in its process (see :func:`reset_browser`)."""
        self.after_close: Callable[[], None] | None = None
        """Called once a browser has closed (a capture splits its logs by item)."""
        self.secret_logs = SecretLogs()
        """Keeps the secrets this browser was given out of the libraries' logs."""
        self._window: tuple[int, int] | None = None
        """The size the running browser's window was given (None: the options' size)."""
        self.guard: NavigationGuard | None = None
        """Confines the running browser's navigations to each run's allowed hosts."""
        self.guard_error = ""
        """Why the guard could not be installed ("" if it was)."""
        self._profile: Callable[[], None] | None = None
        """Removes the running local browser's throw-away profile (see :meth:`start`)."""
        self.live: LiveStream | None = None
        """Where this browser's frames and doings go for ``--netgent-live PORT``."""
        self._interrupted = False
        """Whether the last browser's driver was ended by SIGINT (see :meth:`start`)."""

    @property
    def driver(self) -> WebDriver:
        """The live driver, started now if needed."""
        return self.start()

    @property
    def running(self) -> WebDriver | None:
        """The driver if a browser runs, else ``None`` (never starts one)."""
        return self._driver

    def start(self) -> WebDriver:
        """Start the browser unless it runs; raises :class:`BrowserError` if it cannot.

        Raises ``KeyboardInterrupt`` instead when the last browser's ChromeDriver was
        ended by SIGINT: a Ctrl-C reached this process group, and a run that somehow went
        on after it must not start another browser."""
        interrupts.check()  # a Ctrl-C this process took, even one lost on the way
        if self._interrupted:
            raise KeyboardInterrupt(
                "the browser's ChromeDriver was stopped by SIGINT (Ctrl-C): no new browser "
                "is started, the run stops"
            )
        if self._driver is None:
            options = self.options
            if not (options.user_data_dir or options.remote or options.uc):
                # A profile folder of our own, not ChromeDriver's: whatever kills the driver
                # (a crash, Ctrl-C), close() still finds the browser by it and removes it.
                home = own_folder(home_base())  # removed by a watcher if this process dies
                (home / "tmp").mkdir()
                blank_profile(home / "profile")
                self._profile = functools.partial(_remove_profile, str(home))
                atexit.register(self._profile)
                options = dataclasses.replace(
                    options, user_data_dir=str(home / "profile"), temp_dir=str(home / "tmp")
                )
            self._driver = self.launch(options)
            if not (options.uc or options.remote):
                watch_requests(self._driver)  # (a browser that refuses fails to start)
            if not options.uc:
                self._start_guard(self._driver)
        return self._driver

    def _start_guard(self, driver: WebDriver) -> None:
        """Connect the guard: to a local browser's DevTools, or through a Grid's relay
        (``se:cdp``). None for UC mode: the guard runs scripts in pages and holds their
        requests, which a site checking for automation could notice."""
        self.guard_error = ""
        endpoint = devtools_endpoint(driver)
        if self.options.remote and not endpoint:
            self.guard, self.guard_error = None, "the Grid gives no DevTools relay (se:cdp)"
            return
        try:
            self.guard = NavigationGuard(endpoint, (script("shadow.js"),))
        except Exception as exc:  # whatever it was, no run starts without it (checked_guard)
            self.guard, self.guard_error = None, f"{type(exc).__name__}: {exc}"

    def checked_guard(self) -> NavigationGuard | None:
        """The running guard of the browser (reconnected once if its connection dropped),
        ``None`` in UC mode or on a Grid without a reachable DevTools relay (their URLs
        are checked once loaded); raises :class:`NetgentError` when a local browser's
        cannot run: no run starts whose navigations could not be confined."""
        if self.options.uc:
            return None
        driver = self.driver  # started now if needed, with its guard
        if self.guard is not None and not self.guard.alive:
            self.guard.close()
            self._start_guard(driver)
        elif self.guard is None and not self.options.remote:
            self._start_guard(driver)
        if self.guard is None and self.options.remote:
            return None  # the Grid's relay is missing or unreachable (guard_error says)
        if self.guard is None:
            raise NetgentError(
                "the allowed-hosts guard could not be installed in the browser "
                f"({self.guard_error}), so the run was not started: its navigations could "
                "not be confined to the workflow's allowed hosts. Check that Chromium's "
                "DevTools endpoint is reachable (a --netgent-browser-arg may close it)"
            )
        return self.guard

    def follow(self, pictures: Pictures) -> Pictures:
        """Have ``pictures`` follow the running browser (started now if needed)."""
        if not pictures.watching(self.driver):
            # a Grid's browser through the Grid's own DevTools relay (se:cdp); UC mode's
            # too: the pictures' client runs nothing in its pages (see Screencast)
            pictures.watch(self.driver, devtools_endpoint(self.driver))
        return pictures

    def size_window(self, size: tuple[int, int]) -> None:
        """Give the browser window ``size`` (width, height) unless it has it already."""
        driver = self.driver
        current = self._window or self.options.window_size
        if tuple(size) != tuple(current):
            try:
                driver.set_window_size(*size)
            except Exception as exc:  # a dead browser is raised; a refusal becomes a NetgentError
                if browser_gone(exc):
                    raise
                raise NetgentError(f"the browser refused the window size {size}: {exc}") from None
            self._window = (size[0], size[1])

    def reset(self, origins: set[str]) -> None:
        """Reset between items; a browser that fails to reset is replaced next time."""
        if self._driver is None:
            return
        try:
            reset_browser(
                self._driver,
                origins,
                keep_profile=bool(self.options.user_data_dir),
                cold=self.cold,
            )
            if self.after_reset is not None:
                self.after_reset(self._driver)
        except Exception:  # a browser that fails to reset is replaced next time
            self.close()

    def close(self) -> None:
        """Stop the browser, if one runs."""
        self.secret_logs.remove()
        self._window = None  # a new browser starts at the options' size
        if self.live is not None:
            self.live.stop()
        if self.guard is not None:
            self.guard.close()
            self.guard = None
        if self._driver is not None:
            driver, self._driver = self._driver, None
            with contextlib.suppress(Exception):  # already dead: nothing to stop
                driver.quit()
            self._interrupted = _ended_by_sigint(driver)
            if self.after_close is not None:
                self.after_close()
        if self._profile is not None:
            remove, self._profile = self._profile, None
            atexit.unregister(remove)
            remove()
