"""The action registry: every browser action a state may perform.

Each action waits explicitly for what it needs (an element to exist and accept the
input, a tab to open) up to the action timeout, polling at a short interval with no
fixed delay, and fails with an :class:`ActionFailed` that says what was not found where
(:mod:`.waits`). Parameters arrive with placeholders already substituted. The actions on
tabs and addresses are in :mod:`.tabs`, those that find their element by its text or
name in :mod:`.labels`, the WebRTC ones in :mod:`.webrtc`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..system import interrupts
from .chain import Chain, chained
from .guard import FramesOnDemand
from .keyboard import key_chord
from .labels import LabelActions
from .measuring import MeasureActions
from .playwright_era import PlaywrightActions
from .qoe import VideoSampler
from .scrolling import ScrollActions, located
from .tabs import TabActions, TabMemory
from .waits import ActionFailed, InvalidStep, Waits, seconds
from .webrtc import FrameScripts, WebrtcActions, WebrtcMeter
from .widgets import WidgetActions, role_words

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver
    from selenium.webdriver.remote.webelement import WebElement


__all__ = ["MOVES", "ActionFailed", "Actions", "InvalidStep", "RunTools"]

MOVES = frozenset(
    {"navigate", "go_to_url", "go_back", "switch_tab", "open_stored_url", "click"}
    | {"click_first"}
    | {"click_first_text", "click_accessible_name", "click_text_env", "click_element"}
)
"""Actions that may take the browser to another page: after them the engine looks at
the address (the allowed hosts, the origins a run visited)."""


@dataclass
class RunTools:
    """What the actions of one run share: its video sampler and WebRTC meter, what it
    remembers (named tabs, stored addresses) and the environment values its actions
    may use (read before the run, kept out of every report)."""

    sampler: VideoSampler
    webrtc: WebrtcMeter
    memory: TabMemory = field(default_factory=TabMemory)
    env: Mapping[str, str] = field(default_factory=dict, repr=False)  # values are secrets
    output: Path = field(default_factory=Path.cwd)
    """The run's output folder (measurement steps write there)."""
    redact: Callable[[str], str] = str
    measurements: list[dict[str, Any]] = field(default_factory=list)
    """The parsed results of the run's measurement steps (``ping``, ``iperf``...)."""

    @classmethod
    def start(
        cls,
        driver: WebDriver,
        redact: Callable[[str], str],
        output: Path,
        env: Mapping[str, str],
        frames: FrameScripts | None = None,
    ) -> RunTools:
        """The tools of a run starting now, writing their files in ``output``; ``frames``
        runs the WebRTC tracker in frames of other sites (the browser's guard; without
        one, a connection opened only if the run tracks WebRTC)."""
        now = time.time()
        webrtc = WebrtcMeter(driver, now, redact, output)
        webrtc.frames = frames if frames is not None else FramesOnDemand(driver)
        sampler = VideoSampler(driver, now, redact, output)
        return cls(sampler, webrtc, env=env, output=output, redact=redact)


class Actions(
    TabActions,
    LabelActions,
    WebrtcActions,
    WidgetActions,
    PlaywrightActions,
    ScrollActions,
    MeasureActions,
    Waits,
):
    """Executes actions on one driver; ``timeout`` bounds every explicit wait; ``tools``
    are the run's (without them, a lone action: no sampling, nothing remembered)."""

    def __init__(
        self,
        driver: WebDriver,
        timeout: float,
        check_url: Callable[[str], None],
        deadline: float | None = None,
        tools: RunTools | None = None,
    ) -> None:
        super().__init__(driver, timeout, check_url, deadline)
        self.sampler = tools.sampler if tools else None
        self.webrtc = tools.webrtc if tools else None
        self.memory = tools.memory if tools else TabMemory()
        self.env: Mapping[str, str] = tools.env if tools else {}
        self.output = tools.output if tools else Path.cwd()
        self.redact = tools.redact if tools else str
        self.measurements = tools.measurements if tools else []
        self._chain = Chain(driver)
        self._registry: dict[str, Callable[[dict[str, Any]], None]] = {
            "navigate": self.navigate,
            "click": self.click,
            "type": self.type,
            "press_key": self.press_key,
            "scroll": self.scroll,
            "scroll_to": self.scroll_to,
            "hover": self.hover,
            "move": self.hover,
            "select": self.select,
            "set_value": self.set_value,
            "wait": self.wait,
            "switch_tab": self.switch_tab,
            "go_back": self.go_back,
            "start_video_sampling": self.start_video_sampling,
            "stop_video_sampling": self.stop_video_sampling,
            "start_stats_logging": self.start_stats_logging,
            "stop_stats_logging": self.stop_stats_logging,
            "terminate": self.terminate,
            "remember_tab": self.remember_tab,
            "store_current_url": self.store_current_url,
            "open_stored_url": self.open_stored_url,
            "click_first_text": self.click_first_text,
            "click_accessible_name": self.click_accessible_name,
            "wait_for_element": self.wait_for_element,
            "wait_for_text": self.wait_for_text,
            "start_webrtc_tracking": self.start_webrtc_tracking,
            "collect_webrtc_metrics": self.collect_webrtc_metrics,
            "set_env_value": self.set_env_value,
            "type_env": self.type_env,
            "click_first": self.click_first,
            "click_text_env": self.click_text_env,
            "play_video": self.play_video,
            "go_to_url": self.go_to_url,
            "click_element": self.click_element,
            "input_text": self.input_text,
            "send_keys": self.send_keys,
            "scroll_to_text": self.scroll_to_text,
            "select_dropdown_option": self.select_dropdown_option,
            "ping": self.ping,
            "iperf": self.iperf,
            "ndt": self.ndt,
            "wget": self.wget,
        }

    def run(self, kind: str, params: dict[str, Any]) -> None:
        """Carry out one action of type ``kind``."""
        __tracebackhide__ = True  # ``params`` holds the filled values, secrets too
        try:
            handler = self._registry[kind]
        except KeyError:
            raise ActionFailed(f"unknown action type {kind!r}") from None
        from selenium.common.exceptions import InvalidSelectorException, WebDriverException

        from .session import browser_gone

        try:
            handler(params)
        except InvalidSelectorException as exc:
            raise InvalidStep(
                f"{kind}: the browser cannot parse its selector: {_why(exc)}"
            ) from None
        except WebDriverException as exc:  # what no wait mends: the page refused the step
            if browser_gone(exc):
                raise
            raise ActionFailed(f"{kind}: {_why(exc)}") from None
        finally:
            self._chain.leave()  # checks run in the page's top document

    # ------------------------------------------------------------------ helpers

    def _pick(self, params: dict[str, Any]) -> WebElement | None:
        """The element ``role``/``name`` or ``by``/``selector`` names now (by role and
        name first, its selector kept as the fallback): item ``index`` of the matches if
        given (a list item, "the first result"), else the only or first visible one."""
        found = self._by_role(params) if "role" in params else []
        if (not found or len(found) > 1) and "selector" in params:
            by, selector = params.get("by", "css selector"), str(params["selector"])
            if chained(selector):
                located = self._chain.find(by, selector)
            else:
                located = self.driver.find_elements(by, selector)
            # several of that role and name: the one its selector names, if it is one
            found = [e for e in found if e in located] or located or found
        if "index" in params:
            index = int(params["index"])
            return found[index] if -len(found) <= index < len(found) else None
        if len(found) <= 1:
            return found[0] if found else None
        return next((e for e in found if e.is_displayed()), found[0])

    def _element(self, params: dict[str, Any], action: str) -> WebElement:
        """The element of :meth:`_pick`, waited for."""

        def find() -> WebElement | None:
            return self._pick(params)

        found: WebElement = self._until(f"{action}: {_missing(params)}", find)
        return found

    # ------------------------------------------------------------------ actions

    def click(self, params: dict[str, Any]) -> None:
        """Click the element (at ``percentage`` of its width, default the middle); fall
        back to NetGent's ``x``/``y`` screen coordinates if given."""
        if not located(params):
            self._click_at(params["x"], params["y"])
            return
        if "x" in params and "y" in params:
            try:
                self._click_element(params)
            except ActionFailed:
                self._click_at(params["x"], params["y"])
            return
        self._click_element(params)

    def _click_element(self, params: dict[str, Any]) -> None:
        percentage = _fraction(params, "click")

        from selenium.common.exceptions import (
            ElementClickInterceptedException,
            ElementNotInteractableException,
        )

        def attempt() -> bool:
            element = self._pick(params)
            if element is None:
                return False
            try:
                if percentage is None or percentage == 0.5:
                    element.click()  # the middle: WebDriver's own click
                else:
                    self._pointer_to(element, percentage).click().perform()
            except (ElementClickInterceptedException, ElementNotInteractableException) as exc:
                if (label := self._label_of(element)) is not None:
                    # a box or radio drawn by its label (the input itself invisible, or
                    # under the label's drawing): a person clicks the label, which the
                    # browser passes on to its control
                    label.click()
                    return True
                if isinstance(exc, ElementNotInteractableException):
                    raise
                if self._lands_inside(element):
                    # what "intercepts" is the element's own content, slotted into its
                    # shadow root (a design-system button's label): the click lands on
                    # the element as a person's would, so click at that point
                    self._pointer_to(element, percentage or 0.5).click().perform()
                    return True
                # As a person would: move the pointer onto the element, which shows
                # controls that appear on hover (a player's control bar), then try again.
                with contextlib.suppress(
                    Exception
                ):  # the hover only helps; the click's own error is raised
                    self._pointer_to(element, 0.5).perform()
                raise
            return True

        self._until(f"click: {_missing(params).replace('visible', 'clickable')}", attempt)

    def _label_of(self, element: WebElement) -> WebElement | None:
        """The drawn label of a checkbox or radio ``element``, if it has one."""
        label: WebElement | None = self.driver.execute_script(
            "const el = arguments[0];"
            "if (el.localName !== 'input' || !['checkbox', 'radio'].includes(el.type)) return null;"
            "return Array.from(el.labels || []).find((l) => l.getClientRects().length) || null;",
            element,
        )
        return label

    def _pointer_to(self, element: WebElement, percentage: float, *, moved: bool = False) -> Any:
        """An action chain with the pointer over ``element`` at ``percentage`` of its
        width (NetGent's ``percentage``), vertically centred; with ``moved``, by way of a
        point beside it, so that a pointer already there moves too (players show their
        controls on a mouse move)."""
        from selenium.webdriver.common.action_chains import ActionChains

        width = element.size.get("width", 0) or 0
        offset = int(width * (percentage - 0.5))
        chain = ActionChains(self.driver)
        if moved and width > 4:
            chain.move_to_element_with_offset(element, offset + (2 if offset < 0 else -2), 0)
        return chain.move_to_element_with_offset(element, offset, 0)

    def _lands_inside(self, element: WebElement) -> bool:
        """Whether a click at ``element``'s middle reaches it: the topmost element there
        is inside it in the rendered (flat) tree, slotted content included, which
        WebDriver's own check, reading the DOM tree, calls another element."""
        return bool(
            self.driver.execute_script(
                "const el = arguments[0], r = el.getBoundingClientRect();"
                "const x = r.left + r.width / 2, y = r.top + r.height / 2;"
                "let n = document.elementFromPoint(x, y);"
                "while (n && n.shadowRoot) { const i = n.shadowRoot.elementFromPoint(x, y);"
                "  if (!i || i === n) break; n = i; }"
                "for (; n; n = n.assignedSlot || n.parentNode || n.host) if (n === el) return true;"
                "return false;",
                element,
            )
        )

    def _viewport_point(self, x: Any, y: Any) -> tuple[int, int]:
        """NetGent's ``x``/``y`` are screen coordinates (window position plus browser
        frame plus the point in the page): the point in the viewport, kept inside it."""
        try:
            sx, sy = float(x), float(y)
        except (TypeError, ValueError):
            raise ActionFailed(f"x and y must be numbers, got {x!r}, {y!r}") from None
        left, top, width, height = self.driver.execute_script(
            "return [window.screenX + window.outerWidth - window.innerWidth,"
            " window.screenY + window.outerHeight - window.innerHeight,"
            " window.innerWidth, window.innerHeight];"
        )
        vx = min(max(int(sx - left), 0), max(int(width) - 1, 0))
        vy = min(max(int(sy - top), 0), max(int(height) - 1, 0))
        return vx, vy

    def _pointer_at(self, x: Any, y: Any) -> Any:
        from selenium.webdriver.common.actions.action_builder import ActionBuilder

        vx, vy = self._viewport_point(x, y)
        builder = ActionBuilder(self.driver)
        builder.pointer_action.move_to_location(vx, vy)  # type: ignore[no-untyped-call]
        return builder

    def _click_at(self, x: Any, y: Any) -> None:
        builder = self._pointer_at(x, y)
        builder.pointer_action.click()
        builder.perform()

    def type_env(self, params: dict[str, Any]) -> None:
        """Type the value of the environment variable ``env_var`` into the element, as
        ``type`` types its text (NetGent's web agent writes it for credentials: the value
        is read before the run and kept out of the cache and every report)."""
        __tracebackhide__ = True  # the value may be a password
        value = self._env_value(params, "type_env")
        self.type({**{k: v for k, v in params.items() if k != "env_var"}, "text": value})

    def type(self, params: dict[str, Any]) -> None:
        """Type ``text`` into the element (cleared first unless ``clear: false``)."""
        __tracebackhide__ = True  # ``text`` may be a secret's value
        text = str(params["text"])
        if not located(params):
            from selenium.webdriver.common.action_chains import ActionChains
            from selenium.webdriver.common.keys import Keys

            chain = ActionChains(self.driver)
            if "x" in params and "y" in params:  # NetGent: click there, replace its text
                self._click_at(params["x"], params["y"])
                if params.get("clear", True):
                    chain.key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL)
                    chain.send_keys(Keys.DELETE)
            chain.send_keys(text).perform()
            return
        selector = params.get("selector", "")
        clear = params.get("clear", True)

        def attempt() -> bool:
            __tracebackhide__ = True
            element = self._pick(params)
            if element is None:
                return False
            if clear:
                element.clear()
            try:
                element.send_keys(text)
            except ElementNotInteractableException:
                if not chained(str(selector)):
                    raise
                # In a closed shadow root the page's active element is the host, so
                # ChromeDriver cannot tell the field has focus: a person clicks it and types.
                element.click()
                ActionChains(self.driver).send_keys(text).perform()
            return True

        from selenium.common.exceptions import ElementNotInteractableException
        from selenium.webdriver.common.action_chains import ActionChains

        self._until(f"type: {_missing(params).replace('visible', 'editable')}", attempt)

    def press_key(self, params: dict[str, Any]) -> None:
        """Press ``key`` (a key or a chord such as "Shift+Enter") in the focused element,
        or in ``by``/``selector`` if given."""
        from selenium.common.exceptions import ElementNotInteractableException
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        try:
            modifiers, key = key_chord(str(params["key"]))
        except ValueError as exc:
            raise InvalidStep(str(exc)) from None
        if "selector" in params:
            element = self._element(params, "press_key")
            try:
                # an element's send_keys holds modifiers down until the NULL key
                element.send_keys("".join(modifiers) + key + Keys.NULL)
                return
            except ElementNotInteractableException:
                if not chained(str(params.get("selector", ""))):
                    raise
                element.click()  # in a closed shadow root: focus it as a person does
        chain = ActionChains(self.driver)
        for modifier in modifiers:
            chain.key_down(modifier)
        chain.send_keys(key)
        for modifier in reversed(modifiers):
            chain.key_up(modifier)
        chain.perform()

    def hover(self, params: dict[str, Any]) -> None:
        """Move the pointer over the element (at ``percentage`` of its width, default the
        middle), or to NetGent's ``x``/``y`` if the element is not found; NetGent calls it
        ``move``."""
        if not located(params):
            self._pointer_at(params["x"], params["y"]).perform()
            return
        percentage = _fraction(params, "hover")
        try:
            element = self._element(params, "hover")
        except ActionFailed:
            if "x" in params and "y" in params:
                self._pointer_at(params["x"], params["y"]).perform()
                return
            raise
        self._pointer_to(element, 0.5 if percentage is None else percentage, moved=True).perform()

    def wait(self, params: dict[str, Any]) -> None:
        """Stay on the page for ``seconds`` (cut short by the workflow timeout)."""
        duration = seconds(params["seconds"], "wait", "seconds", zero=True)
        if self.deadline is not None:
            duration = min(duration, max(0.0, self.deadline - time.monotonic()))
        sampler, meter = self.sampler, self.webrtc
        sampling = sampler is not None and sampler.active
        tracking = meter is not None and meter.active
        cancel = self.cancel or threading.Event()
        if not sampling and not tracking:
            interrupts.wait(cancel, duration)
            return
        # a sampled page keeps its samples flowing (and the stats log growing) meanwhile
        every = min(max(sampler.interval, 0.5), 2.0) if sampler is not None and sampling else 1.0
        end = time.monotonic() + duration
        while (left := end - time.monotonic()) > 0:
            if interrupts.wait(cancel, min(left, every)):
                return
            if sampling and sampler is not None:
                sampler.poll()
            if tracking and meter is not None:
                meter.poll()

    def opened_tab(self) -> None:
        """A tab this run opened is current: its pages are tracked as the first tab's."""
        if self.webrtc is not None:
            self.webrtc.follow()

    def start_video_sampling(self, params: dict[str, Any]) -> None:
        """Sample every ``<video>`` every ``interval`` seconds (default 1) until
        ``stop_video_sampling`` or the end of the run (see :mod:`.video`)."""
        if self.sampler is None:
            raise ActionFailed("video sampling needs a workflow run (no sampler here)")
        try:
            interval = float(params.get("interval", 1.0))
        except (TypeError, ValueError):
            interval = -1.0
        if interval <= 0:
            raise ActionFailed(
                f"start_video_sampling: interval must be a number of seconds above 0, "
                f"got {params.get('interval')!r}"
            )
        self.sampler.start(interval)

    def stop_video_sampling(self, params: dict[str, Any]) -> None:
        """Stop sampling videos (their last samples are taken now)."""
        if self.sampler is not None:
            self.sampler.stop()

    def start_stats_logging(self, params: dict[str, Any]) -> None:
        """NetGent's "Stats for Nerds" log: a JSON line per ``interval`` seconds (default
        2) for the page's main video (and YouTube's player data where the page has it),
        appended to ``out_path`` (default ``netgent_video_stats.jsonl``) in the run's
        output folder, until ``stop_stats_logging`` or the end of the run. Starting it
        again while it logs changes nothing."""
        from .qoe import STATS_DEFAULT, OutputPathError

        if self.sampler is None:
            raise ActionFailed("stats logging needs a workflow run (no sampler here)")
        interval = seconds(params.get("interval", 2.0), "start_stats_logging", "interval")
        try:
            self.sampler.start_log(str(params.get("out_path") or STATS_DEFAULT), interval)
        except OutputPathError as exc:
            raise ActionFailed(f"start_stats_logging: {exc}") from None
        except OSError as exc:
            raise ActionFailed(f"start_stats_logging: cannot write the log: {exc}") from None

    def stop_stats_logging(self, params: dict[str, Any]) -> None:
        """Stop the stats log; its last line is written and the file closed."""
        if self.sampler is not None:
            self.sampler.stop_log()

    def terminate(self, params: dict[str, Any]) -> None:
        """NetGent's ``terminate`` (the agent's "this instruction is done"): nothing to do
        in a replay, where a state's actions end with its list."""


def _missing(params: dict[str, Any]) -> str:
    """What is not there: the element an action names, as it names it."""
    where = []
    if "role" in params:
        where.append(f"no element is a {role_words(params)}")
    if "selector" in params:
        where.append(f"no visible element matches {params.get('by', 'css selector')} "
                     f"{params['selector']!r}")  # fmt: skip
    return " and ".join(where)


def _fraction(params: dict[str, Any], action: str) -> float | None:
    """NetGent's ``percentage`` (0 to 1 of the element's width), if given."""
    if "percentage" not in params or params["percentage"] is None:
        return None
    try:
        value = float(params["percentage"])
    except (TypeError, ValueError):
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ActionFailed(
            f"{action}: percentage must be between 0 and 1, got {params['percentage']!r}"
        )
    return value


def _why(exc: Exception) -> str:
    """A WebDriver error's message on one line, without the session's details."""
    text = str(getattr(exc, "msg", None) or exc)
    lines = [line.strip() for line in text.splitlines()]
    return " ".join(line for line in lines if line and not line.startswith("(Session info"))
