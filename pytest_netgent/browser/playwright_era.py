"""The actions of NetGent's Playwright-era engine, with its meaning: ``click_element``,
``input_text``, ``send_keys``, ``scroll`` by ``num_pages``, ``scroll_to_text`` and
``select_dropdown_option`` (their selectors are read as a ``by`` and a ``selector`` when
the file loads: ``workflow/netgent_formats.py``).

NetGent acts on the first element its selector matches, and falls back as Playwright
lets it: a click that the page refuses is made by the element's own ``click()``, then by
the mouse at its middle, and a click that opens a tab (a popup) goes on in that tab; text
is typed into the emptied field, else as keys once it is clicked and has the focus (never
into whatever else took it), else set as the field's value. Where
NetGent sleeps five seconds between two actions for the page to catch up, these wait for
their element (up to the action timeout), and for nothing else.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from .session import driver_errors, focus_tab
from .waits import ActionFailed, InvalidStep, Waits, seconds

if TYPE_CHECKING:
    from selenium.webdriver.remote.webelement import WebElement

POPUP_S = 2.0
"""How long a click on a link that opens another tab waits for it (its ``target``)."""

CLICK_TIMEOUT_MS = 2_000
"""NetGent's ``timeout_ms``: how long a click waits for its element to take the click
before the fallbacks."""


class PlaywrightActions(Waits):
    """NetGent's Playwright-era actions on the driver of :class:`.actions.Actions`."""

    def _element(self, params: dict[str, Any], action: str) -> WebElement:
        raise NotImplementedError  # the element lookup of Actions

    def press_key(self, params: dict[str, Any]) -> None:
        raise NotImplementedError  # the key press of Actions

    def select(self, params: dict[str, Any]) -> None:
        raise NotImplementedError  # the choice of an option of Actions

    def opened_tab(self) -> None:
        raise NotImplementedError  # a tab this run opened is current (Actions)

    def _first(self, params: dict[str, Any], action: str) -> WebElement:
        """The first element (in document order) the selector matches, waited for."""
        target: dict[str, Any] = {k: params[k] for k in ("by", "selector") if k in params}
        return self._element({**target, "index": 0}, action)

    def click_element(self, params: dict[str, Any]) -> None:
        """Click the first element the selector matches: as a person does while it takes
        the click within ``timeout_ms``, else by its ``click()``, else with the mouse at
        its middle; a tab the click opened becomes the current one."""
        from selenium.common.exceptions import (
            ElementClickInterceptedException,
            ElementNotInteractableException,
            StaleElementReferenceException,
        )

        refused = (
            ElementClickInterceptedException,
            ElementNotInteractableException,
            StaleElementReferenceException,
        )
        before = set(self.driver.window_handles)
        element = self._first(params, "click_element")
        opens = bool(self.driver.execute_script(_OPENS_JS, element))
        budget = seconds(
            params.get("timeout_ms", CLICK_TIMEOUT_MS), "click_element", "timeout_ms", unit="ms"
        )
        end = time.monotonic() + budget / 1000
        while True:
            try:
                element.click()
                break
            except refused:
                if time.monotonic() >= end:
                    self._click_anyway(element, str(params["selector"]))
                    break
                time.sleep(0.05)
                if not _attached(element):
                    element = self._first(params, "click_element")
        self._follow_popup(before, opens)

    def _click_anyway(self, element: WebElement, selector: str) -> None:
        """NetGent's fallbacks for a click the page refused: the element's own
        ``click()``, then the mouse at its middle."""
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.common.action_chains import ActionChains

        try:
            self.driver.execute_script("arguments[0].click();", element)
            return
        except WebDriverException:
            pass  # the mouse is tried next
        try:
            ActionChains(self.driver).move_to_element(element).click().perform()
        except WebDriverException as exc:
            raise ActionFailed(f"click_element: {selector!r} took no click: {exc.msg}") from None

    def _follow_popup(self, before: set[str], opens: bool) -> None:
        """Go on in the tab a click opened, as NetGent's engine follows a popup; one the
        clicked link opens (its ``target``) is waited for up to :data:`POPUP_S`."""
        end = time.monotonic() + (POPUP_S if opens else 0.0)
        with contextlib.suppress(*driver_errors()):  # a closed window: the engine sees it
            while True:
                opened = [h for h in self.driver.window_handles if h not in before]
                if opened:
                    focus_tab(self.driver, opened[-1])
                    self.opened_tab()
                    return
                if time.monotonic() >= end:
                    return
                time.sleep(0.05)

    def input_text(self, params: dict[str, Any]) -> None:
        """Type ``text`` into the first element the selector matches: emptied, clicked,
        then typed as keys; else typed into it; else set as its value (with the input and
        change events a page listens for)."""
        __tracebackhide__ = True  # ``text`` may be a secret's value
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.common.action_chains import ActionChains

        text = str(params["text"])
        element = self._first(params, "input_text")
        with contextlib.suppress(WebDriverException):
            self.driver.execute_script(_EMPTY_JS, element)
            element.send_keys(text)  # into the element itself, wherever the focus was
            return
        with contextlib.suppress(WebDriverException):
            element.click()  # a field WebDriver cannot type into: typed as keys once clicked
            if self.driver.execute_script(_FOCUSED_JS, element):
                ActionChains(self.driver).send_keys(text).perform()
                return
        try:
            self.driver.execute_script(_SET_JS, element, text)
        except WebDriverException:
            raise ActionFailed(
                f"input_text: {params['selector']!r} took no text {self._where()}"
            ) from None

    def send_keys(self, params: dict[str, Any]) -> None:
        """Press ``keys`` (Playwright's names: "Enter", "Control+A"); keys that name no
        key are pressed one character after the other, as NetGent does."""
        keys = str(params["keys"])
        try:
            self.press_key({"key": keys})
        except InvalidStep:
            if len(keys) < 2:
                raise
            for char in keys:
                self.press_key({"key": char})

    def select_dropdown_option(self, params: dict[str, Any]) -> None:
        """Choose the option ``text`` of the element the selector names: a ``<select>``'s
        option by its label, else by its value; a custom dropdown is opened and its option
        (an option, a menu item, a button of that name) chosen."""
        target: dict[str, Any] = {k: params[k] for k in ("by", "selector") if k in params}
        try:
            self.select({**target, "text": params["text"]})
        except ActionFailed:
            element = self._first(params, "select_dropdown_option")
            if element.tag_name.lower() != "select":
                raise
            self.select({**target, "value": params["text"]})


def _attached(element: WebElement) -> bool:
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        element.is_enabled()
    except StaleElementReferenceException:
        return False
    return True


_OPENS_JS = """
const link = arguments[0].closest('a[target], area[target], form[target]');
return Boolean(link && !['', '_self', '_parent', '_top'].includes(link.target));
"""

_EMPTY_JS = """
const el = arguments[0];
if ('value' in el) el.value = '';
if (el.isContentEditable) el.textContent = '';
"""

_FOCUSED_JS = """
const el = arguments[0];
let active = document.activeElement;
while (active && active.shadowRoot && active.shadowRoot.activeElement) {
  active = active.shadowRoot.activeElement;
}
return active === el || el.contains(active) || (active && active.contains(el));
"""

_SET_JS = """
const [el, value] = arguments;
if (el.isContentEditable) el.textContent = value;
else if ('value' in el) el.value = value;
else el.textContent = value;
el.dispatchEvent(new Event('input', {bubbles: true}));
el.dispatchEvent(new Event('change', {bubbles: true}));
"""
