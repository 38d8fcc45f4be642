"""Actions that find what to act on by what a person reads on it, or by a list of
selectors to try: NetGent's ``click_first_text``, ``click_accessible_name``,
``wait_for_text``, ``wait_for_element``, ``click_first``, ``set_env_value``,
``click_text_env`` and ``play_video``.

Text is matched whole, as NetGent's XPath ``normalize-space(.) = 'text'`` does, in the
page and its shadow roots (``labels.js``). Where NetGent tries a list of texts one after
the other, each for its full timeout, these look for all of them at once and take the
first listed that is there: the same choice, without waiting out the ones a page does
not show.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from .page import script
from .waits import ActionFailed, Waits, flag, seconds

if TYPE_CHECKING:
    from selenium.webdriver.remote.webelement import WebElement

DEFAULT_TIMEOUT = 10.0
"""NetGent's timeout of ``click_first_text``, ``click_accessible_name`` and ``play_video``."""
WAIT_TIMEOUT = 30.0
"""NetGent's timeout of ``wait_for_element`` and ``wait_for_text``."""
NAME_SWEEP_S = 1.0
"""How often ``click_accessible_name`` asks the browser for every button's computed name
when no button's name, as the page script computes it, is one of those wanted."""


@cache
def _source() -> str:
    return script("deep.js") + script("labels.js")


def texts(value: Any) -> list[str]:
    """One text or a list of them (NetGent gives both), as a list of non-empty texts."""
    items = value if isinstance(value, list) else [value]
    return [str(v).strip() for v in items if v is not None and str(v).strip()]


class LabelActions(Waits):
    """The actions that find their element by its text, its accessible name or one of
    several selectors, and the waits for a text or an element."""

    env: Mapping[str, str]
    """The environment values the run may type or look for (``set_env_value``,
    ``click_text_env``), read before it started and kept out of every report."""

    def _pick(self, params: dict[str, Any]) -> WebElement | None:
        raise NotImplementedError  # the element lookup of Actions

    def _labels(self, kind: str, wanted: list[str]) -> Any:
        return self.driver.execute_script(_source(), kind, wanted)

    def _press(self, element: WebElement) -> None:
        """Click ``element``; where WebDriver's click is refused (covered, not
        interactable), click it as the page's own script would (NetGent does too)."""
        from selenium.common.exceptions import (
            ElementClickInterceptedException,
            ElementNotInteractableException,
        )

        try:
            element.click()
        except (ElementClickInterceptedException, ElementNotInteractableException):
            self.driver.execute_script("arguments[0].click();", element)

    def _timeout(self, params: dict[str, Any], action: str, default: float) -> float:
        given = params.get("timeout")
        return default if given is None else seconds(given, action, "timeout")

    def click_first_text(self, params: dict[str, Any]) -> None:
        """Click the button (or ``role=button``) whose whole text is one of ``texts``,
        the first listed that is shown and enabled within ``timeout`` (default 10 s)."""
        wanted = _wanted(params, "texts", "click_first_text")

        def attempt() -> bool:
            hit = self._labels("buttons", wanted)
            if not hit:
                return False
            self._press(hit[1])
            return True

        timeout = self._timeout(params, "click_first_text", DEFAULT_TIMEOUT)
        self._until(f"click_first_text: no button reads {_listed(wanted)}", attempt, timeout)

    def click_accessible_name(self, params: dict[str, Any]) -> None:
        """Click the first shown, enabled button (or ``role=button``) whose accessible
        name (as the browser computes it: ``aria-label``, ``aria-labelledby``, its text,
        an image's ``alt``, ``title``) is one of ``names``, within ``timeout`` (10 s)."""
        wanted = {" ".join(n.split()) for n in _wanted(params, "names", "click_accessible_name")}
        swept = [0.0]

        def attempt() -> bool:
            buttons = self._labels("named", [])
            likely = [el for name, el in buttons if name in wanted]
            if not likely and time.monotonic() - swept[0] >= NAME_SWEEP_S:
                # a name the page script does not compute (CSS generated text, a
                # role's own rules): ask the browser for every button's, now and then
                swept[0] = time.monotonic()
                likely = [el for _, el in buttons[:100]]
            for element in likely:
                if " ".join(element.accessible_name.split()) in wanted:
                    self._press(element)
                    return True
            return False

        timeout = self._timeout(params, "click_accessible_name", DEFAULT_TIMEOUT)
        self._until(
            f"click_accessible_name: no button is named {_listed(sorted(wanted))}",
            attempt,
            timeout,
        )

    def wait_for_text(self, params: dict[str, Any]) -> None:
        """Wait until an element whose whole text is ``text`` is shown (with ``visible:
        false``, until none is), within ``timeout`` (default 30 s)."""
        (text,) = _wanted({"text": params.get("text")}, "text", "wait_for_text")[:1]
        visible = flag(params.get("visible"), default=True)

        def attempt() -> bool:
            return bool(self._labels("shown", [text])) == visible

        timeout = self._timeout(params, "wait_for_text", WAIT_TIMEOUT)
        said = f"no text {text!r} is shown" if visible else f"the text {text!r} is still shown"
        self._until(f"wait_for_text: {said}", attempt, timeout)

    def wait_for_element(self, params: dict[str, Any]) -> None:
        """Wait until an element matching CSS ``selector`` is shown (with ``visible:
        false``, until none is), within ``timeout`` (default 30 s)."""
        selector = str(params["selector"])
        visible = flag(params.get("visible"), default=True)
        target = {"by": "css selector", "selector": selector}

        def attempt() -> bool:
            element = self._pick(target)
            return (element is not None and element.is_displayed()) == visible

        timeout = self._timeout(params, "wait_for_element", WAIT_TIMEOUT)
        said = "is not shown" if visible else "is still shown"
        self._until(f"wait_for_element: {selector!r} {said}", attempt, timeout)

    def click_first(self, params: dict[str, Any]) -> None:
        """Click the element of the first of ``selectors`` (CSS) that matches a shown,
        enabled element, within ``timeout`` (default: the action timeout)."""
        selectors = _wanted(params, "selectors", "click_first")

        def attempt() -> bool:
            for selector in selectors:
                element = self._pick({"by": "css selector", "selector": selector})
                if element is not None and element.is_displayed() and element.is_enabled():
                    self._press(element)
                    return True
            return False

        timeout = self._timeout(params, "click_first", self.timeout)
        self._until(f"click_first: none of {_listed(selectors)} is shown", attempt, timeout)

    def _env_value(self, params: dict[str, Any], action: str) -> str:
        name = str(params["env_var"])
        value = self.env.get(name)
        if not value:
            raise ActionFailed(
                f"{action}: the environment variable {name} is not set: export it before "
                "the run (its value is used by the browser and never stored or shown)"
            )
        return value

    def set_env_value(self, params: dict[str, Any]) -> None:
        """Type the value of the environment variable ``env_var`` into the field of the
        first of ``selectors`` (CSS) that is shown, cleared first, within ``timeout``."""
        __tracebackhide__ = True  # the value may be a password
        value = self._env_value(params, "set_env_value")
        selectors = _wanted(params, "selectors", "set_env_value")

        def attempt() -> bool:
            __tracebackhide__ = True
            for selector in selectors:
                element = self._pick({"by": "css selector", "selector": selector})
                if element is None or not element.is_displayed() or not element.is_enabled():
                    continue
                if element.get_attribute("readonly") is not None:
                    continue  # shown but not for typing: the next selector may be
                element.clear()
                element.send_keys(value)
                return True
            return False

        timeout = self._timeout(params, "set_env_value", self.timeout)
        self._until(f"set_env_value: none of {_listed(selectors)} is shown", attempt, timeout)

    def click_text_env(self, params: dict[str, Any]) -> None:
        """Click the element whose whole text is the value of the environment variable
        ``env_var`` (a profile's name), within ``timeout``."""
        __tracebackhide__ = True
        value = self._env_value(params, "click_text_env")

        def attempt() -> bool:
            __tracebackhide__ = True  # the value is the environment's
            hit = self._labels("text", [value])
            if not hit:
                return False
            self._press(hit[1])
            return True

        timeout = self._timeout(params, "click_text_env", self.timeout)
        name = params["env_var"]
        self._until(f"click_text_env: no element reads the value of ${name}", attempt, timeout)

    def play_video(self, params: dict[str, Any]) -> None:
        """Start the video of ``selector`` (default ``video``) and wait, within ``timeout``
        (10 s), until it plays; a browser that refuses sound without a click is given
        the video muted, as players do."""
        selector = str(params.get("selector") or "video")
        target = {"by": "css selector", "selector": selector}

        def attempt() -> bool:
            element = self._pick(target)
            if element is None:
                return False
            return bool(self.driver.execute_async_script(_PLAY_JS, element))

        timeout = self._timeout(params, "play_video", DEFAULT_TIMEOUT)
        self._until(f"play_video: {selector!r} does not play", attempt, timeout)


_PLAY_JS = """
const [video, done] = arguments;
const playing = () => !video.paused && video.readyState >= 2;
if (playing()) { done(true); return; }
const settle = () => setTimeout(() => done(playing()), 250);
setTimeout(() => done(playing()), 1000);  // a play() still pending (stalled media): try again
let attempt;
try { attempt = video.play(); } catch (e) { done(false); return; }
Promise.resolve(attempt).then(settle, (error) => {
  if (error && error.name === "NotAllowedError" && !video.muted) {
    video.muted = true;
    video.play().then(settle, () => done(false));
  } else {
    done(false);
  }
});
"""


def _wanted(params: dict[str, Any], name: str, action: str) -> list[str]:
    wanted = texts(params.get(name))
    if not wanted:
        raise ActionFailed(f"{action}: {name} is empty: give a text or a list of them")
    return wanted


def _listed(items: list[str]) -> str:
    return " or ".join(repr(i) for i in items)
