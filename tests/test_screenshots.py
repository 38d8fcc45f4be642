"""A failure screenshot goes into reports (pytest-html embeds it): the secrets a run knows
are replaced by their ``{name}`` in the page while it is taken, then put back."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium.webdriver.remote.webdriver import WebDriver

from pytest_netgent.browser.session import BrowserOptions, start_browser
from pytest_netgent.replay.diagnosis import screenshot
from pytest_netgent.system.redaction import Redactor

SECRET = "Hx7-q2Lm"

PAGE = """<!doctype html><meta charset="utf-8">
<style>body{{font:20px monospace;margin:20px}} input{{font:20px monospace;width:400px}}</style>
<p>Results for {text}</p>
<input id="q" value="{field}">
<div id="host"></div>
<script>
  const root = document.getElementById("host").attachShadow({{mode: "open"}});
  root.innerHTML = "<p>In a shadow root: {text}</p>";
</script>
"""


@pytest.fixture(scope="module")
def driver() -> Iterator[WebDriver]:
    driver = start_browser(BrowserOptions())
    try:
        yield driver
    finally:
        driver.quit()


def show(driver: WebDriver, text: str) -> None:
    html = PAGE.format(text=text, field=text)
    driver.get("data:text/html;base64," + base64.b64encode(html.encode()).decode())


def test_a_screenshot_shows_a_secrets_name_not_its_value(driver: WebDriver, tmp_path: Path) -> None:
    show(driver, "{query}")  # the page as it would look with the name in it
    expected = Path(screenshot(driver, tmp_path / "expected", 0)).read_bytes()
    show(driver, SECRET)
    unmasked = Path(screenshot(driver, tmp_path / "plain", 0)).read_bytes()
    masked = Path(screenshot(driver, tmp_path / "masked", 0, Redactor({"query": SECRET})))
    assert unmasked != expected  # the value shows without the redactor
    assert masked.read_bytes() == expected
    # and the page is as it was: the value back in its text, field and shadow root
    assert driver.execute_script(
        "return [document.body.innerText.includes(arguments[0]),"
        " document.getElementById('q').value,"
        " document.getElementById('host').shadowRoot.textContent.includes(arguments[0]),"
        " typeof window.__netgentShowSecrets]",
        SECRET,
    ) == [True, SECRET, True, "undefined"]


def test_no_screenshot_rather_than_one_with_the_secret(driver: WebDriver, tmp_path: Path) -> None:
    """Fails closed: a page whose secrets cannot be hidden gets no screenshot."""
    show(driver, SECRET)
    driver.execute_script("window.NodeFilter = undefined")  # breaks the page's tree walk
    said = screenshot(driver, tmp_path, 0, Redactor({"query": SECRET}))
    assert said.startswith("(no screenshot: ") and not list(tmp_path.iterdir())


def masked_as_named(driver: WebDriver, tmp_path: Path, fill: Callable[[str], None]) -> None:
    """The page ``fill`` makes shows, screenshotted with the secret masked, exactly what it
    shows with the secret's ``{name}`` typed instead (and not what it shows unmasked)."""
    fill("{query}")
    expected = Path(screenshot(driver, tmp_path / "expected", 0)).read_bytes()
    fill(SECRET)
    unmasked = Path(screenshot(driver, tmp_path / "plain", 0)).read_bytes()
    masked = Path(screenshot(driver, tmp_path / "masked", 0, Redactor({"query": SECRET})))
    assert unmasked != expected
    assert masked.read_bytes() == expected


def test_a_secret_typed_into_a_frame_of_another_site_is_masked_too(
    driver: WebDriver, tmp_path: Path, base_url: str
) -> None:
    """The widget on /components/embed is served by the other host name, so Chromium runs
    it in a process of its own, out of the page script's reach: the screenshot enters it."""
    from pytest_netgent.browser.chain import Chain

    def embed(text: str) -> None:
        driver.get(f"{base_url}/components/embed")
        chain = Chain(driver)
        (field,) = chain.find("css selector", "iframe#widget >> #message")
        field.send_keys(text)
        driver.execute_script("document.activeElement.blur()")  # no caret in the picture
        chain.leave()

    masked_as_named(driver, tmp_path, embed)
    chain = Chain(driver)
    (field,) = chain.find("css selector", "iframe#widget >> #message")
    assert field.get_property("value") == SECRET  # put back
    chain.leave()


def test_a_secret_typed_into_a_closed_root_the_html_declares_is_masked_too(
    driver: WebDriver, tmp_path: Path, base_url: str
) -> None:
    """The coupon form of /components/declared sits in a closed shadow root the parser
    attached (no script saw it): the screenshot reaches it through DevTools."""
    from pytest_netgent.browser.actions import Actions
    from pytest_netgent.browser.chain import Chain

    def coupon(text: str) -> None:
        driver.get(f"{base_url}/components/declared")
        field = {"by": "css selector", "selector": "ng-coupon >> #code"}
        Actions(driver, 5.0, lambda url: None).run("type", {**field, "text": text})
        driver.execute_script("document.activeElement.blur()")  # no caret in the picture

    masked_as_named(driver, tmp_path, coupon)
    (field,) = Chain(driver).find("css selector", "ng-coupon >> #code")
    assert field.get_property("value") == SECRET  # put back


def test_no_screenshot_when_a_frame_of_another_site_cannot_be_masked(
    driver: WebDriver, tmp_path: Path, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_netgent.browser.chain import Chain

    driver.get(f"{base_url}/components/embed")
    monkeypatch.setattr(Chain, "enter", lambda self, path: False)  # the frame went away
    said = screenshot(driver, tmp_path, 0, Redactor({"query": SECRET}))
    assert said == "(no screenshot: the frame '#widget' of another site cannot be masked)"
    assert not list(tmp_path.iterdir())
    assert driver.execute_script("return typeof window.__netgentShowSecrets") == "undefined"
