"""A NetGent state's checks and actions in words, as a converted workflow file states
them (each a trigger or an action a person reads; the cache holds the states themselves)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def check_words(check: Any) -> str:
    said = _check_said(check)
    return f"It is not so that {said[0].lower()}{said[1:]}" if check.params.get("negate") else said


def _check_said(check: Any) -> str:
    p = check.params
    from ..browser.session import START_PAGES

    if check.type == "url":
        if p["url"] in START_PAGES:
            return "The browser shows its start page"
        return f"The URL is {p['url']}"
    if check.type == "element":
        shown = "present" if check.presence_only else "visible"
        return f"The element {p['by']} '{p['selector']}' is {shown}"
    if check.type == "text":
        return f"'{p['text']}' is shown" + (" (in any case)" if p.get("ignore_case") else "")
    if check.type == "title":
        return f"The page title contains '{p['title']}'"
    if check.type == "always_true":
        return "Always"
    if check.type in ("role", "media"):
        return f"The page shows {check.describe()}"
    return f"The script `{p['script']}` is true"


def action_words(action: Any) -> str:
    p = action.params
    if "role" in p:
        where = f"the {p['role']}" + (f" '{p['name']}'" if "name" in p else "")
    elif "selector" in p:
        where = f"the element {p.get('by', 'css selector')} '{p['selector']}'"
    elif "x" in p:
        where = f"the point ({p['x']}, {p['y']})"
    else:
        where = "the page"
    words: dict[str, Callable[[], str]] = {
        "navigate": lambda: f"Navigate to {p['url']}",
        "click": lambda: f"Click {where}",
        "type": lambda: f"Type '{p['text']}' into {where}",
        "press_key": lambda: f"Press {p['key']}",
        "scroll": lambda: (
            f"Scroll {p.get('direction', 'down')} "
            f"{p.get('pixels', p.get('amount', ''))} pixels in {where}".replace("  ", " ")
        ),
        "scroll_to": lambda: f"Scroll to {where}",
        "move": lambda: f"Move the pointer to {where}",
        "hover": lambda: f"Hover over {where}",
        "set_value": lambda: f"Set {where} to {p['value']}",
        "wait": lambda: f"Wait {p['seconds']} seconds",
        "start_stats_logging": lambda: (
            "Log video stats every "
            f"{p.get('interval', 2.0)} seconds to {p.get('out_path', 'netgent_video_stats.jsonl')}"
        ),
        "stop_stats_logging": lambda: "Stop logging video stats",
        **_newer_action_words(p),
    }
    describe: Callable[[], str] = action.describe
    return words.get(action.type, describe)()


def _newer_action_words(p: dict[str, Any]) -> dict[str, Callable[[], str]]:
    """Words for NetGent's newer actions (tabs by name, texts, waits, WebRTC, env values)."""

    def listed(value: Any) -> str:
        return " or ".join(f"'{v}'" for v in (value if isinstance(value, list) else [value]))

    shown = "shown" if str(p.get("visible", True)).lower() not in ("false", "0", "no") else "gone"
    words: dict[str, Callable[[], str]] = {
        "remember_tab": lambda: f"Remember this tab as '{p['name']}'",
        "store_current_url": lambda: f"Store the current URL as '{p['name']}'",
        "open_stored_url": lambda: (
            f"Open the stored URL '{p['name']}'{p.get('suffix') or ''} in a new tab"
        ),
        "click_first_text": lambda: f"Click the button reading {listed(p['texts'])}",
        "click_accessible_name": lambda: f"Click the button named {listed(p['names'])}",
        "wait_for_element": lambda: f"Wait until '{p['selector']}' is {shown}",
        "wait_for_text": lambda: f"Wait until '{p['text']}' is {shown}",
        "start_webrtc_tracking": lambda: "Start tracking the WebRTC connections",
        "collect_webrtc_metrics": lambda: f"Write the WebRTC metrics to {p['out_path']}",
        "set_env_value": lambda: (
            f"Type the value of ${p['env_var']} into the first of {listed(p['selectors'])}"
        ),
        "type_env": lambda: f"Type the value of ${p['env_var']} into '{p.get('selector', '')}'",
        "click_first": lambda: f"Click the first of {listed(p['selectors'])}",
        "click_text_env": lambda: f"Click the element reading the value of ${p['env_var']}",
        "play_video": lambda: f"Play the video '{p.get('selector') or 'video'}'",
        "go_to_url": lambda: (
            f"Navigate to {p['url']}" + (" in a new tab" if p.get("new_tab") else "")
        ),
    }
    if "name" in p:
        words["switch_tab"] = lambda: f"Switch to the tab '{p['name']}'"
    return {**words, **_playwright_words(p)}


def _playwright_words(p: dict[str, Any]) -> dict[str, Callable[[], str]]:
    """Words for NetGent's Playwright-era actions and its measurement steps."""
    where = f"the element {p.get('by', 'css selector')} '{p.get('selector', '')}'"
    words: dict[str, Callable[[], str]] = {
        "click_element": lambda: f"Click {where}",
        "input_text": lambda: f"Type '{p['text']}' into {where}",
        "send_keys": lambda: f"Press {p['keys']}",
        "scroll_to_text": lambda: f"Scroll to the text '{p['text']}'",
        "select_dropdown_option": lambda: f"Choose '{p['text']}' in {where}",
        "ping": lambda: f"Ping {p['host']} {p.get('count', 4)} times",
        "iperf": lambda: (
            f"Measure the throughput to {p['host']} port {p.get('port', 5201)} with iperf3 "
            f"for {p.get('duration_seconds', 10)} seconds"
        ),
        "ndt": lambda: "Run an NDT7 speed test",
        "wget": lambda: f"Download {p['url']} with wget",
    }
    if "num_pages" in p or "down" in p:
        way = "down" if str(p.get("down", True)).lower() in ("true", "1", "yes") else "up"
        words["scroll"] = lambda: f"Scroll {way} {p.get('num_pages', 1)} pages"
    return words
