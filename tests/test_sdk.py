"""NetGent's Python SDK: its README example, against the local wiki."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from pytest_netgent import NetGent, NetgentError, StatePrompt


def test_netgent_readme_example_generates_then_replays(base_url: str) -> None:
    prompts = [
        StatePrompt(
            name="On Home Page",
            description="Start state",
            triggers=["If homepage is visible"],
            actions=[f"Navigate to {base_url}/wiki/"],
        ),
        StatePrompt(
            name="Search",
            triggers=["If the search box is visible"],
            actions=["Type 'QUIC' into the search box", "Press Enter"],
        ),
        StatePrompt(
            name="Results",
            triggers=["If at least one search result is shown"],
            actions=["Click the first result"],
        ),
        StatePrompt(
            name="Article", triggers=["If an article heading is shown"], end_state="Opened"
        ),
    ]
    # The builtin rules decide every step, the vague start trigger included (the blank
    # page's landmark): the model beside them is never asked (a call would end its replies).
    llm = GenericFakeChatModel(messages=iter([AIMessage(content="{}")]))
    with NetGent(llm=llm, llm_enabled=True) as agent:
        results = agent.run(state_prompts=prompts)
    assert results.error is None, results.error
    assert results.reached_end and results.end_state == "Opened"
    assert results.final_url.endswith("/wiki/article/quic")
    assert [s["name"] for s in results.state_repository] == [p.name for p in prompts]
    assert results.usage.llm_calls == 0 and results.usage.builtin_steps == 12
    assert next(llm.messages, None) is not None  # its one reply is still there

    with NetGent(llm=None, llm_enabled=False) as agent:
        replay = agent.run(state_prompts=[], state_repository=results.state_repository)
    assert replay.reached_end, replay.error
    assert [e.state for e in replay.timeline if e.event == "state"] == [p.name for p in prompts]


def test_netgent_config_keys_and_errors(base_url: str) -> None:
    with pytest.raises(NetgentError, match=r"unknown NetGent config keys \['action_delay'\]"):
        NetGent(config={"action_delay": 1})
    with pytest.raises(NetgentError, match="nothing to replay"):
        NetGent().run(state_prompts=[])
    repository = [
        {
            "name": "Home",
            "checks": [{"type": "element", "params": {"by": "id", "selector": "search-input"}}],
            "actions": [
                {"type": "type", "params": {"by": "id", "selector": "search-input", "text": "x"}},
                {"type": "press_key", "params": {"key": "Enter"}},
            ],
            "config": {"continuous": False},
        },
        {
            "name": "Never",
            "checks": [{"type": "element", "params": {"by": "id", "selector": "x"}}],
            "end_state": "never",
        },
    ]
    agent = NetGent(config={"action_period": 0.3, "state_timeout": 1, "recursion_limit": 3})
    try:
        agent.driver.get(base_url + "/wiki/")
        result = agent.run(state_repository=repository)
    finally:
        agent.close()
    assert not result.reached_end
    times = [e.elapsed for e in result.timeline if e.event == "action"]
    assert times[1] - times[0] >= 0.3  # action_period keeps NetGent's fixed pause
    # the search box is on every page, so Home fires again on each new page until the
    # recursion_limit ends the run
    assert "max_steps (3) reached without an end state" in str(result.error)
