"""The page model: a page read as its users perceive it (roles, names, values, states,
text, media), through shadow roots and frames, as one compact text; held against
Chromium's own accessibility tree, and against pages too large or blocked to read."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fixtures.widgets import SECRET
from pytest_netgent.browser.aria import AriaPage, from_entries, snapshot
from pytest_netgent.browser.session import cdp

from .helpers import until

ROOT = Path(__file__).resolve().parent.parent


def opened(netgent_browser: Any, url: str, ready: str = "return !!document.body") -> Any:
    driver = netgent_browser.driver
    driver.get(url)
    until(driver, ready, 10)
    return driver


def test_the_bundled_library_is_the_one_its_npm_package_makes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "vendor_js.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_page_of_widgets_reads_as_its_users_see_it(netgent_browser: Any, base_url: str) -> None:
    driver = opened(netgent_browser, base_url + "/widgets/")
    text = snapshot(driver).text()
    for line in (
        '- heading "Settings" [level=1]',
        "- text: Saved 2 minutes ago",
        '- tab "General" (1 of 2) [selected]',
        '- tab "Privacy" (2 of 2)',
        '- textbox "Display name" = "Ada"',
        '- textbox "Password" = "(filled)"',
        '- checkbox "Newsletter" [checked]',
        '- slider "Volume" = 7 (0 to 10)',
        '- combobox "City" = "Rome" [collapsed]',
        '- option "Rome" (2 of 3) [selected]',
        '- combobox "Country" (placeholder "Choose a country") [collapsed]',
        '- button "More options" [collapsed]',
        '- button "Delete account" [disabled]',
        '- textbox "Bio" [contenteditable]',
        '- cell "Laptop" (1 of 2)',
    ):
        assert line in text, f"{line!r} not in:\n{text}"
    assert SECRET not in text  # a password's value is never read
    assert text.count('tab "General"') == 1, text  # the aria-hidden copy is left out
    assert "Nothing is shared" not in text and "every device" not in text, text  # hidden
    assert '"Reset"' not in text and "France" not in text, text  # not open yet


def test_what_the_page_shows_next_is_what_it_reads_next(
    netgent_browser: Any, base_url: str
) -> None:
    driver = opened(netgent_browser, base_url + "/widgets/")
    driver.find_element("css selector", "#country").click()
    driver.find_element("css selector", "#more-button").click()
    page = snapshot(driver)
    text = page.text()
    assert '- combobox "Country" (placeholder "Choose a country") [expanded] [' in text, text
    assert '- option "Italy" (2 of 3)' in text and '- button "Reset"' in text, text
    assert '- button "More options" [expanded] [focused]' in text, text  # clicked last
    driver.find_element("css selector", "[role=option]:nth-child(2)").click()
    assert '- combobox "Country" = "Italy" [collapsed]' in snapshot(driver).text()
    driver.find_element("css selector", "#sign-out").click()
    text = snapshot(driver).text()
    assert "- dialog [modal]" in text and "- text: Sign out of every device?" in text, text
    (dialog,) = [n for n in snapshot(driver).nodes() if n.role == "dialog"]
    assert [c.name for c in dialog.children] == ["Sign out of every device?", "Yes", "Cancel"]


def test_shadow_roots_and_frames_are_read_and_another_sites_frame_is_listed(
    netgent_browser: Any, base_url: str
) -> None:
    driver = opened(
        netgent_browser, base_url + "/components/", "return !!document.querySelector('ng-app')"
    )
    until(driver, "return document.readyState === 'complete'", 10)
    deep = snapshot(driver)
    text = deep.text()  # four shadow roots deep, the search box in a closed one
    assert '- searchbox "Search cities"' in text and '- button "Search"' in text, text
    driver = opened(netgent_browser, base_url + "/components/frames")
    until(driver, "return document.readyState === 'complete'", 10)
    frames = snapshot(driver)
    framed = [n for n in frames.nodes() if n.frame and n.role in ("textbox", "button")]
    assert framed and all(" >> " in n.frame for n in framed if n.frame.count("iframe") > 1)
    driver = opened(netgent_browser, base_url + "/components/embed")
    until(driver, "return document.readyState === 'complete'", 10)
    embed = snapshot(driver)
    unread = [n for n in embed.nodes() if n.role == "iframe" and n.unread]
    assert unread, embed.text()
    assert "(not read: a frame of another site" in embed.text()


INTERACTIVE = ("button", "link", "checkbox", "slider", "tab", "heading", "radio")


def chromium_says(driver: Any) -> Counter[tuple[str, str]]:
    """(role, name) of the top document's interactive nodes, as Chromium's own
    accessibility tree has them (the DevTools protocol)."""
    tree = cdp(driver, "Accessibility.getFullAXTree", {})
    found: Counter[tuple[str, str]] = Counter()
    for node in tree["nodes"]:
        role = node.get("role", {}).get("value", "")
        if node.get("ignored") or role not in INTERACTIVE:
            continue
        found[(role, " ".join(str(node.get("name", {}).get("value", "")).split()))] += 1
    return found


@pytest.mark.parametrize("path", ["/widgets/", "/wiki/", "/shop/", "/hub/"])
def test_roles_and_names_are_chromiums_own(netgent_browser: Any, base_url: str, path: str) -> None:
    driver = opened(netgent_browser, base_url + path)
    until(driver, "return document.readyState === 'complete'", 10)
    ours = Counter(
        (n.role, n.name) for n in snapshot(driver).nodes() if n.role in INTERACTIVE and not n.frame
    )
    assert ours == chromium_says(driver)


def test_a_huge_page_is_cut_and_says_so(netgent_browser: Any) -> None:
    items = "".join(f"<li><a href='#r{i}'>Result {i}</a> <span>line {i}</span></li>" for i in
                    range(4000))  # fmt: skip
    driver = opened(netgent_browser, "data:text/html," + urllib.parse.quote(f"<ul>{items}</ul>"))
    page = snapshot(driver, max_nodes=2000)
    assert page.cut > 0
    text = page.text(budget=3000, near=["Result 10"])
    assert len(text) < 3300 and 'link "Result 10"' in text, text
    assert text.endswith(f"and {page.cut} elements not read (the page is larger than a snapshot)")


def test_a_dialog_of_the_browser_blocks_the_page_and_is_what_it_reads(
    netgent_browser: Any, base_url: str
) -> None:
    driver = opened(netgent_browser, base_url + "/widgets/")
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("setTimeout(() => alert('You have unsaved changes'), 0)")
    WebDriverWait(driver, 5, 0.05).until(expected_conditions.alert_is_present())
    page = snapshot(driver)
    with contextlib.suppress(NoAlertPresentException):  # ChromeDriver may have dismissed it
        driver.switch_to.alert.dismiss()
    assert page.blocked and page.text() == '- alertdialog "You have unsaved changes" [ref=e1]'


def test_a_video_says_whether_it_plays(netgent_browser: Any, base_url: str) -> None:
    driver = opened(netgent_browser, base_url + "/hub/")
    page = "<video muted aria-label='Clip' width=320 height=180></video>"
    driver.execute_script("document.body.insertAdjacentHTML('beforeend', arguments[0])", page)
    (video,) = [n for n in snapshot(driver).nodes() if n.role == "video"]
    assert video.name == "Clip" and video.media is not None and not video.media["playing"]
    assert video.line() == 'video "Clip" [paused] (at 0 s) [ref=' + video.ref + "]"


def test_a_budget_keeps_the_lines_nearest_the_instruction_with_their_place() -> None:
    entries: list[dict[str, Any]] = [{"p": -1, "role": "list"}]
    for i in range(300):
        entries.append({"p": 0, "role": "listitem"})
        entries.append({"p": len(entries) - 1, "role": "link", "name": f"Item {i}"})
    entries.append({"p": -1, "role": "button", "name": "Load more"})
    page: AriaPage = from_entries(entries)
    text = page.text(budget=400, near=["Load more", "Item 250"])
    lines = text.splitlines()
    assert '- button "Load more" [ref=e602]' in lines, text
    assert '    - link "Item 250" [ref=e503]' in lines, text
    assert "  - listitem (251 of 300) [ref=e502]:" in lines, text  # its place, kept with it
    assert any(line.strip().startswith("- ... ") for line in lines), text
    assert len(text) <= 400 + 40 * 3, text


def test_a_prompt_shows_the_page_with_the_numbers_of_its_elements(
    netgent_browser: Any, base_url: str
) -> None:
    """The prompt's picture of the page names each element an action may act on by the
    number the element list gives it, and no other."""
    from pytest_netgent.synthesis.observation import observe

    driver = opened(netgent_browser, base_url + "/widgets/")
    page = observe(driver)
    (sign_out,) = [e for e in page.elements if e.name == "Sign out"]
    text = page.describe(near="Sign out")
    assert f'- button "Sign out" [ref={sign_out.mmid}]' in text, text
    assert "- text: Saved 2 minutes ago" in text and '"Volume" = 7 (0 to 10)' in text, text
    listed = {e.mmid for e in page.elements}
    refs = {int(r) for r in re.findall(r"\[ref=(\d+)\]", text)}
    assert refs and refs <= listed, (refs, listed)
    assert "[ref=e" not in text
    fewer = page.model_copy(update={"elements": [sign_out]})
    assert re.findall(r"\[ref=(\d+)\]", fewer.describe()) == [str(sign_out.mmid)]


def test_a_canvas_grid_reads_as_its_fallback_table_as_chromium_reads_it(
    netgent_browser: Any,
) -> None:
    grid = (
        "<table role=grid><tr role=row><th role=columnheader>Town</th></tr>"
        "<tr role=row><td role=gridcell>Ashford</td></tr></table>"
    )
    page = (
        f"<canvas width=300 height=100>{grid}</canvas>"
        f"<canvas style='display:none'>{grid.replace('Ashford', 'Hidden town')}</canvas>"
        "<p>1 of 1 towns</p>"
    )
    driver = opened(netgent_browser, "data:text/html," + urllib.parse.quote(page))
    cells = [n.name for n in snapshot(driver).nodes() if n.role == "gridcell"]
    assert cells == ["Ashford"]  # the drawn canvas's table, not the hidden one's
    tree = cdp(driver, "Accessibility.getFullAXTree", {})
    chromium = [
        str(n.get("name", {}).get("value", ""))
        for n in tree["nodes"]
        if not n.get("ignored") and n.get("role", {}).get("value") == "gridcell"
    ]
    assert chromium == cells


def test_what_a_box_less_wrapper_holds_is_read(netgent_browser: Any) -> None:
    # a popover's listbox inside a display: contents wrapper (React Aria's), as Chromium
    # reads it; a display: none one is not drawn
    page = (
        "<div style='display:contents'><div role=listbox aria-label=Region>"
        "<div role=option>Eastvale</div></div></div>"
        "<div style='display:none'><div role=option>Hidden</div></div>"
    )
    driver = opened(netgent_browser, "data:text/html," + urllib.parse.quote(page))
    assert [n.name for n in snapshot(driver).nodes() if n.role == "option"] == ["Eastvale"]
