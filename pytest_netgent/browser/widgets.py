"""Elements found as their users name them, and the widgets of today's frameworks.

- **By role and name**: an action's element may be given by ``role`` and ``name`` (and
  ``within``: a region, group, row, list item or dialog of that name, or the heading it
  falls under; ``index`` among several), found as ``roles.js`` reads the page, through
  shadow roots and frames of its site. An action that also keeps ``by``/``selector``
  falls back to them when no element has that role and name.
- **select** on what is not a ``<select>``: a combobox, listbox or menu button is opened
  by a click, and its option (``option``, ``menuitem``, ``menuitemradio``,
  ``menuitemcheckbox``, ``treeitem``) chosen by its name once it is drawn; a combobox one
  types into is typed into to filter its options when none is drawn by that name.
- **set_value**: a slider or number field set to a value: a range, number or text input
  by its own value (with the ``input`` and ``change`` events a person's edit sends, so
  React and Svelte see it), an ARIA slider or spin button by its arrow keys, as a
  keyboard user moves it.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from .page import script
from .waits import ActionFailed, Waits

if TYPE_CHECKING:
    from selenium.webdriver.remote.webelement import WebElement

OPTION_ROLES = ("option", "menuitem", "menuitemradio", "menuitemcheckbox", "treeitem")
"""The roles of what a list, menu or tree offers to choose."""

MOST_KEYS = 400
"""Most arrow key presses ``set_value`` makes on an ARIA slider."""


@cache
def roles_source() -> str:
    """``roles.js`` with what it stands on (``deep.js``, ``a11y.js``)."""
    return script("deep.js") + script("a11y.js") + script("roles.js")


_BY_ROLE = "return ngByRole(arguments[0]).filter((el) => el.ownerDocument === document);"
"""The elements of a role and name in this document and its shadow roots: one inside a
frame is no element WebDriver can act on from here (it is stale in this context), so a
frame's element is found by its chained selector (``>>``), which switches into the frame."""

_OPTIONS = """
const [el, name, roles] = arguments;
const root = el.getRootNode();
const ids = (el.getAttribute("aria-controls") || el.getAttribute("aria-owns") || "")
  .split(/\\s+/).filter(Boolean);
const lists = ids.map((id) => (root.getElementById ? root.getElementById(id)
  : document.getElementById(id))).filter(Boolean);
for (const match of ["exact", "contains"]) {
  const found = [];
  for (const role of roles) found.push(...ngByRole({role: role, name: name, match: match}));
  const inside = found.filter((o) => lists.some((list) => list.contains(o)));
  if (found.length) return inside.length ? inside : found;
}
return [];
"""

_SET_INPUT = """
const [el, value] = arguments;
const proto = el.localName === "textarea" ? HTMLTextAreaElement.prototype
  : HTMLInputElement.prototype;
Object.getOwnPropertyDescriptor(proto, "value").set.call(el, value);
el.dispatchEvent(new Event("input", {bubbles: true}));
el.dispatchEvent(new Event("change", {bubbles: true}));
return el.value;
"""

_SLIDER = """
const el = arguments[0];
const num = (name, fallback) => {
  const v = parseFloat(el.getAttribute(name));
  return isNaN(v) ? fallback : v;
};
return [num("aria-valuenow", null), num("aria-valuemin", 0), num("aria-valuemax", 100)];
"""


def role_query(params: dict[str, Any]) -> dict[str, Any]:
    """What ``ngByRole`` looks for, from an action's parameters."""
    return {k: params[k] for k in ("role", "name", "within") if k in params}


def role_words(params: dict[str, Any]) -> str:
    """An element given by role and name, as an error names it."""
    out = f"{params['role']} {params['name']!r}" if "name" in params else str(params["role"])
    return out + (f" within {params['within']!r}" if "within" in params else "")


class WidgetActions(Waits):
    """Finding elements by role and name; choosing options; setting values."""

    def _pick(self, params: dict[str, Any]) -> WebElement | None:
        """The element an action names now (:class:`~.actions.Actions` finds it)."""
        raise NotImplementedError

    def _element(self, params: dict[str, Any], action: str) -> WebElement:
        """The element an action names, waited for (:class:`~.actions.Actions`)."""
        raise NotImplementedError

    def _by_role(self, params: dict[str, Any]) -> list[WebElement]:
        """The elements of the page with ``params``' role and name, in page order."""
        found = self.driver.execute_script(roles_source() + _BY_ROLE, role_query(params))
        return list(found or [])

    def select(self, params: dict[str, Any]) -> None:
        """Choose an option by ``text``, ``value`` or ``index``: of a ``<select>``, or of
        a combobox, listbox or menu button (:mod:`.widgets`)."""
        from selenium.common.exceptions import NoSuchElementException
        from selenium.webdriver.support.select import Select

        if not any(k in params for k in ("text", "value", "index")):
            raise ActionFailed("select: give the option's 'text', 'value' or 'index'")

        # 'index' is the option's here, not the element's
        target = {k: v for k, v in params.items() if k != "index"}
        opened = [False, False]  # a widget: clicked open, typed into

        def attempt() -> bool:
            element = self._pick(target)
            if element is None:
                return False
            if element.tag_name.lower() != "select":
                return self._choose(element, params, opened)
            menu = Select(element)
            try:
                if "text" in params:
                    menu.select_by_visible_text(str(params["text"]))
                elif "value" in params:
                    _select_value(menu, str(params["value"]))
                else:
                    menu.select_by_index(int(params["index"]))
            except NoSuchElementException:
                return False
            return True

        choice = {k: params[k] for k in ("text", "value", "index") if k in params}
        self._until(f"select: no option {choice} in {where_of(params)}", attempt)

    def _choose(self, element: WebElement, params: dict[str, Any], opened: list[bool]) -> bool:
        """Open the combobox, listbox or menu button ``element`` and choose the option
        named ``params['text']`` (or ``value``, or the ``index``-th); ``opened`` says
        what the earlier attempts did (clicked, typed)."""
        wanted = params.get("text", params.get("value"))
        if not opened[0] or element.get_attribute("aria-expanded") == "false":
            element.click()
            opened[0] = True
        if wanted is None:
            options: list[WebElement] = []
            for role in OPTION_ROLES:
                options += self._by_role({"role": role})
            index = int(params.get("index", 0))
            if not -len(options) <= index < len(options):
                return False
            options[index].click()
            return True
        options = list(self.driver.execute_script(
            roles_source() + _OPTIONS, element, str(wanted), list(OPTION_ROLES)
        ) or [])  # fmt: skip
        if not options and not opened[1] and element.tag_name.lower() == "input":
            element.clear()
            element.send_keys(str(wanted))  # a combobox that filters as it is typed into
            opened[1] = True
            return False
        if not options:
            return False
        options[0].click()
        return True

    def set_value(self, params: dict[str, Any]) -> None:
        """Set the slider or field to ``value``."""
        value = str(params["value"])
        element = self._element(params, "set_value")
        tag = element.tag_name.lower()
        if tag in ("input", "textarea") and (element.get_attribute("type") or "") != "checkbox":
            got = str(self.driver.execute_script(_SET_INPUT, element, value))
            if not _same(got, value):
                raise ActionFailed(
                    f"set_value: the field took {got!r}, not {value!r} (out of its range or steps?)"
                )
            return
        self._arrows_to(element, value)

    def _arrows_to(self, element: WebElement, value: str) -> None:
        """Move an ARIA slider to ``value`` with its arrow keys."""
        from selenium.webdriver.common.keys import Keys

        try:
            target = float(value)
        except ValueError:
            raise ActionFailed(f"set_value: a slider takes a number, got {value!r}") from None
        now, low, high = self.driver.execute_script(_SLIDER, element)
        if now is None:  # no aria-valuenow
            raise ActionFailed(
                "set_value: the element is neither a field nor a slider with aria-valuenow"
            )
        if not low <= target <= high:
            raise ActionFailed(f"set_value: {value} is outside the slider's {low:g} to {high:g}")
        up = now < target
        for _ in range(MOST_KEYS):
            if now == target or (now < target) != up:  # there, or stepped past it
                break
            element.send_keys(Keys.ARROW_RIGHT if up else Keys.ARROW_LEFT)
            now = self.driver.execute_script(_SLIDER, element)[0]
        if not _same(str(now), value):
            raise ActionFailed(f"set_value: the slider stops at {now:g}, not at {value}")


def _same(got: str, wanted: str) -> bool:
    try:
        return float(got) == float(wanted)
    except ValueError:
        return got == wanted


def where_of(params: dict[str, Any]) -> str:
    """The element an action names, as it names it."""
    if "role" in params:
        return role_words(params)
    return f"{params.get('by', 'css selector')} {params['selector']!r}"


def _select_value(menu: Any, value: str) -> None:
    """Select the option whose value is ``value``: by HTML rules an option without a
    ``value`` attribute has its text as value, which Selenium's ``select_by_value``
    does not see."""
    from selenium.common.exceptions import NoSuchElementException

    try:
        menu.select_by_value(value)
        return
    except NoSuchElementException:
        pass
    for option in menu.options:
        if option.get_property("value") == value:  # the attribute, else the text
            if not option.is_selected():
                option.click()
            return
    raise NoSuchElementException(f"no option with value {value!r}")
