"""Where the browser is: navigation, tabs and the addresses a run keeps.

NetGent's newer workflows name their tabs (``remember_tab`` then ``switch_tab`` by
``name``) and keep an address for later (``store_current_url``, then
``open_stored_url`` opens it in a new tab): a meeting's link, opened again as a second
participant. What a run remembers lives in one :class:`TabMemory` for the whole run.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .session import PAGE_LOAD_S, browser_gone, focus_tab
from .waits import ActionFailed, Waits, flag, short


@dataclass
class TabMemory:
    """What one run remembers between its actions: tabs by name (window handles) and
    addresses by name."""

    tabs: dict[str, str] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)

    def url(self, name: str, action: str) -> str:
        """The address stored as ``name``, else an error saying how to store it."""
        if name not in self.urls:
            stored = ", ".join(repr(n) for n in self.urls) or "none"
            raise ActionFailed(
                f"{action}: no address stored as {name!r} (stored: {stored}); a "
                f"store_current_url action with name {name!r} must run before it"
            )
        return self.urls[name]


def without_query(url: str) -> str:
    """``url`` without its query and fragment (NetGent's ``strip_query``)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class TabActions(Waits):
    """The actions that move the browser: ``navigate``, ``go_back``, ``switch_tab``,
    ``remember_tab``, ``store_current_url`` and ``open_stored_url``."""

    memory: TabMemory

    def navigate(self, params: dict[str, Any]) -> None:
        """Open ``url`` (checked against the allowed hosts first)."""
        url = str(params["url"])
        self.check_url(url)
        from selenium.common.exceptions import TimeoutException, WebDriverException

        limit, why = PAGE_LOAD_S, "the page-load limit"
        if self.deadline is not None and self.deadline - time.monotonic() < limit:
            limit = max(self.deadline - time.monotonic(), 0.5)
            why = "what was left of the workflow's timeout; raise 'timeout' if it needs longer"
            self.driver.set_page_load_timeout(limit)
        try:
            self.driver.get(url)
        except TimeoutException:
            raise ActionFailed(
                f"navigate: {url} did not finish loading within {limit:.3g}s ({why})",
                unloaded=True,
            ) from None
        except WebDriverException as exc:
            if browser_gone(exc):
                raise  # a dead browser, reported as such by the engine
            raise ActionFailed(f"navigate: cannot open {url}: {short(exc)}") from None
        finally:
            if limit != PAGE_LOAD_S:
                with contextlib.suppress(WebDriverException):
                    self.driver.set_page_load_timeout(PAGE_LOAD_S)

    def go_to_url(self, params: dict[str, Any]) -> None:
        """NetGent's newer engine's navigation: open ``url``, in a new tab with
        ``new_tab: true``."""
        if flag(params.get("new_tab", False)):
            self.check_url(str(params["url"]))  # before a tab opens for it
            self.driver.switch_to.new_window("tab")
            self.opened_tab()
        self.navigate(params)

    def go_back(self, params: dict[str, Any]) -> None:
        """Go back one page in the tab's history."""
        self.driver.back()

    def switch_tab(self, params: dict[str, Any]) -> None:
        """Switch to the tab remembered as ``name`` (NetGent's ``remember_tab``), or to tab
        ``index`` (default -1, the newest), or the one whose URL or title contains ``url``
        / ``title``; waits for a new tab to open."""
        if "name" in params:
            focus_tab(self.driver, self._remembered(str(params["name"])))
            return
        before = self.driver.current_window_handle

        def attempt() -> str | None:
            handles = self.driver.window_handles
            if "url" in params or "title" in params:
                for handle in handles:
                    self.driver.switch_to.window(handle)
                    if (
                        str(params.get("url", "")) in self.driver.current_url
                        and str(params.get("title", "")) in self.driver.title
                    ):
                        return handle
                self.driver.switch_to.window(before)
                return None
            index = int(params.get("index", -1))
            if index == -1 and len(handles) < 2:
                return None  # the new tab is not open yet
            if not -len(handles) <= index < len(handles):
                return None
            return handles[index]

        handle = self._until(f"switch_tab: no tab matches {params}", attempt)
        focus_tab(self.driver, handle)

    def _remembered(self, name: str) -> str:
        handle = self.memory.tabs.get(name)
        if handle is None:
            known = ", ".join(repr(n) for n in self.memory.tabs) or "none"
            raise ActionFailed(
                f"switch_tab: no tab remembered as {name!r} (remembered: {known}); a "
                f"remember_tab action with name {name!r} must run in that tab before"
            )
        if handle not in self.driver.window_handles:
            raise ActionFailed(f"switch_tab: the tab remembered as {name!r} was closed")
        return handle

    def remember_tab(self, params: dict[str, Any]) -> None:
        """Remember the current tab as ``name``, for ``switch_tab`` with that ``name``."""
        self.memory.tabs[str(params["name"])] = self.driver.current_window_handle

    def store_current_url(self, params: dict[str, Any]) -> None:
        """Keep the current page's address as ``name`` (without its query and fragment
        with ``strip_query: true``), for ``open_stored_url``."""
        url = str(self.driver.current_url)
        if flag(params.get("strip_query", False)):
            url = without_query(url)
        self.memory.urls[str(params["name"])] = url

    def open_stored_url(self, params: dict[str, Any]) -> None:
        """Open the address stored as ``name``, followed by ``suffix``, in a new tab
        (remembered as ``tab_name`` if given), which becomes the current one."""
        url = self.memory.url(str(params["name"]), "open_stored_url") + str(
            params.get("suffix") or ""
        )
        self.check_url(url)  # before a tab opens for it
        self.driver.switch_to.new_window("tab")
        if params.get("tab_name"):
            self.memory.tabs[str(params["tab_name"])] = self.driver.current_window_handle
        self.opened_tab()
        self.navigate({"url": url})

    def opened_tab(self) -> None:
        """A tab this run opened is current: what follows every tab is set up in it."""
