"""Chained selectors through WebDriver: to an element inside shadow roots and frames.

A selector may name the shadow hosts and frames on the way to its element, joined by
``" >> "``: ``"ng-app >> ng-search >> input[name=q]"``, ``"iframe#player >> button.play"``
(see ``deep.js``, which checks read them with inside the page). Actions find their element
through WebDriver, which reaches what a page script may not: closed shadow roots and
frames of another origin (Chromium runs those in a process of their own). The frames are
entered on the way (:meth:`Chain.find`); :meth:`Chain.leave` goes back to the page.
"""

from __future__ import annotations

import contextlib
import re
from typing import TYPE_CHECKING, Any

from .declared import adopt_here

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement

LINK = re.compile(r"\s+>>\s+")
"""What separates the links of a chain."""


def links(selector: str) -> list[str]:
    """The links of a (possibly chained) selector: hosts and frames, then the element's."""
    return LINK.split(selector)


def chained(selector: str) -> bool:
    """Whether ``selector`` names shadow hosts or frames on the way to its element."""
    return LINK.search(selector) is not None


class Chain:
    """Finds elements by chained selectors on one driver, entering frames as it goes."""

    def __init__(self, driver: WebDriver) -> None:
        self.driver = driver
        self.framed = False
        """Whether a frame was entered: the driver must go back to the page after use."""

    def leave(self) -> None:
        """Back to the page's top document, if a frame was entered."""
        if not self.framed:
            return
        from selenium.common.exceptions import NoSuchWindowException

        self.framed = False
        # the action may have closed its window: the next window is entered at its top
        with contextlib.suppress(NoSuchWindowException):
            self.driver.switch_to.default_content()

    def enter(self, path: str) -> bool:
        """Enter the frame ``path`` names (a chain whose last link is the frame), from the
        top document; False when it is not there."""
        found = self.find("css selector", path)  # enters the frames on the way
        if not found:
            return False
        self.driver.switch_to.frame(found[0])
        self.framed = True
        # its closed shadow roots (a frame of another site may have had no guard to hand
        # them over when it loaded: UC mode, a Grid without a relay)
        adopt_here(self.driver)
        return True

    def find(self, by: str, selector: str) -> list[WebElement]:
        """The elements ``selector`` names; a link that finds nothing raises
        ``NoSuchElementException`` naming it (callers retry until their timeout)."""
        from selenium.common.exceptions import NoSuchElementException, NoSuchShadowRootException

        self.leave()
        parts = links(selector)
        contexts: list[Any] = [self.driver]
        for number, link in enumerate(parts[:-1], 1):
            where = f"link {number} ({link!r}) of {selector!r}"
            hosts = [e for c in contexts for e in c.find_elements("css selector", link)]
            if not hosts:
                raise NoSuchElementException(f"{where} is not on the page")
            frames = [h for h in hosts if h.tag_name.lower() in ("iframe", "frame")]
            if frames:
                self.driver.switch_to.frame(frames[0])
                self.framed = True
                contexts = [self.driver]
                continue
            roots = []
            for host in hosts:
                try:
                    roots.append(host.shadow_root)
                except NoSuchShadowRootException:
                    continue  # a host of the same selector without a root
            if not roots:
                raise NoSuchElementException(
                    f"{where} is neither a frame nor a shadow host (it has no shadow root)"
                )
            contexts = roots
        last = parts[-1]
        if by == "xpath" and contexts[0] is not self.driver:
            raise NoSuchElementException(
                f"XPath cannot reach inside a shadow root ({selector!r}): give the last "
                "link as a CSS selector"
            )
        return [e for c in contexts for e in c.find_elements(by, last)]
