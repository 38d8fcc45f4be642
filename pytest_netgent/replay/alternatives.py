"""Healing from stored alternatives: a cached action may carry its element's other
locators (``alternatives``, which record keeps with each action it makes, a pick in the
studio included). When the
action fails in a recording run, each failing action takes the first alternative that
names exactly one element of the page (one that now names several could act on the wrong
one) and the state's actions run again, with no synthesis; only when that cannot be done
is the state resynthesised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..browser.chain import Chain
from ..browser.waits import ActionFailed
from ..workflow.automaton import Action, Check, State

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from .engine import Engine


def from_alternatives(engine: Engine, index: int, healed: list[str]) -> int | None:
    """State ``index``, one of whose actions failed, healed from its actions'
    alternatives (its name joins ``healed``); its new index. ``None`` when none of its
    actions has alternatives, when one whose locator the page does not show has none the
    page shows, or when the actions so changed fail too."""
    old = engine.states[index]
    if not any("alternatives" in a.params for a in old.actions):
        return None
    actions = [_shown(engine, a) for a in old.actions]
    if any(a is None for a in actions) or actions == old.actions:
        return None
    state = old.model_copy(update={"actions": actions})
    try:
        engine.run_actions(state)
    except ActionFailed:
        return None
    changed = [a.describe() for a, b in zip(state.actions, old.actions, strict=True) if a != b]
    engine.event(
        "record", state=state.name, detail="healed from stored alternatives: " + "; ".join(changed)
    )
    if state.name not in healed:
        healed.append(state.name)
    return engine.put_state(state)


def _shown(engine: Engine, action: Action) -> Action | None:
    """``action`` as the page lets it run: itself when it has no locator or the page
    shows its element; else with the first of its alternatives that names one element of
    the page (the others, the old locator first, stay its alternatives); ``None`` when
    none does."""
    params = action.params
    if "selector" not in params:
        return action
    primary = {"by": params.get("by", "css selector"), "selector": params["selector"]}
    others: list[dict[str, Any]] = list(params.get("alternatives") or [])
    locators = [primary, *others]
    checks = [Check(type="element", params={**loc, "visible": False}) for loc in locators]
    tick = engine.evaluate_now([State(name="alternatives", checks=checks, repeat=0)])
    if not tick.ok or not tick.results:
        return None
    shown = [ok for ok, _ in tick.results[0]]
    if shown[0]:
        return action
    for locator, ok in zip(locators[1:], shown[1:], strict=True):
        if ok and _matches(engine.driver, locator) == 1:
            rest = [loc for loc in locators if loc != locator]
            return action.model_copy(update={"params": {**params, **locator, "alternatives": rest}})
    return None


def _matches(driver: WebDriver, locator: dict[str, Any]) -> int:
    """How many elements ``locator`` names now (through shadow roots and frames)."""
    from selenium.common.exceptions import WebDriverException

    chain = Chain(driver)
    try:
        found = chain.find(str(locator["by"]), str(locator["selector"]))
    except WebDriverException:  # a link of the chain gone since the check: names none
        return 0
    finally:
        chain.leave()
    return len(found)
