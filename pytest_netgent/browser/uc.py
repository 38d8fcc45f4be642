"""SeleniumBase's UC mode (``--netgent-uc``), started with the system's driver: nothing
downloaded, nothing written into the installed package nor the current folder,
SeleniumBase's output kept quiet.

SeleniumBase writes profile preferences that keep WebRTC off UDP unless it goes through a
proxy, on the default route only (``webrtc.ip_handling_policy`` =
``disable_non_proxied_udp``, multiple routes and non-proxied UDP off), to hide a machine's
addresses. A video call then sends its media over TCP relays or not at all, which is not
the traffic a dataset of calls is made of: the browser is given Chromium's own defaults
for those three instead (:data:`WEBRTC_PREFS`).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import BrowserError

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

WEBRTC_PREFS = {
    "webrtc.ip_handling_policy": "default",
    "webrtc.multiple_routes_enabled": True,
    "webrtc.nonproxied_udp_enabled": True,
}
"""Chromium's defaults for WebRTC's addresses and routes, over SeleniumBase's."""


def start_uc(
    args: list[str], headless: bool, browser: str, driver_path: str, **extra: Any
) -> WebDriver:
    """A UC-mode browser (``browser``, with ``args`` and ``driver_path``'s driver);
    ``extra`` goes to SeleniumBase's ``Driver``. Raises :class:`BrowserError`."""
    try:
        from seleniumbase import Driver
        from seleniumbase.config import settings as sb_settings
    except ImportError:
        from ..system.extras import UC_MISSING

        raise BrowserError(UC_MISSING) from None
    # SeleniumBase downloads a driver when its driver folder has none, and patches the
    # one it runs (uc_driver); a folder of this browser's own, named through its
    # NEW_DRIVER_DIR setting, holds copies of the system chromedriver instead, so
    # nothing is downloaded and nothing is written into the installed package. Its
    # downloads folder (a downloaded_files/ in the current folder: the user's project)
    # goes there too.
    own = tempfile.mkdtemp(prefix="netgent-uc-", dir=extra.pop("temp_dir", None))
    atexit.register(shutil.rmtree, own, True)
    drivers = os.path.join(own, "drivers")
    os.mkdir(drivers)
    for name in ("chromedriver", "uc_driver"):
        shutil.copy2(driver_path, os.path.join(drivers, name))
    sb_settings.NEW_DRIVER_DIR = drivers
    _own_folder(own)
    logging.getLogger("seleniumbase").setLevel(logging.ERROR)
    plain, features, size = _split(args)
    if features:
        extra["disable_features"] = ",".join(features)
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet), _webrtc_prefs():
            driver: WebDriver = Driver(
                uc=True,
                headless2=headless,
                binary_location=browser,
                chromium_arg=",".join(plain),
                no_sandbox=True,
                **extra,
            )
        if size:
            try:
                driver.set_window_size(*size)
            except BaseException:  # the browser is quit, then the error is raised
                with contextlib.suppress(Exception):  # a browser already gone
                    driver.quit()
                raise
    except Exception as exc:  # SeleniumBase raises its own and Selenium's types: one message
        raise BrowserError(
            f"SeleniumBase UC mode did not start Chromium ({browser}): {_line(exc)}"
            f"; output: {_line(quiet.getvalue())}"
        ) from None
    return driver


def _split(args: list[str]) -> tuple[list[str], list[str], tuple[int, int] | None]:
    """``args`` as SeleniumBase takes them: it joins its flags with commas and splits
    them there, so a flag holding commas would become several. The window size is
    given to the window once it runs, the features to disable through SeleniumBase's
    own list; another flag with a comma cannot be passed (:class:`BrowserError`)."""
    plain, features, size = [], [], None
    for arg in args:
        if "headless" in arg:
            continue  # SeleniumBase's headless2 says it
        if arg.startswith("--window-size="):
            width, _, height = arg.partition("=")[2].partition(",")
            if not (width.strip().isdigit() and height.strip().isdigit()):
                raise BrowserError(f"the browser flag {arg!r} is not --window-size=WIDTH,HEIGHT")
            size = (int(width), int(height))
        elif arg.startswith("--disable-features="):
            features += [f for f in arg.partition("=")[2].split(",") if f]
        elif "," in arg:
            raise BrowserError(
                f"the browser flag {arg!r} holds a comma, which SeleniumBase's UC mode "
                "(--netgent-uc) splits into separate flags: drop the flag, or the "
                "--netgent-uc option for this run"
            )
        else:
            plain.append(arg)
    return plain, features, size


def _own_folder(own: str) -> None:
    """Point SeleniumBase's downloads folder and lock files, which it keeps in a
    ``downloaded_files/`` of the current folder, into ``own`` (this browser's folder;
    the drivers they guard are this browser's own copies)."""
    try:
        from seleniumbase.core import browser_launcher, download_helper
        from seleniumbase.fixtures import constants
    except ImportError:  # another layout of SeleniumBase: left as it is
        return
    downloads = os.path.join(own, "downloads")
    download_helper.downloads_path = browser_launcher.DOWNLOADS_FOLDER = downloads
    folder, locks = "downloaded_files/", getattr(constants, "MultiBrowser", None)
    for name, value in dict(vars(locks) if locks is not None else {}).items():
        if isinstance(value, str) and value.startswith(folder):
            setattr(locks, name, os.path.join(own, value[len(folder) :]))


@contextlib.contextmanager
def _webrtc_prefs() -> Iterator[None]:
    """While SeleniumBase writes the profile's preferences: :data:`WEBRTC_PREFS` over its
    own (its UC options write them through ``handle_prefs``; a SeleniumBase without it
    is left as it is)."""
    try:
        from seleniumbase.undetected.options import ChromeOptions
    except ImportError:  # another layout of SeleniumBase: its preferences stay
        yield
        return
    original = getattr(ChromeOptions, "handle_prefs", None)
    if original is None:
        yield
        return

    def handle_prefs(self: Any, user_data_dir: Any) -> Any:
        prefs = self.experimental_options.get("prefs")
        if isinstance(prefs, dict):
            prefs.update(WEBRTC_PREFS)
        return original(self, user_data_dir)

    ChromeOptions.handle_prefs = handle_prefs
    try:
        yield
    finally:
        ChromeOptions.handle_prefs = original


def _line(text: Any) -> str:
    return next(iter(str(text or "").strip().splitlines()), "(no message)")
