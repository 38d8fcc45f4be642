"""Replay speed: the engine against the same steps hand-written in plain Selenium.

Runs the seven-state workflow ``bench/tour/tour.netgent.yaml`` through the engine and
the equivalent hand-written Selenium script (explicit waits, 50 ms polling), alternately,
in one process and one headless Chromium, against the local NetWiki on 127.0.0.1. Both
start each round from a reset browser. Then the same for a page of web components (the
components dashboard's search: shadow roots four deep, one closed). Prints the medians,
the browser round trips per engine tick with 20 states in the automaton, and last
``ratio replay/handwritten: X; shadow DOM: Y``.

    python bench/replay.py [--rounds N] [--quick]

``--quick`` (CI): two rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fixtures import serve  # noqa: E402
from pytest_netgent.browser.pool import BrowserPool  # noqa: E402
from pytest_netgent.browser.session import BrowserOptions, reset_browser  # noqa: E402
from pytest_netgent.replay import engine as engine_module  # noqa: E402
from pytest_netgent.replay.runner import NetgentBrowser, ReplaySettings, find_workflow  # noqa: E402
from pytest_netgent.workflow import store  # noqa: E402
from pytest_netgent.workflow.automaton import State  # noqa: E402

WORKFLOW = ROOT / "bench" / "tour" / "tour.netgent.yaml"
PASSWORD = "netgent-pass"  # the local NetWiki's test account


def handwritten(driver: Any, base_url: str) -> None:
    """The tour written by hand the way a careful Selenium user would."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 10, poll_frequency=0.05)
    driver.get(base_url + "/wiki/login")
    wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "form#login-form")))
    driver.find_element(By.CSS_SELECTOR, "#username").send_keys("researcher")
    driver.find_element(By.CSS_SELECTOR, "#password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "#login-button").click()
    wait.until(ec.url_to_be(base_url + "/wiki/account"))
    box = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#search-input")))
    box.send_keys("QUIC")
    box.send_keys(Keys.ENTER)
    first = wait.until(
        ec.element_to_be_clickable((By.CSS_SELECTOR, "#results li.result:first-child a"))
    )
    first.click()
    like = wait.until(
        ec.element_to_be_clickable((By.CSS_SELECTOR, "#like-button[aria-pressed=false]"))
    )
    like.click()
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#like-button[aria-pressed=true]")))
    Select(driver.find_element(By.CSS_SELECTOR, "#lang")).select_by_visible_text("Deutsch")
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#lang-note"), "Deutsch"))
    driver.find_element(By.LINK_TEXT, "Log out").click()
    wait.until(ec.url_to_be(base_url + "/wiki/"))
    wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#login-link")))


SHADOW = ROOT / "example_suites" / "components" / "dashboard.netgent.yaml"


def handwritten_shadow(driver: Any, base_url: str) -> None:
    """The components dashboard's search (shadow roots four deep, a closed one) written
    by hand the way a careful Selenium user would: each root entered in turn."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    css = By.CSS_SELECTOR
    missing = (NoSuchElementException, StaleElementReferenceException)
    wait = WebDriverWait(driver, 10, poll_frequency=0.05, ignored_exceptions=missing)

    def panel() -> Any:
        app = driver.find_element(css, "ng-app").shadow_root
        return app.find_element(css, "ng-panel").shadow_root

    def results() -> Any:
        return panel().find_element(css, "ng-results").shadow_root

    driver.get(base_url + "/components/")
    wait.until(lambda d: "Pick a tab" in panel().find_element(css, "#pane").text)
    panel().find_elements(css, "#tabs > div.tab")[1].click()
    search = panel().find_element(css, "ng-search").shadow_root  # a closed root
    box = search.find_element(css, "#q")
    box.clear()
    box.click()  # its page sees the host focused: keys go through the keyboard
    ActionChains(driver).send_keys("Lisbon").perform()
    search.find_element(css, "#go").click()
    wait.until(lambda d: "1 results for Lisbon" in results().find_element(css, "#summary").text)
    card = results().find_element(css, "ng-card").shadow_root
    card.find_element(css, "#open").click()
    wait.until(
        lambda d: (
            "Welcome to Lisbon"
            in results().find_element(css, "ng-city").shadow_root.find_element(css, "#detail").text
        )
    )


def decoys(count: int) -> list[State]:
    """States that never match, to grow the automaton to 20 states."""
    return [
        State.model_validate(
            {
                "name": f"Decoy {i}",
                "checks": [
                    {"type": "url", "params": {"url": "{base_url}/elsewhere/", "match": "prefix"}},
                    {"type": "element", "params": {"by": "css selector", "selector": f"#d{i}"}},
                ],
            }
        )
        for i in range(count)
    ]


def count_tick_round_trips(
    browser: NetgentBrowser, loaded: Any, states: list[State]
) -> tuple[int, int]:
    """Run once with ``states`` and count WebDriver commands made inside engine ticks."""
    driver = browser.driver
    original_execute = driver.execute
    original_evaluate = engine_module.evaluate
    inside = [False]
    commands = [0]
    ticks = [0]

    def execute(command: str, params: Any = None) -> Any:
        if inside[0]:
            commands[0] += 1
        return original_execute(command, params)

    def evaluate(*args: Any, **kwargs: Any) -> Any:
        inside[0] = True
        ticks[0] += 1
        try:
            return original_evaluate(*args, **kwargs)
        finally:
            inside[0] = False

    driver.execute = execute
    engine_module.evaluate = evaluate  # type: ignore[assignment]
    try:
        result = browser.run(loaded, states=states)
    finally:
        driver.execute = original_execute
        engine_module.evaluate = original_evaluate
    assert result.passed
    return ticks[0], commands[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds of each (default 10)")
    parser.add_argument("--quick", action="store_true", help="two rounds (CI)")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 2
    os.environ.setdefault("NETWIKI_PASSWORD", PASSWORD)
    loaded = find_workflow(WORKFLOW, "wiki-tour")
    with serve("original") as server:
        base_url = server.url
        pool = BrowserPool(BrowserOptions())
        browser = NetgentBrowser(pool, ReplaySettings(state_timeout=10), base_url)
        driver = pool.driver
        origins = {base_url}
        # warm up both paths once (page caches, JIT), untimed
        browser.run(loaded)
        reset_browser(driver, origins)
        handwritten(driver, base_url)
        reset_browser(driver, origins)

        replay_times: list[float] = []
        hand_times: list[float] = []
        states_visited = 0
        for _ in range(args.rounds):
            start = time.perf_counter()
            result = browser.run(loaded)
            replay_times.append(time.perf_counter() - start)
            states_visited = len(result.states_visited)
            reset_browser(driver, origins)
            start = time.perf_counter()
            handwritten(driver, base_url)
            hand_times.append(time.perf_counter() - start)
            reset_browser(driver, origins)

        shadow = find_workflow(SHADOW, "city-search")
        browser.run(shadow)  # warm up, untimed
        reset_browser(driver, origins)
        shadow_replay: list[float] = []
        shadow_hand: list[float] = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            browser.run(shadow)
            shadow_replay.append(time.perf_counter() - start)
            reset_browser(driver, origins)
            start = time.perf_counter()
            handwritten_shadow(driver, base_url)
            shadow_hand.append(time.perf_counter() - start)
            reset_browser(driver, origins)

        real = store.replay_states(
            loaded.workflow, store.load(store.cache_path(WORKFLOW, "wiki-tour")), WORKFLOW, ""
        )
        big = real + decoys(20 - len(real))
        ticks, commands = count_tick_round_trips(browser, loaded, big)
        reset_browser(driver, origins)
        pool.close()

    replay = statistics.median(replay_times)
    hand = statistics.median(hand_times)
    name = WORKFLOW.relative_to(ROOT)
    print(f"workflow: {name} ({states_visited} states), {args.rounds} rounds each")
    print(
        f"replay (engine) median:        {replay * 1000:8.1f} ms   "
        f"(min {min(replay_times) * 1000:.1f}, max {max(replay_times) * 1000:.1f})"
    )
    print(
        f"handwritten (Selenium) median: {hand * 1000:8.1f} ms   "
        f"(min {min(hand_times) * 1000:.1f}, max {max(hand_times) * 1000:.1f})"
    )
    print(
        f"round trips per tick with {len(big)} states: {commands / ticks:.2f} "
        f"({commands} commands in {ticks} ticks)"
    )
    shadow = statistics.median(shadow_replay) / statistics.median(shadow_hand)
    print(
        f"shadow DOM ({SHADOW.relative_to(ROOT)}): replay median "
        f"{statistics.median(shadow_replay) * 1000:.1f} ms, handwritten "
        f"{statistics.median(shadow_hand) * 1000:.1f} ms"
    )
    print(f"ratio replay/handwritten: {replay / hand:.3f}; shadow DOM: {shadow:.3f}")


if __name__ == "__main__":
    main()
