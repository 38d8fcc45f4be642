"""Actions on the widgets of today's frameworks, in a real browser: an element found by
its role and name (its selector kept as the fallback), an option chosen from a combobox
whose options exist only while it is open, a slider and a field set to a value, and a
step the page refuses failing as the step it is, never as a crash."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_netgent.browser.actions import ActionFailed, Actions
from pytest_netgent.workflow.automaton import Action

from .helpers import until


@pytest.fixture
def widgets(netgent_browser: Any, base_url: str) -> Any:
    driver = netgent_browser.driver
    driver.get(base_url + "/widgets/")
    until(driver, "return !!document.querySelector('[role=combobox]')", 10)
    return driver


def act(driver: Any, type_: str, **params: Any) -> None:
    """One action, validated as a cache file's would be, run as the engine runs it."""
    action = Action.model_validate({"type": type_, "params": params})
    Actions(driver, 3.0, lambda url: None).run(action.type, action.params)


def value_of(driver: Any, css: str) -> str:
    read = (
        "const el = document.querySelector(arguments[0]);"
        "return el.value !== undefined ? el.value : el.getAttribute('aria-valuenow');"
    )
    return str(driver.execute_script(read, css))


def test_an_element_is_found_by_its_role_and_name(widgets: Any) -> None:
    act(widgets, "click", role="button", name="More options")
    assert widgets.find_element("css selector", "#more-button").get_attribute(
        "aria-expanded") == "true"  # fmt: skip
    act(widgets, "type", role="textbox", name="Display name", text="Grace")
    assert value_of(widgets, "#name") == "Grace"
    act(widgets, "click", role="tab", name="Privacy")  # not its hidden copy
    assert widgets.find_element("css selector", "#tab-privacy").get_attribute(
        "aria-selected") == "true"  # fmt: skip


def test_a_role_that_is_gone_falls_back_to_the_selector_and_else_names_both(
    widgets: Any,
) -> None:
    act(widgets, "click", role="button", name="Show more", by="css selector",
        selector="#more-button")  # fmt: skip
    assert widgets.find_element("css selector", "#reset").is_displayed()
    with pytest.raises(ActionFailed, match="no element is a button 'Launch'"):
        act(widgets, "click", role="button", name="Launch")


def test_an_option_is_chosen_from_a_combobox_drawn_only_while_open(widgets: Any) -> None:
    act(widgets, "select", role="combobox", name="Country", text="Norway")
    assert value_of(widgets, "#country") == "Norway"
    # by its selector too: a model's select on an <input role=combobox> (once a crash)
    act(widgets, "select", by="css selector", selector="#country", text="Italy")
    assert value_of(widgets, "#country") == "Italy"
    act(widgets, "select", role="combobox", name="City", text="Oslo")  # a native <select>
    assert value_of(widgets, "#city") == "Oslo"
    with pytest.raises(ActionFailed, match=r"no option \{'text': 'Spain'\} in combobox 'Country'"):
        act(widgets, "select", role="combobox", name="Country", text="Spain")


def test_sliders_and_fields_are_set_to_a_value(widgets: Any) -> None:
    act(widgets, "set_value", role="slider", name="Volume", value=3)  # <input type=range>
    assert value_of(widgets, "#volume") == "3"
    act(widgets, "set_value", role="slider", name="Balance", value=80)  # its arrow keys
    assert value_of(widgets, "#balance") == "80"
    act(widgets, "set_value", role="slider", name="Balance", value="20")
    assert value_of(widgets, "#balance") == "20"
    with pytest.raises(ActionFailed, match="outside the slider's 0 to 100"):
        act(widgets, "set_value", role="slider", name="Balance", value=150)
    with pytest.raises(ActionFailed, match="stops at 30, not at 25"):
        act(widgets, "set_value", role="slider", name="Balance", value=25)
    act(widgets, "set_value", role="textbox", name="Display name", value="Lin")
    assert value_of(widgets, "#name") == "Lin"


def test_a_step_the_page_refuses_fails_as_that_step(widgets: Any) -> None:
    with pytest.raises(ActionFailed, match="set_value: the element is neither"):
        act(widgets, "set_value", role="button", name="More options", value=1)


def test_a_box_drawn_by_its_label_is_ticked_by_clicking_the_label(netgent_browser: Any) -> None:
    import urllib.parse

    # the input inside a visually hidden wrapper (React Aria's, Bootstrap's
    # .visually-hidden), the box a drawing of the label's
    hidden = (
        "position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;"
        "clip:rect(0,0,0,0);clip-path:inset(50%);white-space:nowrap;border:0;padding:0"
    )
    page = (
        f"<label><span style='{hidden}'><input type=checkbox id=coastal></span>"
        "<span style='display:inline-block;width:16px;height:16px;border:1px solid'></span>"
        " Coastal towns only</label><input type=checkbox id=bare style='display:none'>"
    )
    driver = netgent_browser.driver
    driver.get("data:text/html," + urllib.parse.quote(page))
    act(driver, "click", by="css selector", selector="#coastal")
    assert driver.execute_script("return document.querySelector('#coastal').checked") is True
    with pytest.raises(ActionFailed, match="click"):  # no label to click: it fails as it is
        act(driver, "click", by="css selector", selector="#bare")
