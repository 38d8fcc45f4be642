"""Pages built of web components and frames: what synthesis sees, what checks and actions
reach, record and heal, in real headless Chromium against fixtures/components.py (shadow
roots four deep, a closed one, ids repeated across roots, a form three frames deep, a
widget in a frame of another site)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent import NetgentBrowser, State, Workflow
from pytest_netgent.browser.actions import ActionFailed, Actions
from pytest_netgent.browser.page import evaluate
from pytest_netgent.synthesis.llm import LLMSynthesiser
from pytest_netgent.synthesis.observation import Observation, observe
from pytest_netgent.workflow.automaton import Action, Check

from .helpers import Project, element, text

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "example_suites" / "components"
SEARCH = "ng-app >> ng-panel >> ng-search >> "  # the closed shadow root of the search box


def checks(driver: Any, *states: list[dict[str, Any]]) -> list[list[tuple[bool, str]]]:
    """Each state's check results on the page now."""
    tick = evaluate(driver, [{"checks": s} for s in states], None, 0)
    assert tick.ok, tick.error
    return tick.results


def observed(driver: Any, url: str) -> Observation:
    """What synthesis sees of the page at ``url``."""
    driver.get(url)
    return observe(driver)


def test_synthesis_sees_into_open_and_closed_shadow_roots(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    page = observed(netgent_browser.driver, base_url + "/components/")
    by_name = {e.name: e for e in page.elements}
    # the search box and its button live in a closed shadow root, three roots deep
    box = by_name["Search cities"]
    assert box.within == "ng-app >> ng-panel >> ng-search"
    assert box.selectors[0].selector == SEARCH + "#q"
    assert by_name["Search"].selectors[0].selector == SEARCH + "#go"
    # tab headers: plain <div>s with a click handler and the same id, told apart
    tabs = [by_name["Cities"], by_name["About"]]
    assert [t.tag for t in tabs] == ["div", "div"]
    assert {t.attrs["id"] for t in tabs} == {"tab"}
    assert tabs[0].selectors[0].selector != tabs[1].selectors[0].selector
    # text in shadow roots is page text
    assert "Pick a tab" in page.text
    assert "inside ng-app >> ng-panel >> ng-search" in box.describe()


def test_synthesis_sees_three_frames_deep_and_into_a_frame_of_another_site(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    page = observed(driver, base_url + "/components/frames")
    field = next(e for e in page.elements if e.name == "Message")
    assert field.within == "#outer >> #level1 >> #level2"
    assert field.selectors[0].selector == "#outer >> #level1 >> #level2 >> #message"
    driver.get(base_url + "/components/embed")
    driver.find_element("css selector", "#widget")  # the page itself, on 127.0.0.1
    page = observe(driver)
    field = next(e for e in page.elements if e.name == "Message")
    assert field.within == "#widget" and field.selectors[0].selector == "#widget >> #message"
    # its box is where it is in the page: inside the frame's box
    frame = driver.find_element("css selector", "#widget").rect
    assert field.box is not None
    assert frame["x"] < field.box.x < frame["x"] + frame["width"]
    assert frame["y"] < field.box.y < frame["y"] + frame["height"]
    assert "Widget ready" in page.text


def test_checks_reach_into_shadow_roots_and_frames_and_name_a_broken_link(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    driver.get(base_url + "/components/")
    results = checks(
        driver,
        [element(SEARCH + "#q"), text("Pick a tab")],  # closed root; text in a root
        [element("ng-app >> ng-panel >> #tabs > #tab")],  # an id repeated in its root
        [element("#q")],  # not in the document itself
        [element("ng-app >> ng-gone >> button")],
        [element("h1 >> button")],  # a host without a shadow root
    )
    assert results[0] == [(True, ""), (True, "")]
    assert results[1] == [(True, "")]
    assert results[2] == [(False, "not found")]
    assert results[3] == [(False, 'link 2 ("ng-gone") is not on the page')]
    assert "link 1" in results[4][0][1] and "no shadow root" in results[4][0][1]
    driver.get(base_url + "/components/frames")
    deep = checks(driver, [element("#outer >> #level1 >> #level2 >> #message"), text("Level 3")])
    assert deep == [[(True, ""), (True, "")]]
    driver.get(base_url + "/components/embed")
    Actions(driver, 5.0, lambda url: None).run(
        "click", {"by": "css selector", "selector": "#widget >> #message"}
    )  # waits until the other site's frame has loaded
    tick = evaluate(
        driver,
        [
            {"checks": [element("#widget >> #message"), text("Widget ready")]},
            {"checks": [element("#widget >> #nothing")]},
            {"checks": [text("Not anywhere")]},
        ],
        None,
        0,
    )
    assert tick.matched == [0]
    assert tick.results[1] == [(False, "not found")]
    assert tick.results[2][0][0] is False
    # a state's checks in several frames: the page's own heading, the other site's text,
    # that frame being inside a shadow root
    driver.get(base_url + "/components/embed-shadow")
    Actions(driver, 5.0, lambda url: None).run(
        "click", {"by": "css selector", "selector": "ng-embed >> #widget >> #message"}
    )
    tick = evaluate(driver, [{"checks": [element("h1"), text("Widget ready")]}], None, 0)
    assert tick.matched == [0], tick.results


def test_actions_reach_into_shadow_roots_and_frames(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    act = Actions(driver, 5.0, lambda url: None)
    driver.get(base_url + "/components/")
    act.run(
        "click",
        {"by": "css selector", "selector": "ng-app >> ng-panel >> #tabs > #tab", "index": 1},
    )
    act.run("type", {"by": "css selector", "selector": SEARCH + "#q", "text": "L"})
    act.run("press_key", {"key": "Enter", "by": "css selector", "selector": SEARCH + "#q"})
    # the search box's event crossed two shadow boundaries, as a person's search does
    assert checks(driver, [text("About this dashboard"), text("3 results for L")]) == [
        [(True, ""), (True, "")]
    ]
    card = "ng-app >> ng-panel >> ng-results >> ng-card >> #open"
    act.run("scroll_to", {"by": "css selector", "selector": card, "index": 1})
    act.run("hover", {"by": "css selector", "selector": card, "index": 1})
    act.run("click", {"by": "css selector", "selector": card, "index": 1})
    assert checks(driver, [text("Welcome to Lyon")]) == [[(True, "")]]
    # a frame re-created since it was last seen is found again
    driver.get(base_url + "/components/frames")
    form = "#outer >> #level1 >> #level2 >> "
    act.run("type", {"by": "css selector", "selector": form + "#message", "text": "one"})
    driver.execute_script(
        "const old = document.getElementById('outer'); const copy = old.cloneNode();"
        "old.replaceWith(copy);"
    )
    act.run("type", {"by": "css selector", "selector": form + "#message", "text": "two"})
    act.run("click", {"by": "xpath", "selector": form + "//button[normalize-space()='Send']"})
    assert checks(driver, [text("Sent: two")]) == [[(True, "")]]
    # the other site's frame: typed into and sent through WebDriver
    driver.get(base_url + "/components/embed")
    act.run("type", {"by": "css selector", "selector": "#widget >> #message", "text": "far"})
    act.run("click", {"by": "css selector", "selector": "#widget >> button"})
    tick = evaluate(driver, [{"checks": [text("Sent: far")]}], None, 0)
    assert tick.matched == [0]
    assert driver.execute_script("return location.pathname") == "/components/embed"


def test_an_action_whose_chain_is_broken_names_the_link(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    driver.get(base_url + "/components/")
    act = Actions(driver, 1.0, lambda url: None)
    with pytest.raises(ActionFailed) as failed:
        act.run("click", {"by": "css selector", "selector": "ng-app >> ng-gone >> button"})
    assert "link 2 ('ng-gone') of 'ng-app >> ng-gone >> button' is not on the page" in str(
        failed.value
    )
    with pytest.raises(ActionFailed) as failed:
        act.run("click", {"by": "xpath", "selector": SEARCH + "//button"})
    assert "XPath cannot reach inside a shadow root" in str(failed.value)
    # the page is left in its top document: checks go on there
    assert driver.execute_script("return window === window.top")


def test_a_frame_that_never_loads_fails_naming_the_frame(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    driver.get(base_url + "/components/")
    driver.execute_script(
        "const f = document.createElement('iframe'); f.id = 'gone';"
        "f.src = 'http://localhost:9/never'; document.body.appendChild(f);"
    )
    with pytest.raises(ActionFailed) as failed:
        Actions(driver, 1.0, lambda url: None).run(
            "type", {"by": "css selector", "selector": "#gone >> input", "text": "x"}
        )
    assert "'#gone >> input'" in str(failed.value) and "after waiting 1s" in str(failed.value)
    assert driver.execute_script("return window === window.top")


DASHBOARD = (EXAMPLES / "dashboard.netgent.yaml").read_text(encoding="utf-8")
FRAMES = (EXAMPLES / "frames.netgent.yaml").read_text(encoding="utf-8")


PROMO = """
name: promo
description: Apply a promo code in a form rendered on the server into a closed shadow root
start_url: "{base_url}/components/declared"
vars: {code: SPRING}
states:
  - name: Applied
    triggers: ["The page says 'Applied: {code}'"]
    end: Code applied
  - name: Checkout
    triggers: [The Promo code field is visible]
    actions:
      - Type {code} into the Promo code field
      - Click the 'Apply' button
"""


def test_a_closed_root_the_html_declares_is_seen_checked_and_acted_in(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    """No script attaches it (the parser does), so only DevTools reaches it: checks on a
    page just loaded, observation, and actions all get there."""
    driver = netgent_browser.driver
    driver.get(base_url + "/components/declared")
    host = "ng-coupon >> "
    # checks first, on a page no observation has looked at
    results = checks(
        driver, [element(host + "#code"), text("No code applied")], [element("h1 >> #code")]
    )
    assert results[0] == [(True, ""), (True, "")], results
    assert "no shadow root" in results[1][0][1]  # a host that has none is still named
    page = observed(driver, base_url + "/components/declared")
    field = next(e for e in page.elements if e.name == "Promo code")
    assert field.within == "ng-coupon" and field.selectors[0].selector == host + "#code"
    assert "No code applied" in page.text
    act = Actions(driver, 5.0, lambda url: None)
    act.run("type", {"by": "css selector", "selector": host + "#code", "text": "SPRING"})
    act.run("click", {"by": "css selector", "selector": host + "#apply"})
    tick = evaluate(driver, [{"checks": [text("Applied: SPRING")]}], None, 3000)
    assert tick.matched == [0], tick.results


def test_a_closed_root_the_html_declares_in_a_frame_of_another_site_is_seen(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    """The coupon form framed from the other host name: Chromium runs the frame in a
    process of its own, where the browser's guard hands its declared root over once the
    frame has loaded; observation and text checks then see inside."""
    driver = netgent_browser.driver
    driver.get(base_url + "/components/embed-declared")
    field = "#coupon >> ng-coupon >> #code"
    tick = evaluate(driver, [{"checks": [element(field), text("No code applied")]}], None, 5000)
    assert tick.matched == [0], tick.results
    seen: list[str] = []
    until = time.monotonic() + 5
    while "Promo code" not in seen and time.monotonic() < until:
        seen = [e.name for e in observe(driver).elements]
    page = observe(driver)
    box = next(e for e in page.elements if e.name == "Promo code")
    assert box.within == "#coupon >> ng-coupon" and box.selectors[0].selector == field


@pytest.mark.uc
def test_in_uc_mode_a_closed_root_in_a_frame_of_another_site_is_seen(project: Project) -> None:
    """UC mode has no guard to hand a frame's declared root over when it loads: entering
    the frame through WebDriver does it (WebDriver reaches closed roots), so observation
    and a text check see inside the coupon form framed from the other host name."""
    project.pytester.makepyfile(
        test_uc_frame=f"""
        import time
        from pytest_netgent.browser.page import evaluate
        from pytest_netgent.synthesis.observation import observe

        def test_inside(netgent_browser):
            driver = netgent_browser.driver
            assert type(driver).__module__.startswith("seleniumbase"), type(driver)
            driver.get({project.base_url!r} + "/components/embed-declared")
            text = {{"type": "text", "params": {{"text": "No code applied"}}}}
            tick = evaluate(driver, [{{"checks": [text]}}], None, 5000)
            assert tick.matched == [0], tick.results
            names = [e.name for e in observe(driver).elements]
            assert "Promo code" in names, names
        """
    )
    project.run_subprocess("--netgent-uc").assert_outcomes(passed=1)


def test_a_page_with_custom_elements_is_asked_once_for_hidden_roots(
    netgent_browser: NetgentBrowser, base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that fails on a page with custom elements without a root in sight asks
    DevTools for declared closed roots once for the page as it is; later looks wait in the
    page as before, until the page has other such elements (and a second has passed)."""
    import pytest_netgent.browser.page as page_module

    asked: list[int] = []
    real = page_module.adopt_declared_roots
    monkeypatch.setattr(page_module, "adopt_declared_roots", lambda d: asked.append(1) or real(d))
    monkeypatch.setattr(page_module, "HAND_OVER_S", 0.5)
    driver = netgent_browser.driver
    driver.get(base_url + "/components/declared")
    driver.execute_script("document.body.append(document.createElement('ng-plain'))")
    never = [{"checks": [text("Never shown")]}]
    assert evaluate(driver, never, None, 0).results[0][0][0] is False
    assert asked  # the coupon's root handed over, then the page asked again as it is now
    asked.clear()
    for _ in range(3):
        evaluate(driver, never, None, 0)
    assert asked == []
    driver.execute_script("document.body.append(document.createElement('ng-later'))")
    evaluate(driver, never, None, 0)
    assert asked == []  # within the half second: not asked again
    time.sleep(0.6)
    evaluate(driver, never, None, 0)
    assert asked == [1]
    # a page without custom elements never asks
    driver.get(base_url + "/components/frames")
    asked.clear()
    evaluate(driver, never, None, 0)
    assert asked == []


def test_record_from_nothing_then_replay_at_two_window_sizes(project: Project) -> None:
    project.workflow("dashboard", DASHBOARD)
    project.workflow("frames", FRAMES)
    project.workflow("promo", PROMO)  # a closed root the HTML declares
    recorded = project.run("--netgent-record")
    recorded.assert_outcomes(passed=4)
    cached = {
        p.stem: json.loads(p.read_text()) for p in (project.path / "__netgent__").rglob("*.json")
    }
    selectors = [
        a["params"].get("selector", "")
        for doc in cached.values()
        for s in doc["states"]
        for a in s["actions"]
    ]
    assert SEARCH + "#q" in selectors  # in the closed root
    assert "#outer >> #level1 >> #level2 >> #message" in selectors
    assert "#widget >> #message" in selectors  # in the other site's frame
    assert "ng-coupon >> #code" in selectors  # in the declared closed root
    for size in ("1280x900", "800x600"):
        project.run(f"--netgent-window-size={size}").assert_outcomes(passed=4)


def test_a_drifted_element_in_a_shadow_root_is_reported_then_healed(
    project: Project, changed_url: str
) -> None:
    project.workflow("dashboard", DASHBOARD)
    project.run("--netgent-record").assert_outcomes(passed=1)
    drift = project.run(base_url=changed_url)
    drift.assert_outcomes(failed=1)
    drift.stdout.fnmatch_lines(["*no clickable element matches css selector 'ng-app >> ng-panel*"])
    healed = project.run("--netgent-record", base_url=changed_url)
    healed.assert_outcomes(passed=1)
    # the card's 'Open' button was recorded by its role and name too, which the renamed
    # ids and classes did not change: 'Results' still replays and is left as it was
    healed.stdout.fnmatch_lines(["*city-search: healed 'Dashboard' -> *"])
    cache = next((project.path / "__netgent__").rglob("city-search.json")).read_text()
    assert SEARCH + "#query-box" in cache
    project.run(base_url=changed_url).assert_outcomes(passed=1)


def test_the_component_apps_of_the_corpus_replay_at_a_second_window_size(
    tmp_path: Path,
) -> None:
    """Panel's dashboard (Bokeh's widgets in shadow roots) and the same dashboard framed
    by the MkDocs site from another host name, at a size other than the corpus run's."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "corpus/panel", "corpus/embed", "-q",
         "-p", "no:randomly", "--netgent-window-size=900x700",
         f"--netgent-artifacts={tmp_path / 'artifacts'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout


@pytest.mark.parametrize("page", ["framed-player", "embed-player"])
def test_video_samples_come_from_a_video_in_a_closed_shadow_root_in_a_frame(
    netgent_browser: NetgentBrowser, page: str
) -> None:
    """The QoE sampler finds a player's <video> where embedded players keep it: in a
    closed shadow root, in a frame of this site or of another (out of process)."""
    workflow = Workflow.model_validate(
        {
            "name": "framed-player",
            "start_url": "{base_url}/components/" + page,
            "states": [{"name": "Player", "triggers": ["the player"], "end": "Watched"}],
        }
    )
    play = {"by": "css selector", "selector": "#stage >> ng-player >> #play"}
    player = State(
        name="Player",
        checks=[Check(type="element", params=play)],
        actions=[
            Action(type="start_video_sampling", params={"interval": 0.25}),
            Action(type="click", params=play),
            Action(type="wait", params={"seconds": 2.5}),
            Action(type="stop_video_sampling", params={}),
        ],
        end_state="Watched",
    )
    result = netgent_browser.run(workflow, states=[player])
    assert result.passed, result.error
    seen = [s for s in result.qoe if s.get("video") is not None]
    assert len(seen) >= 5, (result.qoe, result.timeline)
    assert seen[-1]["playback_time"] - seen[0]["playback_time"] > 1.0
    assert seen[-1]["width"] > 0 and seen[-1]["element"] == "#video"
    assert {s["video"] for s in seen} == {0}  # one video, numbered once
    if page == "embed-player":  # sampled in the other site's frame, on its own host
        assert seen[-1]["page"].startswith("http://localhost:")
        assert seen[-1]["page"].endswith("/components/player")
    else:  # sampled by the page itself, which reads its frames of the same site
        assert seen[-1]["page"].endswith("/components/framed-player")


@pytest.mark.uc
def test_in_uc_mode_a_video_in_a_closed_root_in_a_frame_of_another_site_is_sampled(
    project: Project,
) -> None:
    """UC mode (no guard, no script of ours before the page's): the embedded player's
    closed root is handed over as the sampler enters its frame through WebDriver."""
    path = project.workflow(
        "player",
        """
        name: player
        start_url: "{base_url}/components/embed-player"
        states:
          - name: Player
            triggers: [The player is shown]
            actions: [Sample the video, Play it, Watch, Stop sampling]
            end: Watched
        """,
    )
    play = "#stage >> ng-player >> #play"
    actions = [
        {"type": "start_video_sampling", "params": {"interval": 0.25}},
        {"type": "click", "params": {"by": "css selector", "selector": play}},
        {"type": "wait", "params": {"seconds": 2.5}},
        {"type": "stop_video_sampling", "params": {}},
    ]
    project.states(path, "player", {"Player": ([element(play)], actions)})
    # the samples are kept with the item's capture (qoe.jsonl beside its HAR)
    project.run_subprocess("--netgent-uc", "--netgent-capture=har").assert_outcomes(passed=1)
    (qoe,) = (project.path / "netgent-artifacts").glob("*/qoe.jsonl")
    rows = [json.loads(line) for line in qoe.read_text().splitlines()]
    seen = [r for r in rows if r.get("video") is not None]
    assert len(seen) >= 5 and seen[-1]["page"].endswith("/components/player"), rows
    assert seen[-1]["playback_time"] - seen[0]["playback_time"] > 1.0


def test_sampling_reaches_a_frame_of_another_site_on_a_later_page(
    netgent_browser: NetgentBrowser,
) -> None:
    """Sampling starts on a page without frames; the player of another site comes on the
    next page: its sampler is started there when the engine first sees that page."""
    workflow = Workflow.model_validate(
        {
            "name": "later-player",
            "start_url": "{base_url}/components/",
            "states": [{"name": "Home"}, {"name": "Player", "end": "Watched"}],
        }
    )
    play = {"by": "css selector", "selector": "#stage >> ng-player >> #play"}
    home = State(
        name="Home",
        checks=[Check(type="url", params={"url": "{base_url}/components/"})],
        actions=[
            Action(type="start_video_sampling", params={"interval": 0.25}),
            Action(type="navigate", params={"url": "{base_url}/components/embed-player"}),
        ],
    )
    player = State(
        name="Player",
        checks=[Check(type="element", params=play)],
        actions=[
            Action(type="click", params=play),
            Action(type="wait", params={"seconds": 2.5}),
            Action(type="stop_video_sampling", params={}),
        ],
        end_state="Watched",
    )
    result = netgent_browser.run(workflow, states=[home, player])
    assert result.passed, result.error
    seen = [s for s in result.qoe if s.get("video") is not None]
    assert len(seen) >= 5 and seen[-1]["page"].endswith("/components/player"), result.qoe
    assert seen[-1]["playback_time"] - seen[0]["playback_time"] > 1.0


def test_sampling_reaches_a_frame_of_another_site_added_to_the_page_later(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    """Sampling runs on a page without frames, which the engine has looked at; a button
    then adds the player of another site to the same page: the engine's next look counts
    a frame not sampled yet, and the sampler is started in it."""
    import time

    from selenium.webdriver.support.ui import WebDriverWait

    from pytest_netgent.browser.chain import Chain
    from pytest_netgent.browser.page import evaluate
    from pytest_netgent.browser.qoe import VideoSampler

    driver = netgent_browser.driver
    driver.get(base_url + "/components/embed-later")
    sampler = VideoSampler(driver, time.time())
    sampler.start(0.25)
    first = evaluate(driver, [], None, 0)
    assert sampler.see(first.doc, first.qoe, first.unsampled)  # a new page: followed
    sampler.follow_frames()
    driver.find_element("id", "show").click()
    chain = Chain(driver)
    play = "#stage >> ng-player >> #play"
    WebDriverWait(driver, 10).until(lambda _: chain.find("css selector", play))
    chain.find("css selector", play)[0].click()
    chain.leave()
    later = evaluate(driver, [], None, 0)
    assert later.doc == first.doc and later.unsampled == 1
    assert sampler.see(later.doc, later.qoe, later.unsampled)  # the same page, a new frame
    sampler.follow_frames()
    time.sleep(2.5)
    after = evaluate(driver, [], None, 0)
    assert after.unsampled == 0  # its sampler is heard from
    assert not sampler.see(after.doc, after.qoe, after.unsampled)
    sampler.close()
    seen = [s for s in sampler.samples if s.get("video") is not None]
    assert len(seen) >= 5 and seen[-1]["page"].endswith("/components/player"), sampler.samples
    assert seen[-1]["playback_time"] - seen[0]["playback_time"] > 1.0


def test_a_model_heals_an_element_inside_a_shadow_root(
    netgent_browser: NetgentBrowser, changed_url: str, tmp_path: Path
) -> None:
    """The states recorded on the original dashboard, replayed on the changed one with a
    model (no builtin rules): it is shown the elements with the roots they are in and
    picks the renamed ones, whose chained selectors go to the cache."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from oracle import OracleChatModel
    finally:
        sys.path.remove(str(ROOT / "bench"))

    shutil.copytree(EXAMPLES, tmp_path / "components")
    prompts: list[str] = []

    class Listening(OracleChatModel):
        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            prompts.append(str(messages[0].content))
            return super()._generate(messages, stop, run_manager, **kw)

    model = Listening()
    result = netgent_browser.run(
        tmp_path / "components" / "dashboard.netgent.yaml",
        "city-search",
        base_url=changed_url,
        record="missing",
        synthesiser=LLMSynthesiser(model),
        check=False,
    )
    assert result.passed, result.error
    assert result.record is not None and "Dashboard" in result.record.healed
    assert model.calls >= 3
    assert any("inside ng-app >> ng-panel >> ng-search" in p for p in prompts)
    cache = (tmp_path / "components" / "__netgent__" / "dashboard" / "city-search.json").read_text()
    assert SEARCH + "#query-box" in cache and SEARCH + "#submit-query-box" in cache


def test_a_model_records_a_single_page_app_from_nothing_and_it_replays(
    netgent_browser: NetgentBrowser, tmp_path: Path
) -> None:
    """The dashboard keeps one address while its views change; the model (no builtin
    rules) picks the address and the text each state's trigger names, which only its own
    view shows: the recording is verified whole (no state's checks hold on another view)
    and replays."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from oracle import OracleChatModel
    finally:
        sys.path.remove(str(ROOT / "bench"))

    shutil.copytree(EXAMPLES, tmp_path / "components")
    shutil.rmtree(tmp_path / "components" / "__netgent__")
    file = tmp_path / "components" / "dashboard.netgent.yaml"
    model = LLMSynthesiser(OracleChatModel())
    recorded = netgent_browser.run(file, "city-search", record="all", synthesiser=model)
    told = [e.detail for e in recorded.timeline if e.event == "record"]
    assert told == ["the states made replay to the end"], told  # verified before written
    replayed = netgent_browser.run(file, "city-search")
    assert replayed.states_visited == ["Dashboard", "Results", "City"]
    # an end state the model picks where its literal trigger ("The page says 'Sent: ...'")
    # does not hold would pass the item on a guess: record asks again without it
    frames = tmp_path / "components" / "frames.netgent.yaml"
    netgent_browser.run(frames, "deep-frame-note", record="all", synthesiser=model)
    assert netgent_browser.run(frames, "deep-frame-note").states_visited == ["Form", "Sent"]


def test_the_traffic_of_a_frame_of_another_site_is_in_its_items_capture(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
         "example_suites/components/frames.netgent.yaml::widget-note",
         "--netgent-capture=har", f"--netgent-artifacts={tmp_path}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    (har,) = tmp_path.rglob("capture.har")
    urls = [e["request"]["url"] for e in json.loads(har.read_text())["log"]["entries"]]
    assert any(u.startswith("http://127.0.0.1:") and u.endswith("/components/embed") for u in urls)
    # the widget, framed from localhost: another site, another process, the same capture
    assert any(u.startswith("http://localhost:") and u.endswith("/components/widget") for u in urls)


def test_a_new_tabs_first_page_has_its_closed_shadow_roots_seen(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    driver = netgent_browser.driver
    netgent_browser._pool.checked_guard()  # a run's guard: it prepares every new tab
    driver.get(base_url + "/components/frames")
    first = driver.current_window_handle
    driver.execute_script("window.open(arguments[0])", base_url + "/components/")
    new = next(h for h in driver.window_handles if h != first)
    try:
        driver.switch_to.window(new)
        Actions(driver, 5.0, lambda url: None).run(
            "click", {"by": "css selector", "selector": SEARCH + "#q"}
        )
        assert checks(driver, [element(SEARCH + "#q")]) == [[(True, "")]]
    finally:
        driver.close()
        driver.switch_to.window(first)
