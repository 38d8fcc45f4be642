"""Scrolling: the page or an element by a distance (this package's ``scroll``, NetGent's
``pixels``), by window heights (NetGent's Playwright-era ``num_pages``), the mouse wheel at
a point, an element into view (``scroll_to``), and the first element showing a text
(``scroll_to_text``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .waits import ActionFailed, Waits, seconds

if TYPE_CHECKING:
    from selenium.webdriver.remote.webelement import WebElement


def located(params: dict[str, Any]) -> bool:
    """Whether an action names its element (by role and name, or by a selector)."""
    return "selector" in params or "role" in params


class ScrollActions(Waits):
    """The scrolling actions on the driver of :class:`.actions.Actions`."""

    def _element(self, params: dict[str, Any], action: str) -> WebElement:
        raise NotImplementedError  # the element lookup of Actions

    def _first(self, params: dict[str, Any], action: str) -> WebElement:
        raise NotImplementedError  # the first match (PlaywrightActions)

    def _viewport_point(self, x: Any, y: Any) -> tuple[int, int]:
        raise NotImplementedError  # NetGent's screen point in the viewport (Actions)

    def _pointer_at(self, x: Any, y: Any) -> Any:
        raise NotImplementedError  # the pointer moved to NetGent's point (Actions)

    def scroll(self, params: dict[str, Any]) -> None:
        """Scroll ``direction`` (down) by ``amount`` (or NetGent's ``pixels``) pixels
        (default 0.8 viewport), ``times`` times; inside the element ``by``/``selector``,
        or with the mouse wheel at NetGent's ``x``/``y``.

        Between repeated scrolls it waits for the page to settle (scroll end, at most
        250 ms), so that infinite-scroll pages see each step.
        """
        if "down" in params or "num_pages" in params:
            self.pages_scroll(params)  # NetGent's: by window heights
            return
        direction = str(params.get("direction", "down")).lower()
        if direction not in ("down", "up", "left", "right"):
            raise ActionFailed(f"scroll: direction {direction!r} is not down, up, left or right")
        times = int(params.get("times", 1))
        amount = params.get("amount", params.get("pixels"))
        if not located(params) and "x" in params and "y" in params:
            self._wheel_at(params["x"], params["y"], direction, amount, times)
            return
        target = self._element(params, "scroll") if "selector" in params else None
        self.driver.execute_async_script(
            _SCROLL_JS, target, direction, None if amount is None else float(amount), times
        )

    def _wheel_at(self, x: Any, y: Any, direction: str, amount: Any, times: int) -> None:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.actions.wheel_input import ScrollOrigin

        vx, vy = self._viewport_point(x, y)
        step = int(float(amount)) if amount is not None else 400
        dx = {"left": -step, "right": step}.get(direction, 0)
        dy = {"up": -step, "down": step}.get(direction, 0)
        origin = ScrollOrigin.from_viewport(vx, vy)
        for _ in range(times):
            ActionChains(self.driver).scroll_from_origin(origin, dx, dy).perform()

    def scroll_to(self, params: dict[str, Any]) -> None:
        """Scroll the element into the middle of the viewport (NetGent's ``x``/``y``
        alone: move the pointer there)."""
        if not located(params):
            self._pointer_at(params["x"], params["y"]).perform()
            return
        element = self._element(params, "scroll_to")
        self.driver.execute_script(
            "arguments[0].scrollIntoView({block: 'center', inline: 'nearest'});", element
        )

    def pages_scroll(self, params: dict[str, Any]) -> None:
        """NetGent's ``scroll``: ``num_pages`` window heights ``down`` (or up), in the
        nearest scrollable box around the element the selector names (a third of that,
        as NetGent does), else the page."""
        down = params.get("down", True)
        if isinstance(down, str):
            down = down.strip().lower() in ("true", "1", "yes")
        pages = seconds(
            params.get("num_pages", 1), "scroll", "num_pages", zero=True, unit="window heights"
        )
        target = self._first(params, "scroll") if "selector" in params else None
        self.driver.execute_script(_PAGES_JS, target, pages if down else -pages)

    def scroll_to_text(self, params: dict[str, Any]) -> None:
        """Bring the first shown element whose text holds ``text`` (in any case) into
        view; where the page shows none, nothing happens (NetGent's meaning)."""
        self.driver.execute_script(_TEXT_JS, str(params["text"]))


_SCROLL_JS = """
const [target, direction, amount, times, done] = arguments;
const box = target || window;
const size = target ? target.clientHeight : window.innerHeight;
const step = amount === null ? Math.round(size * 0.8) : amount;
const dx = direction === "left" ? -step : direction === "right" ? step : 0;
const dy = direction === "up" ? -step : direction === "down" ? step : 0;
let left = times;
function once() {
  if (left-- <= 0) { done(); return; }
  box.scrollBy(dx, dy);
  if (left <= 0) { done(); return; }
  let settled = false;
  const next = () => { if (!settled) { settled = true; once(); } };
  (target || document).addEventListener("scrollend", next, {once: true});
  setTimeout(next, 250);
}
once();
"""

_PAGES_JS = """
const [el, pages] = arguments;
const dy = Math.trunc(window.innerHeight * pages);
let current = el;
for (let i = 0; current && i < 10; i++) {
  const style = getComputedStyle(current);
  const scrolls = /(auto|scroll|overlay)/.test(style.overflowY);
  if (scrolls && current.scrollHeight > current.clientHeight) {
    const before = current.scrollTop, most = current.scrollHeight - current.clientHeight;
    const delta = dy > 0 ? Math.min(dy / 3, most - before) : Math.max(dy / 3, -before);
    current.scrollTop = before + delta;
    if (Math.abs(current.scrollTop - before) > 0.5) return;
  }
  if (current === document.body || current === document.documentElement) break;
  current = current.parentElement;
}
window.scrollBy(0, dy);
"""

_TEXT_JS = """
const wanted = arguments[0].replace(/\\s+/g, ' ').trim().toLowerCase();
const walker = document.createTreeWalker(document.body || document.documentElement,
  NodeFilter.SHOW_TEXT);
for (let node = walker.nextNode(); node; node = walker.nextNode()) {
  const el = node.parentElement;
  if (!el) continue;
  const said = (el.innerText || el.textContent || '').replace(/\\s+/g, ' ').toLowerCase();
  if (!said.includes(wanted)) continue;
  const box = el.getBoundingClientRect();
  if (box.width > 0 && box.height > 0 && el.checkVisibility()) {
    el.scrollIntoView({block: 'center', inline: 'nearest'});
    return true;
  }
}
return false;
"""
