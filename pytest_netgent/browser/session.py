"""Starting, resetting and stopping the browser of one pytest process (or xdist worker).

Chromium is driven through Selenium with the system ``chromium`` and ``chromedriver``
found on PATH, or through SeleniumBase's UC mode for sites that block automation. Nothing
is ever downloaded: both executables are located up front, with a clear error if missing.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import BrowserError
from ..system.leftovers import end_profile_processes, owned_env
from .tempdir import SOCKET_MAX, SOCKET_TAIL, browser_temp, socket_room

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Flags that keep a headless Chromium from reaching out to the internet on its own
# (component updates, sync, field trials) and make it work as root in containers.
QUIET_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-field-trial-config",
    # the browser's own calls to Google services (autofill, password leak checks, model
    # downloads) would add to every capture
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication,"
    "PasswordLeakDetection,OptimizationGuideModelDownloading,OptimizationHintsFetching",
    "--no-default-browser-check",
    "--password-store=basic",
    "--use-mock-keychain",
    "--autoplay-policy=no-user-gesture-required",
)

QUIET_PREFS = {
    "credentials_enable_service": False,
    "profile.password_manager_enabled": False,
    "profile.password_manager_leak_detection": False,
    "autofill.profile_enabled": False,
    "signin.allowed": False,
}
"""Profile preferences that keep the password manager and autofill quiet (no prompts,
no leak checks against Google)."""

INSTALL_HINT = "install it with 'apt-get install -y chromium chromium-driver'"


PAGE_LOAD_S = 60.0
"""The longest a page may take to load; a navigation with less of the workflow's timeout
left is given only what is left (see ``Actions.navigate``)."""


@dataclass
class BrowserOptions:
    """How to start the browser; built from the ``--netgent-*`` options."""

    headless: bool = True
    uc: bool = False
    args: list[str] = field(default_factory=list)
    chromium: str = ""
    chromedriver: str = ""
    window_size: tuple[int, int] = (1280, 900)
    page_load_timeout: float = PAGE_LOAD_S
    remote: str = ""
    """URL of a Selenium Grid (or any WebDriver server): start a remote session there."""
    remote_retries: int = 3
    """New-session attempts after the first when the Grid is unreachable or full."""
    remote_backoff: float = 1.0
    """Seconds before the first retry; doubled for each next one."""
    user_data_dir: str = ""
    """Browser profile folder (this worker's own copy)."""
    driver_port: int = 0
    """Port ChromeDriver listens on (0: any free one)."""
    network_events: bool = False
    """Log the DevTools network events (read with ``driver.get_log("performance")``)."""
    console: bool = False
    """Log the pages' console messages (read with ``driver.get_log("browser")``)."""
    temp_dir: str = ""
    """The browser's ``TMPDIR`` (its sockets and scratch folders), default the process's."""
    group: int = 0
    """Group id ChromeDriver and the browser run under (0: this process's), by which a
    scenario tells whose sockets are whose."""

    def locate(self) -> tuple[str, str]:
        """Absolute paths of Chromium and ChromeDriver, or a :class:`BrowserError`."""
        browser = _executable("Chromium", self.chromium, CHROMIUM_NAMES, "chromium")
        driver = _executable("chromedriver", self.chromedriver, ("chromedriver",), "chromedriver")
        return browser, driver

    def chromium_args(self) -> list[str]:
        """Every command-line flag Chromium is started with."""
        args = list(QUIET_ARGS)
        if self.headless:
            args.append("--headless=new")
        args.append(f"--window-size={self.window_size[0]},{self.window_size[1]}")
        if self.user_data_dir:
            args.append(f"--user-data-dir={self.user_data_dir}")
        args.extend(self.args)
        return args


def _executable(what: str, explicit: str, names: tuple[str, ...], option: str) -> str:
    """``explicit`` (--netgent-OPTION) or the first of ``names`` on PATH."""
    if explicit:
        found = shutil.which(explicit)
        if not found:
            raise BrowserError(
                f"{what} not found at {explicit} (--netgent-{option} or ini netgent_{option}): "
                f"{INSTALL_HINT}, or give the path of an installed one"
            )
        return found
    found = next((p for p in map(shutil.which, names) if p), None)
    if not found:
        raise BrowserError(
            f"{what} not found on PATH (looked for {', '.join(names)}): {INSTALL_HINT}, or "
            f"pass --netgent-{option} PATH"
        )
    return found


def _chrome_options(options: BrowserOptions, browser: str) -> Any:
    from selenium import webdriver

    chrome_options = webdriver.ChromeOptions()
    if browser:
        chrome_options.binary_location = browser
    for arg in options.chromium_args():
        chrome_options.add_argument(arg)
    chrome_options.add_experimental_option("excludeSwitches", ["enable-automation"])
    chrome_options.add_experimental_option("prefs", QUIET_PREFS)
    logs = {"browser": "ALL" if options.console else "OFF"}
    if options.network_events:
        logs["performance"] = "ALL"
        chrome_options.add_experimental_option(
            "perfLoggingPrefs", {"enableNetwork": True, "enablePage": False}
        )
    chrome_options.set_capability("goog:loggingPrefs", logs)
    return chrome_options


def start_browser(options: BrowserOptions) -> WebDriver:
    """Start a Chromium WebDriver session as ``options`` say."""
    if options.remote:
        return start_remote(options)
    browser, driver_path = options.locate()
    if options.uc:
        from .uc import start_uc

        driver = start_uc(
            options.chromium_args(),
            options.headless,
            browser,
            driver_path,
            temp_dir=options.temp_dir or None,
            log_cdp_events=options.network_events,  # the performance log, for HAR
        )
        return _ready(driver, options)
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service

    chrome_options = _chrome_options(options, browser)
    temp = browser_temp(options.temp_dir)
    env = owned_env({**os.environ, "TMPDIR": temp} if temp else None)
    popen: dict[str, Any] = {"group": options.group} if options.group else {}
    for attempt in range(1, START_ATTEMPTS + 1):
        service = Service(driver_path, port=options.driver_port, env=env, popen_kw=popen)
        try:
            driver = webdriver.Chrome(service=service, options=chrome_options)
            break
        except BaseException as exc:  # cleaned up, then raised as it came
            # a start cut short (a timeout's signal, Ctrl-C) leaves ChromeDriver running
            with contextlib.suppress(Exception):  # ChromeDriver already gone
                service.stop()
            if options.user_data_dir:
                end_profile_processes(options.user_data_dir)
            # Ctrl-C or a signal is never a driver gone, even when it came while a refused
            # connection was being handled (then the refusal is its context)
            if not isinstance(exc, Exception) or not _driver_gone(exc):
                if isinstance(exc, WebDriverException):
                    raise _start_error(exc, browser, driver_path, temp) from None
                raise
            if attempt == START_ATTEMPTS:
                raise BrowserError(
                    f"ChromeDriver ({driver_path}) stopped answering while it started Chromium, "
                    f"{START_ATTEMPTS} times ({_first_line(str(exc))}); check that it runs on "
                    "its own (chromedriver --version) and that nothing ends its processes"
                ) from None
    return _ready(driver, options)


START_ATTEMPTS = 2  # ChromeDriver processes tried for a browser when one goes away


def _driver_gone(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) says ChromeDriver stopped answering."""
    from urllib3.exceptions import HTTPError as TransportError

    while exc is not None and not isinstance(exc, (ConnectionError, TransportError)):
        exc = exc.__cause__ or exc.__context__
    return exc is not None


def _start_error(exc: Any, browser: str, driver_path: str, temp: str) -> BrowserError:
    """What a start that WebDriver refused (``exc``) means, and what to do."""
    temp = temp or tempfile.gettempdir()
    if socket_room(temp) < 0:
        return BrowserError(
            f"Chromium ({browser}) did not start through {driver_path}: its temporary "
            f"folder {temp} ({len(temp)} characters) is too long for the socket Chromium "
            f"makes in it ({SOCKET_MAX} bytes at most for {temp}{SOCKET_TAIL}): set TMPDIR "
            "to a shorter folder, e.g. TMPDIR=/tmp"
        )
    return BrowserError(
        f"Chromium ({browser}) did not start through {driver_path}: "
        f"{_first_line(exc.msg)}; check that chromium and chromium-driver are the same "
        "version, or pass flags with --netgent-browser-arg"
    )


def grid_status(url: str, timeout: float = 5.0) -> tuple[bool, str]:
    """Ask a Selenium Grid whether it can start a session now: ``(ok, why not)``.

    Reads the Grid's ``/status``: unreachable, not ready, or every slot busy is a
    ``False`` with the Grid's own words; a server without slot details (a plain
    ChromeDriver) is taken at its ``ready`` flag.
    """
    import json
    import urllib.error
    import urllib.request

    status_url = url.rstrip("/") + "/status"
    try:
        with urllib.request.urlopen(status_url, timeout=timeout) as answer:
            data = json.loads(answer.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        return False, f"{status_url} answered HTTP {exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"unreachable ({reason})"
    except ValueError:
        return False, f"{status_url} did not answer JSON: is this a Selenium Grid?"
    value = data.get("value", {}) if isinstance(data, dict) else {}
    nodes = value.get("nodes")
    if isinstance(nodes, list):
        slots = [
            slot
            for node in nodes
            if node.get("availability", "UP") == "UP"
            for slot in node.get("slots", [])
            if str(slot.get("stereotype", {}).get("browserName", "chrome")).lower()
            in ("chrome", "chromium")
        ]
        free = [slot for slot in slots if not slot.get("session")]
        if not slots:
            return False, "the Grid has no Chrome/Chromium slots (no node offers one)"
        if not free:
            return False, f"no free slot: all {len(slots)} slots are busy"
        return True, ""
    if value.get("ready"):
        return True, ""
    return False, f"not ready: {value.get('message', 'no message')}"


def start_remote(options: BrowserOptions) -> WebDriver:
    """A session on the Selenium Grid at ``options.remote``, with bounded retries.

    When the Grid is unreachable or has no free slot, retries ``remote_retries`` times,
    waiting ``remote_backoff`` seconds and doubling; then raises :class:`BrowserError`
    with the Grid's answer. Chromium's path on the node is the node's business, unless
    ``--netgent-chromium`` names one.
    """
    import time

    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.remote.client_config import ClientConfig

    url = options.remote
    chrome_options = _chrome_options(options, options.chromium)
    attempts = options.remote_retries + 1
    wait = options.remote_backoff
    why = ""
    for attempt in range(1, attempts + 1):
        ok, why = grid_status(url)
        if ok:
            try:
                config = ClientConfig(remote_server_addr=url, timeout=120)
                driver = webdriver.Remote(
                    command_executor=url, options=chrome_options, client_config=config
                )
            except WebDriverException as exc:
                why = f"refused the session: {_first_line(exc.msg)}"
            except Exception as exc:  # connection dropped between status and session
                why = f"unreachable ({_first_line(exc)})"
            else:
                executor: Any = driver.command_executor
                executor.add_command(CDP_COMMAND, "POST", "/session/$sessionId/goog/cdp/execute")
                executor.add_command(LOG_COMMAND, "POST", "/session/$sessionId/se/log")
                driver.set_page_load_timeout(options.page_load_timeout)
                return start_blank(driver)
        if attempt < attempts:
            time.sleep(wait)
            wait *= 2
    raise BrowserError(
        f"--netgent-remote {url}: {why} (after {attempts} attempts over "
        f"{options.remote_backoff * (2 ** (attempts - 1) - 1):g}s); start the Grid or add "
        "nodes, or run without --netgent-remote to use a local browser"
    )


CDP_COMMAND = "netgentExecuteCdp"
"""The WebDriver command added to remote sessions for Chromium's DevTools protocol."""


LOG_COMMAND = "netgentGetLog"
"""The WebDriver command added to remote sessions for ChromeDriver's logs."""


def browser_log(driver: WebDriver, kind: str) -> list[dict[str, Any]]:
    """ChromeDriver's log ``kind`` (e.g. ``performance``) since it was last read, locally
    or through a Grid."""
    local = getattr(driver, "get_log", None)
    if local is not None:
        return list(local(kind))
    answer = driver.execute(LOG_COMMAND, {"type": kind})
    return list(answer.get("value") or []) if answer else []


def cdp(driver: WebDriver, command: str, params: dict[str, Any]) -> Any:
    """Run a DevTools protocol command, locally or through a Grid; ``None`` when the
    session cannot (not Chromium)."""
    local = getattr(driver, "execute_cdp_cmd", None)
    if local is not None:
        return local(command, params)
    if not _has_cdp(driver):
        return None
    answer = driver.execute(CDP_COMMAND, {"cmd": command, "params": params})
    return answer.get("value") if answer else None


# Answers of a session whose browser crashed, was killed, or whose driver is gone.
_GONE = (
    "invalid session id",
    "no such session",
    "chrome not reachable",
    "session deleted",
    "disconnected:",
    "not connected to devtools",
    "tab crashed",
    "target crashed",
    "unable to receive message from renderer",
)


@functools.cache
def driver_errors() -> tuple[type[Exception], ...]:
    """What a WebDriver call raises when the page, the tab or the browser is not there to
    answer it: Selenium's own errors, and its transport's (a dead driver refuses the
    connection). Imported on first use: pytest's start imports no Selenium."""
    from selenium.common.exceptions import WebDriverException
    from urllib3.exceptions import HTTPError as DriverUnreachable

    return (WebDriverException, OSError, DriverUnreachable)


def browser_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says the browser (or its driver) is dead rather than the page
    being other than expected."""
    from urllib3.exceptions import HTTPError as DriverUnreachable  # selenium's transport

    if isinstance(exc, (ConnectionError, TimeoutError, DriverUnreachable)):
        return True
    text = str(getattr(exc, "msg", None) or exc).lower()
    return any(sign in text for sign in _GONE)


def _first_line(text: Any) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else "(no message)"


BLANK = "data:,"
"""The page every item starts on: a fresh ChromeDriver session's, and after each reset."""

NETGENT_START_PAGE = "chrome://new-tab-page/"
"""The start page NetGent's repositories check for: a fresh Chrome's new-tab page."""

START_PAGES = frozenset(
    {NETGENT_START_PAGE, "chrome://newtab/", "about:blank", "about:newtab", BLANK}
)
"""A browser's start pages: before a run's first real page, a url check naming one of
them holds on whichever this browser shows (see ``checks.js``)."""


def blank_profile(folder: Path) -> None:
    """A new profile at ``folder`` that starts on :data:`BLANK`: ChromeDriver opens it only
    for profiles of its own, and a given one would open the new-tab page instead (a page
    load, with its requests, at every start)."""
    (folder / "Default").mkdir(parents=True, exist_ok=True)
    prefs = {"session": {"restore_on_startup": 4, "startup_urls": [BLANK]}}
    (folder / "Default" / "Preferences").write_text(json.dumps(prefs), encoding="utf-8")


def start_blank(driver: WebDriver) -> WebDriver:
    """Make sure a new browser shows :data:`BLANK` (with a profile it opens a new-tab
    page or the profile's last session instead)."""
    if driver.current_url != BLANK:
        driver.get(BLANK)
    return driver


def _ready(driver: WebDriver, options: BrowserOptions) -> WebDriver:
    """A browser just started, with its page-load timeout, on :data:`BLANK`; quit if
    either fails (or the start is interrupted)."""
    try:
        driver.set_page_load_timeout(options.page_load_timeout)
        return start_blank(driver)
    except BaseException:  # cleaned up, then raised as it came
        with contextlib.suppress(Exception):  # a browser already gone
            driver.quit()
        raise


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, else ``None``."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return f"{parts.scheme}://{parts.netloc}"
    return None


SITE_DATA = (
    "local_storage,indexeddb,websql,file_systems,cache_storage,service_workers,"
    "shared_storage,storage_buckets"
)
"""What a site stores, cleared per visited origin between items (cookies are cleared for
all sites at once). Naming the types costs a third of ``all``, which also drops the
browser's shader and interest-group caches that no site can read back."""


def reset_browser(
    driver: WebDriver, origins: set[str], *, keep_profile: bool = False, cold: bool = True
) -> None:
    """Make the browser as new for the next item: one blank tab, no cookies or storage.

    ``origins`` are the sites the item visited; the origins of the pages still open are
    added, and their storage (local and session storage, IndexedDB, cache storage,
    service workers) is cleared through the DevTools protocol. With ``keep_profile`` (a
    ``--netgent-user-data-dir`` profile) cookies and storage stay: the profile's logins
    must outlive the item.

    The item's page is left first, so that none of its scripts runs (or writes its
    storage on the way out) once the storage is cleared. ``cold`` opens the blank page
    from the browser, in a new renderer process (a capture's cold start: nothing of the
    item's pages stays in memory); otherwise the page opens ``about:blank`` itself, in
    its own process, which the next item's first page may then reuse: some 45 ms less
    per item, as measured side by side (``bench/scale.py``).
    """
    from selenium.common.exceptions import NoSuchWindowException

    try:
        pages = _open_pages(driver)
    except NoSuchWindowException:  # the item closed the window the driver was on
        driver.switch_to.window(driver.window_handles[0])
        pages = _open_pages(driver)
    if pages is not None and len(pages) == 1:
        # The usual case, in one round trip: the item's single tab, left where it was.
        if (origin := origin_of(pages[0])) is not None:
            origins.add(origin)
    else:
        _close_other_windows(driver, origins)
    if cold or not _left_in_place(driver):
        driver.get(BLANK)
    if keep_profile:
        return
    if pages is None:
        # A session without the DevTools protocol: cookies of the current origin only.
        driver.delete_all_cookies()
        return
    cdp(driver, "Network.clearBrowserCookies", {})
    for origin in sorted(origins):
        cdp(driver, "Storage.clearDataForOrigin", {"origin": origin, "storageTypes": SITE_DATA})


def _left_in_place(driver: WebDriver) -> bool:
    """Let the page open ``about:blank`` itself (ChromeDriver waits for the navigation);
    ``False`` when it cannot (no script runs there: an open dialog, a viewer page)."""
    try:
        driver.execute_script("location.replace('about:blank')")
        return bool(driver.execute_script("return location.href === 'about:blank'"))
    except driver_errors():  # a page no script runs in: the browser opens the blank page
        return False


def _open_pages(driver: WebDriver) -> list[str] | None:
    """URLs of the browser's open tabs and windows, read in one DevTools call (WebDriver
    takes two per window); ``None`` for a session without the protocol."""
    if not _has_cdp(driver):
        return None
    answer = cdp(driver, "Target.getTargets", {})
    if not isinstance(answer, dict):
        return None
    return [
        str(target.get("url", ""))
        for target in answer.get("targetInfos", ())
        if target.get("type") == "page"
    ]


def _close_other_windows(driver: WebDriver, origins: set[str]) -> None:
    """Close every window but the first, noting the origins of all, and switch to it."""
    handles = driver.window_handles
    keep = handles[0]
    for handle in handles[1:]:
        driver.switch_to.window(handle)
        if (origin := origin_of(driver.current_url)) is not None:
            origins.add(origin)
        driver.close()
    driver.switch_to.window(keep)
    if (origin := origin_of(driver.current_url)) is not None:
        origins.add(origin)


def _has_cdp(driver: WebDriver) -> bool:
    executor: Any = driver.command_executor
    getter = getattr(executor, "get_command", None)
    return hasattr(driver, "execute_cdp_cmd") or (
        getter is not None and getter(CDP_COMMAND) is not None
    )


def focus_tab(driver: Any, handle: str) -> None:
    """Switch WebDriver to tab ``handle`` and bring it to the front, as a person who
    looks at a tab does: a background tab gets no animation frames, so pages that render
    in them (single-page apps) would never update there."""
    driver.switch_to.window(handle)
    bring = getattr(driver, "execute_cdp_cmd", None)
    if bring is None:
        return  # a remote browser without the protocol
    # A tab that has just opened may still be taking its place (its opener keeps the
    # front until then): ask until the page says it is visible, five seconds at most.
    deadline = time.monotonic() + 5.0
    while True:
        try:
            bring("Page.bringToFront", {})
            if driver.execute_script("return document.visibilityState") == "visible":
                return
        except Exception:  # a tab that cannot be shown stays as it is
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)


def browser_ports(driver: WebDriver) -> list[int]:
    """The WebDriver and DevTools ports between this test and its browser."""
    ports = []
    with contextlib.suppress(Exception):  # a browser without DevTools has no port to leave out
        address = driver.capabilities.get("goog:chromeOptions", {}).get("debuggerAddress", "")
        ports.append(int(str(address).rsplit(":", 1)[1]))
    service = getattr(driver, "service", None)
    with contextlib.suppress(Exception):  # a remote driver has no local service port
        ports.append(int(service.port))  # type: ignore[union-attr]
    return ports
