"""No trigger is weakened: checks stand for every word of the trigger, on real pages of the
local wiki, or the state is declined naming the words that stand for nothing."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_netgent.synthesis import Context, Unresolved
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser
from pytest_netgent.synthesis.candidates import candidate_checks
from pytest_netgent.synthesis.grounding import ground
from pytest_netgent.synthesis.llm import LLMSynthesiser
from pytest_netgent.synthesis.observation import Observation
from pytest_netgent.workflow.automaton import Check
from pytest_netgent.workflow.spec import StateSpec


@pytest.fixture
def ctx(base_url: str) -> Context:
    return Context(workflow="w", base_url=base_url)


def checks_for(ctx: Context, page: Observation, *triggers: str) -> list[dict[str, Any]]:
    spec = StateSpec(name="S", triggers=list(triggers), end="done")
    return [c.model_dump() for c in BuiltinSynthesiser().define_triggers(ctx, page, spec)]


def test_an_article_named_by_a_link_is_not_the_article(page_at: Any, ctx: Context) -> None:
    """The home page links to the article: "a link named QUIC exists" would hold there, and
    the end state would pass before the workflow opened anything."""
    home = page_at("/wiki/", "ul.featured")
    with pytest.raises(Unresolved, match=r"not grounded: no check stands for 'article'"):
        checks_for(ctx, home, "The article titled 'QUIC' is shown")
    # where the article is, its heading stands for every word
    article = page_at("/wiki/article/quic", "h1")
    (check,) = checks_for(ctx, article, "The article titled 'QUIC' is shown")
    assert check == {
        "type": "element",
        "params": {"by": "css selector", "selector": "#firstHeading"},
    }


def test_a_count_a_state_and_a_value_are_never_dropped(page_at: Any, ctx: Context) -> None:
    results = page_at("/wiki/search?q=streaming", "#results li")
    # "single" is a count no check tests: the state is declined, naming it
    with pytest.raises(Unresolved, match=r"'single' \(a count\)"):
        checks_for(ctx, results, "A single search result is shown")
    # a value no reading tests ("a slider at 50") is declined, never "the box exists"
    with pytest.raises(Unresolved, match=r"'The search box is at 50'"):
        checks_for(ctx, results, "The search box is at 50")
    # a negation the reading understands is stood for by its check
    article = page_at("/wiki/article/quic", "h1")
    assert checks_for(ctx, article, "The Like button is not pressed") == [
        {
            "type": "element",
            "params": {"by": "css selector", "selector": '#like-button[aria-pressed="false"]'},
        }
    ]


def test_a_vague_trigger_is_declined_not_replaced_by_landmarks(page_at: Any, ctx: Context) -> None:
    article = page_at("/wiki/article/quic", "h1")
    with pytest.raises(Unresolved, match=r"not a literal trigger: 'We are reading happily'"):
        checks_for(ctx, article, "We are reading happily")
    # an end state nothing grounds is never taken on a guess
    spec = StateSpec(name="Done", triggers=["We are reading happily"], end="done")
    ctx.order = ["Done"]
    assert BuiltinSynthesiser().verdict(ctx, article, spec) == "unknown"


def test_each_check_records_the_words_it_stands_for(page_at: Any, ctx: Context) -> None:
    article = page_at("/wiki/article/quic", "h1")
    heading = Check(type="element", params={"by": "css selector", "selector": "#firstHeading"})
    url = Check(type="url", params={"url": ctx.base_url + "/wiki/article/", "match": "prefix"})
    grounding = ground("The QUIC article heading is shown", [url, heading], article)
    assert grounding.whole
    assert dict(grounding.stands_for) == {
        url.describe(): ["article"],
        heading.describe(): ["QUIC", "article", "heading"],
    }
    short = ground("The QUIC article heading is shown in dark mode", [heading], article)
    assert short.missing == ["dark", "mode"]


def test_a_models_checks_are_judged_by_the_same_rule(page_at: Any, ctx: Context) -> None:
    """The model chose the page's title for "The QUIC article is shown playing": the
    answer is refused with the words left over; where no check offered could stand for
    them, the model is not even asked."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    article = page_at("/wiki/article/quic", "h1")
    offered = candidate_checks(ctx, article)
    title = next(k for k, c in offered.items() if c.type == "title")
    url = next(k for k, c in offered.items() if c.type == "url")
    model = FakeListChatModel(
        responses=[f'{{"checks": ["{title}"]}}', f'{{"checks": ["{url}"]}}'] * 2
    )
    synth = LLMSynthesiser(model)
    spec = StateSpec(name="Reading", triggers=["The QUIC article page is open"], end="done")
    checks = synth.define_triggers(ctx, article, spec)
    # the title ('QUIC - NetWiki') says nothing of 'article': refused, then the URL chosen
    assert [c.type for c in checks] == ["url"]
    assert synth.usage.invalid_answers == 1
    asked = synth.usage.llm_calls
    never = StateSpec(name="Playing", triggers=["The QUIC video is playing muted"], end="done")
    with pytest.raises(Unresolved, match=r"none of the checks this page offers stands for"):
        synth.define_triggers(ctx, article, never)
    assert synth.usage.llm_calls == asked  # not asked: no answer could be right
