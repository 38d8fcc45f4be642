"""NetGent's message models: fields, string forms, and the context file helpers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_netgent import (
    ActionOutput,
    Decision,
    Element,
    ExecutedState,
    Metadata,
    Reflection,
    StatePrompt,
    Toolcall,
    format_context,
    format_context_without_reflection,
    load_context_from_file,
    save_context_to_file,
)


def test_string_forms_follow_netgent() -> None:
    element = Element(enhanced_css_selector="button#submit", text="Submit Form", x=450, y=320)
    assert str(element) == (
        "<element>\n    enhanced css selector: button#submit\n    text: Submit Form\n"
        "    x: 450, y: 320\n</element>"
    )
    prompt = StatePrompt(
        name="Submit Search",
        description="Execute a search query",
        triggers=["If search box is visible", "If on search page"],
        actions=["Type the search query into the search box", "Press Enter"],
    )
    assert str(prompt) == (
        "## State: Submit Search\n\n- **Description:** Execute a search query\n"
        "- **Triggers:**\n  1. If search box is visible\n  2. If on search page\n"
        "- **Actions:**\n  1. Type the search query into the search box\n  2. Press Enter"
    )
    call = Toolcall(name="click", args={"by": "id", "selector": "submit"}, element=element)
    assert str(call).startswith("<toolcall>\n    click(by='id', selector='submit')\n")


def test_action_output_needs_reasoning_and_a_known_action() -> None:
    with pytest.raises(ValidationError, match="reasoning"):
        ActionOutput(action="click")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="action"):
        ActionOutput(action="teleport", reasoning="x")  # type: ignore[arg-type]
    action = ActionOutput(action="click", mmid=1, params={}, reasoning="Clicking submit")
    assert action.done and action.model_copy(update={"reasoning": "r"}).reasoning == "r"


def test_context_round_trips_and_formats(tmp_path: Path) -> None:
    context = [
        Metadata(timestamp=1, url="https://example.com", title="Example", screenshot="AAAA"),
        Decision(action="Navigate to login page", reasoning="not signed in"),
        ActionOutput(action="navigate", params={"url": "https://example.com"}, reasoning="go"),
        Toolcall(name="navigate", args={"url": "https://example.com"}, error="timed out"),
        Reflection(is_successful=False, reason="the page did not load", next_step="retry"),
        ExecutedState(timestamp=2, name="Login", checks=[{"type": "url", "params": {}}]),
    ]
    path = tmp_path / "context.json"
    save_context_to_file(context, path)
    assert "AAAA" not in path.read_text()  # screenshots are left out by default
    loaded = load_context_from_file(path)
    expected = [context[0].model_copy(update={"screenshot": None}), *context[1:]]
    assert loaded == expected
    text = format_context(loaded)
    assert text.startswith("<metadata timestep=1>\n    url: https://example.com")
    assert "error: timed out" in text and "<reflection>" in text
    assert "<reflection>" not in format_context_without_reflection(loaded)


def test_load_recognises_untyped_entries_and_reports_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "netgent_log.json"
    path.write_text(
        json.dumps(
            [
                {"action": "Open the login page", "reasoning": "needed"},
                {"action": "click", "mmid": 3, "params": {}, "reasoning": "submit"},
                {"is_successful": True, "reason": "clicked"},
                {"name": "type", "args": {"text": "x"}},
            ]
        )
    )
    kinds = [type(m).__name__ for m in load_context_from_file(path)]
    assert kinds == ["Decision", "ActionOutput", "Reflection", "Toolcall"]
    path.write_text(json.dumps([{"type": "Gossip"}]))
    with pytest.raises(ValueError, match=r"netgent_log.json: entry 0 has unknown type 'Gossip'"):
        load_context_from_file(path)
    path.write_text(json.dumps([{"type": "Decision", "action": "x"}]))
    with pytest.raises(ValueError, match=r"entry 0 is no message \(Decision: Field required"):
        load_context_from_file(path)
    path.write_text("[{")
    with pytest.raises(ValueError, match="line 1: invalid JSON"):
        load_context_from_file(path)
