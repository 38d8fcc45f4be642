"""The builtin synthesiser on real pages of the local sites."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_netgent.synthesis import Context, NothingApplies, Unresolved
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser
from pytest_netgent.synthesis.observation import Observation
from pytest_netgent.synthesis.state_selection import holds_on
from pytest_netgent.synthesis.triggers import NotHolding
from pytest_netgent.synthesis.words import parse_target
from pytest_netgent.workflow.automaton import Check
from pytest_netgent.workflow.spec import StateSpec

STATE = StateSpec(name="S", actions=["x"], end="done")


@pytest.fixture
def ctx(base_url: str) -> Context:
    return Context(workflow="w", values={"query": "QUIC"}, secrets=["password"], base_url=base_url)


def act(ctx: Context, page: Observation, text: str) -> list[dict[str, Any]]:
    actions, finished = BuiltinSynthesiser().resolve_instruction(ctx, page, STATE, text, [])
    assert finished
    return [a.model_dump() for a in actions]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Navigate to {base_url}/wiki/login",
            {"type": "navigate", "params": {"url": "{base_url}/wiki/login"}},
        ),
        (
            "Go to /wiki/article/quic",
            {"type": "navigate", "params": {"url": "{base_url}/wiki/article/quic"}},
        ),
        ("Press Enter", {"type": "press_key", "params": {"key": "Enter"}}),
        ("press the page down key", {"type": "press_key", "params": {"key": "PageDown"}}),
        ("Wait 10 seconds", {"type": "wait", "params": {"seconds": 10.0}}),
        ("Wait 250 ms", {"type": "wait", "params": {"seconds": 0.25}}),
        ("Wait for 2 minutes", {"type": "wait", "params": {"seconds": 120.0}}),
        ("Scroll down 3 times", {"type": "scroll", "params": {"direction": "down", "times": 3}}),
        (
            "Scroll up by 400 pixels",
            {"type": "scroll", "params": {"direction": "up", "amount": 400}},
        ),
        ("Go back", {"type": "go_back", "params": {}}),
        ("Switch to the new tab", {"type": "switch_tab", "params": {"index": -1}}),
        ("Switch to the first tab", {"type": "switch_tab", "params": {"index": 0}}),
        ("Start sampling video quality", {"type": "start_video_sampling", "params": {}}),
        (
            "Start sampling video quality every 0.5 seconds",
            {"type": "start_video_sampling", "params": {"interval": 0.5}},
        ),
        (
            "begin the video sampler every 250 ms",
            {"type": "start_video_sampling", "params": {"interval": 0.25}},
        ),
        ("Stop sampling video quality", {"type": "stop_video_sampling", "params": {}}),
        ("Stop the video sampler", {"type": "stop_video_sampling", "params": {}}),
        (
            "Log video stats every 2 seconds to stats.jsonl",
            {"type": "start_stats_logging", "params": {"interval": 2.0, "out_path": "stats.jsonl"}},
        ),
        (
            "Start logging stats for nerds every 500 ms",
            {"type": "start_stats_logging", "params": {"interval": 0.5}},
        ),
        (
            "Log the video stats to QoE/Run1.jsonl",
            {"type": "start_stats_logging", "params": {"out_path": "QoE/Run1.jsonl"}},
        ),
        ("Stop logging video stats", {"type": "stop_stats_logging", "params": {}}),
        ("Stop the stats logging.", {"type": "stop_stats_logging", "params": {}}),
    ],
)
def test_instructions_without_targets(
    page_at: Any, ctx: Context, text: str, expected: dict[str, Any]
) -> None:
    assert act(ctx, page_at("/wiki/"), text) == [expected]


def test_type_into_fields_by_label_placeholder_and_role(page_at: Any, ctx: Context) -> None:
    login = page_at("/wiki/login")
    assert act(ctx, login, "Type {user} into the Username field") == [
        {
            "type": "type",
            "params": {"by": "css selector", "selector": "#username", "text": "{user}"},
        }
    ]
    assert act(ctx, login, "Enter {password} in the password box")[0]["params"] == {
        "by": "css selector",
        "selector": "#password",
        "text": "{password}",
    }
    # a literal equal to a var's value is stored as its placeholder
    assert act(ctx, login, "Type 'QUIC' into the search box")[0]["params"]["text"] == "{query}"


def test_a_search_is_typed_into_the_search_field_and_sent(page_at: Any, ctx: Context) -> None:
    home = page_at("/wiki/")
    sent = [
        {"type": "type", "params": {"by": "css selector", "selector": "#search-input",
                                    "text": "{query}"}},
        {"type": "press_key", "params": {"key": "Enter"}},
    ]  # fmt: skip
    assert act(ctx, home, "Search for {query}") == sent
    assert act(ctx, home, "Look up 'QUIC'") == sent  # the var's value, stored as its name
    assert act(ctx, home, "search {query} in the search box") == sent
    assert act(ctx, home, "Look up {query} using the site's finder") == sent
    login = page_at("/wiki/login")
    assert act(ctx, login, "Search for {query} using the Username field")[0]["params"][
        "selector"
    ] == "#username"  # fmt: skip


def test_click_by_quoted_text_role_and_synonym(page_at: Any, ctx: Context) -> None:
    login = page_at("/wiki/login")
    # "Log in" is both a link in the header and the form's button: the role decides
    assert act(ctx, login, "Click the 'Log in' button")[0]["params"] == {
        "by": "css selector",
        "selector": "#login-button",
    }
    assert act(ctx, login, "Click the 'Log in' link")[0]["params"] == {
        "by": "css selector",
        "selector": "#login-link",
    }
    assert act(ctx, login, "Click the sign in button")[0]["params"]["selector"] == "#login-button"


def test_ordinals_use_the_list_and_an_index(page_at: Any, ctx: Context) -> None:
    results = page_at("/wiki/search?q=streaming", "#results li")
    first = act(ctx, results, "Click the first result")[0]["params"]
    third = act(ctx, results, "Click the third result")[0]["params"]
    last = act(ctx, results, "Click the last result")[0]["params"]
    assert first == {
        "by": "css selector",
        "selector": "#results > li.result a.result-link",
        "index": 0,
    }
    assert (third["index"], last["index"]) == (2, -1)
    with pytest.raises(Unresolved, match=r"the list on .* has only \d+ items"):
        act(ctx, results, "Click the tenth result")


def test_select_hover_and_scroll_to(page_at: Any, ctx: Context) -> None:
    article = page_at("/wiki/article/quic")
    assert act(ctx, article, "Select Deutsch from the Language menu") == [
        {"type": "select", "params": {"by": "css selector", "selector": "#lang", "text": "Deutsch"}}
    ]
    assert act(ctx, article, "Hover over 'Cite this page'")[0] == {
        "type": "hover",
        "params": {"by": "css selector", "selector": "#cite"},
    }
    assert act(ctx, article, "Scroll to the Printable version link")[0]["params"] == {
        "by": "css selector",
        "selector": "#print-link",
    }
    with pytest.raises(Unresolved, match=r"has no option 'Klingon' \(options: English, Deutsch"):
        act(ctx, article, "Select Klingon from the Language menu")


def test_no_match_and_ambiguity_are_reported_not_guessed(page_at: Any, ctx: Context) -> None:
    home = page_at("/wiki/")
    with pytest.raises(Unresolved, match=r"no element on .*/wiki/ matches 'purple unicorn'"):
        act(ctx, home, "Click the purple unicorn")
    login = page_at("/wiki/login")
    with pytest.raises(
        Unresolved, match=r"'Log in' is ambiguous on .*: \[\d+\] <a> 'Log in'.*<button>"
    ):
        act(ctx, login, "Click 'Log in'")
    with pytest.raises(
        Unresolved, match=r"not a literal instruction the builtin synthesiser knows"
    ):
        act(ctx, home, "Do whatever a researcher would do")
    results = page_at("/wiki/search?q=quic", "#results li")
    with pytest.raises(Unresolved, match=r"no list on .* looks like 'flavour'"):
        act(ctx, results, "Click the first flavour")


def test_triggers(page_at: Any, ctx: Context) -> None:
    synth = BuiltinSynthesiser()

    def triggers(page: Observation, *texts: str) -> list[dict[str, Any]]:
        spec = StateSpec(name="S", triggers=list(texts), end="done")
        return [c.model_dump() for c in synth.define_triggers(ctx, page, spec)]

    results = page_at("/wiki/search?q=streaming", "#results li")
    assert triggers(results, "The URL contains /wiki/search") == [
        {"type": "url", "params": {"url": "/wiki/search", "match": "contains"}}
    ]
    assert triggers(results, "The page title contains 'Search'") == [
        {"type": "title", "params": {"title": "Search", "match": "contains"}}
    ]
    # "search" is said by the address only: it is pinned, as the trigger says
    assert triggers(results, "At least one search result is shown") == [
        {"type": "url", "params": {"url": "{base_url}/wiki/search?", "match": "prefix"}},
        {
            "type": "element",
            "params": {"by": "css selector", "selector": "#results > li.result a.result-link"},
        },
    ]
    assert triggers(results, "'Search results' is shown") == [
        {"type": "text", "params": {"text": "Search results"}}
    ]
    # the search box is in the site header, on every page: pinned by the URL too
    assert triggers(results, "The search box is visible") == [
        {"type": "url", "params": {"url": "{base_url}/wiki/search?", "match": "prefix"}},
        {"type": "element", "params": {"by": "css selector", "selector": "#search-input"}},
    ]
    article = page_at("/wiki/article/quic")
    assert triggers(article, "The Like button is not pressed") == [
        {
            "type": "element",
            "params": {"by": "css selector", "selector": '#like-button[aria-pressed="false"]'},
        }
    ]
    assert triggers(article, "An article heading is shown") == [
        {"type": "url", "params": {"url": "{base_url}/wiki/article/", "match": "prefix"}},
        {"type": "element", "params": {"by": "css selector", "selector": "#firstHeading"}},
    ]
    with pytest.raises(Unresolved, match=r"button 'Like' is not pressed"):
        triggers(article, "The Like button is pressed")  # parses, but does not hold now
    assert triggers(article, "The 'QUIC' heading is shown") == [
        {"type": "element", "params": {"by": "css selector", "selector": "#firstHeading"}}
    ]
    # a vague trigger is declined, never replaced by the page's landmarks (which would hold
    # on every article)
    with pytest.raises(Unresolved, match="not a literal trigger: 'We are reading happily'"):
        triggers(article, "We are reading happily")


def test_state_selection_follows_declared_order(page_at: Any, ctx: Context) -> None:
    states = [
        StateSpec(name="Home", triggers=["The search box is visible"], actions=["Press Enter"]),
        StateSpec(name="Results", triggers=["At least one search result is shown"]),
        StateSpec(name="Article", triggers=["An article heading is shown"], end="done"),
    ]
    ctx.order = [s.name for s in states]
    results = page_at("/wiki/search?q=streaming", "#results li")
    synth = BuiltinSynthesiser()
    assert synth.select_state(ctx, results, states).name == "Home"  # the start: first state
    ctx.history = ["Home"]
    assert synth.select_state(ctx, results, states).name == "Results"
    article = page_at("/wiki/article/quic")
    ctx.history = ["Home", "Results"]
    assert synth.select_state(ctx, article, states).name == "Article"
    vague = [StateSpec(name="Somewhere", triggers=["We are somewhere nice"], end="done")]
    ctx.history, ctx.order = [], ["Somewhere"]
    weighed = r"'Somewhere' \(unknown, an end state: 'We are somewhere nice': not a literal"
    # an end state passes the item: the rules alone never guess one (a false pass); the
    # decline names each state weighed and why it was not taken
    with pytest.raises(NothingApplies, match=weighed):
        synth.select_state(ctx, article, vague)
    # a vague state that is not an end may still be tried: a wrong guess fails later
    middle = [StateSpec(name="Somewhere", triggers=["We are somewhere nice"])]
    assert synth.select_state(ctx, article, middle).name == "Somewhere"


def test_an_end_state_is_chosen_only_on_what_the_page_shows(page_at: Any, ctx: Context) -> None:
    synth = BuiltinSynthesiser()
    article = page_at("/wiki/article/quic")
    output = StateSpec(name="Output", triggers=["The cell output shows 42"], end="ran")
    editor = StateSpec(name="Editor", triggers=["The search box is visible"])
    ctx.history, ctx.order = [], ["Output", "Editor"]
    # 'Output' is declared first, but its one word is not on the page
    assert synth.select_state(ctx, article, [output, editor]).name == "Editor"
    quic = StateSpec(name="QUIC", triggers=["The article shows QUIC"], end="read")
    ctx.order = ["QUIC"]
    checks = synth.define_triggers(ctx, article, quic)
    # the word on the page, stored as the placeholder whose value it is
    assert ctx.values["query"] == "QUIC"
    assert {"type": "text", "params": {"text": "{query}"}} in [c.model_dump() for c in checks]


def test_same_page_and_prompt_give_the_same_states(page_at: Any, ctx: Context) -> None:
    spec = StateSpec(
        name="Results",
        triggers=["At least one search result is shown"],
        actions=["Click the first result"],
        end="done",
    )
    outputs = set()
    for _ in range(3):
        page = page_at("/wiki/search?q=streaming", "#results li")
        synth = BuiltinSynthesiser()
        checks = synth.define_triggers(ctx, page, spec)
        actions, _ = synth.resolve_instruction(ctx, page, spec, spec.actions[0], [])
        outputs.add(repr((checks, actions)))
    assert len(outputs) == 1


def test_parse_target() -> None:
    t = parse_target("the first 'Sign in' button")
    assert (t.phrase, t.quoted, t.role, t.ordinal) == ("Sign in", True, "button", 0)
    t = parse_target("the Quality menu")
    assert (t.phrase, t.role) == ("Quality", "select")
    # two role words in a row: both are taken off (this once looped forever)
    t = parse_target("the product title heading")
    assert (t.phrase, t.role) == ("product", "heading")


def test_a_state_that_ran_is_taken_again_on_a_guess_only_once_the_page_settled(
    page_at: Any, ctx: Context
) -> None:
    """The state declared next is an end whose triggers do not hold yet (a notebook whose
    kernel starts): the state that ran before, its words still on the page, is not taken
    again until the page had time to settle; then it is."""
    browse = StateSpec(
        name="Browse", triggers=["We are browsing", "QUIC is listed"], actions=["Click QUIC"]
    )
    done = StateSpec(name="Done", triggers=["The page says 'Kernel idle'"], end="opened")
    states = [browse, done]
    ctx.order, ctx.history, ctx.settle = ["Browse", "Done"], ["Browse"], 15.0
    article = page_at("/wiki/article/quic")
    synth = BuiltinSynthesiser()
    ctx.looked = 2.0
    with pytest.raises(NothingApplies, match=r"'Browse' would run again on .* \(partial\)"):
        synth.select_state(ctx, article, states)
    ctx.looked = 15.0
    assert synth.select_state(ctx, article, states).name == "Browse"
    ctx.history, ctx.looked = [], 0.0  # at the start nothing ran: no wait
    assert synth.select_state(ctx, article, states).name == "Browse"


def test_a_check_is_judged_on_a_page_as_read_as_the_engine_judges_it() -> None:
    """What the recorder judges on a page it read earlier (a state chosen again, an end
    state guessed) compares as the engine does in the page: each check type's default
    match, a URL's query left out when asked, placeholders filled."""
    ctx = Context(workflow="w", values={"q": "Kettle"}, base_url="http://h")
    page = Observation(url="http://h/shop/?q=Kettle", title="Shop results", text="3 products")

    def held(kind: str, **params: Any) -> bool:
        return holds_on(Check(type=kind, params=params), page, ctx)

    assert held("url", url="{base_url}/shop/?q={q}")
    assert not held("url", url="{base_url}/shop/")  # exact by default
    assert held("url", url="{base_url}/shop/", ignore_query=True)
    assert held("url", url="{base_url}/shop", match="prefix")
    assert held("url", url=r"q=\w+$", match="pattern")
    assert held("title", title="Shop")  # contains by default
    assert not held("title", title="Shop", match="exact")
    assert held("text", text="3 products") and not held("text", text="{q}")
    assert held("element", by="css selector", selector="#not-judged-here")


def test_a_state_chosen_on_a_third_page_keeps_checks_that_hold_on_every_page_before() -> None:
    """A state chosen again keeps the checks that also hold where it was made; chosen a
    third time, on each page it was chosen on until then, not on the last one only."""
    from pytest_netgent.synthesis.ends import also_where_made

    ctx = Context(workflow="w", base_url="http://h")
    catalog = Observation(url="http://h/shop/", title="Shop: catalog", text="Kettle Toaster")
    results = Observation(url="http://h/shop/?q=k", title="Shop: results", text="Kettle")
    shop = Check(type="title", params={"title": "Shop"})
    kettle = Check(type="text", params={"text": "Kettle"})
    toaster = Check(type="text", params={"text": "Toaster"})
    listed = Check(type="element", params={"by": "css selector", "selector": "li"})
    checks = [shop, kettle, toaster, listed]
    assert also_where_made(ctx, checks, [catalog]) == [shop, kettle, toaster]
    assert also_where_made(ctx, checks, [catalog, results]) == [shop, kettle]
    assert also_where_made(ctx, [toaster], [catalog, results]) == []


def test_a_state_is_a_guess_when_one_it_would_skip_shows_and_it_does_not(
    page_at: Any, ctx: Context
) -> None:
    """A model took the wiki's search results for the article they lead to: the end's
    trigger ('An article heading is shown') and the results' URL trigger both read as
    this very page's address, but the results' list is on the page. The end is a guess;
    on the article itself it is not. So is a state that is not an end, skipping the
    results there."""
    from pytest_netgent.synthesis.ends import end_guessed, skipped

    home = StateSpec(name="Home page", triggers=["The search box is visible"], actions=["x"])
    results = StateSpec(
        name="Results",
        triggers=["The URL is the search page", "At least one search result is shown"],
        actions=["Click the first result"],
    )
    article = StateSpec(name="Article", triggers=["An article heading is shown"], end="ok")
    ctx.history, ctx.order = ["Home page"], ["Home page", "Results", "Article"]
    page = page_at("/wiki/search?q=streaming", "#results li.result")
    judge = BuiltinSynthesiser()
    assert judge.verdict(ctx, page, article) == judge.verdict(ctx, page, results) == "weak"
    assert judge.confirmed(ctx, page, results) == ["At least one search result is shown"]
    assert judge.confirmed(ctx, page, article) == []
    assert end_guessed(ctx, page, article, [home, results, article])
    assert not end_guessed(ctx, page, article, [home, article])  # nothing it would skip
    to_like = StateSpec(
        name="Article to like",
        triggers=["The article heading is shown", "The Like button is not pressed"],
        actions=["Click the Like button"],
    )
    ctx.order = ["Home page", "Results", "Article to like", "Article"]
    assert skipped(ctx, page, to_like, [home, results, to_like, article]) == "Results"
    assert skipped(ctx, page, results, [home, results, to_like, article]) == ""
    ctx.order = ["Home page", "Results", "Article"]
    on_article = page_at("/wiki/article/quic", "h1")
    assert not end_guessed(ctx, on_article, article, [home, results, article])


def test_an_end_state_is_a_guess_on_a_page_no_action_changed() -> None:
    """A model clicked a link to the same place (a 'Skip to main content' anchor) and
    took the login form for 'the group was added': the page shows nothing else than
    where a state of this run was made, so nothing on it can confirm the end. A page
    that changed can; so can an end whose triggers the page confirms literally."""
    from pytest_netgent.synthesis.ends import end_guessed

    ctx = Context(workflow="w", base_url="http://h")
    ctx.history, ctx.order = ["Login form"], ["Login form", "Group added"]
    login = Observation(url="http://h/admin/login/", title="Log in", text="Username Password")
    skipped = login.model_copy(update={"url": "http://h/admin/login/#content"})
    added = StateSpec(name="Group added", triggers=["A message says it went well"], end="ok")
    made = {"Login form": [login]}
    assert not end_guessed(ctx, skipped, added, [added])  # as before: nothing to judge by
    assert end_guessed(ctx, skipped, added, [added], made)
    changed = Observation(url="http://h/admin/", title="Site administration", text="Groups")
    assert not end_guessed(ctx, changed, added, [added], made)
    literal = StateSpec(name="Shown", triggers=["The page says 'Username'"], end="ok")
    assert not end_guessed(ctx, skipped, literal, [literal], made)


def test_a_trigger_of_several_sentences_is_read_clause_by_clause(
    page_at: Any, ctx: Context
) -> None:
    reader = BuiltinSynthesiser()
    login = page_at("/wiki/login")

    def triggers(page: Observation, text: str) -> list[dict[str, Any]]:
        state = StateSpec(name="S", triggers=[text])
        return [c.model_dump() for c in reader.define_triggers(ctx, page, state)]

    both = triggers(login, "A username field and a password field are shown")
    assert both == triggers(login, "A username field is shown") + triggers(
        login, "A password field is shown"
    )
    assert len(both) >= 2
    said = triggers(login, "The page says 'Log in' and the password field is visible")
    assert {"type": "text", "params": {"text": "Log in"}} in said
    # one clause that does not read declines the whole trigger, with its own reason
    with pytest.raises(Unresolved, match=r"trigger 'A username field and a purple unicorn are"):
        triggers(login, "A username field and a purple unicorn are shown")
    # one clause that does not hold: the state does not apply
    with pytest.raises(NotHolding, match=r"Nothing here"):
        triggers(login, "A username field is shown and the page says 'Nothing here'")


def test_the_page_is_titled_reads_the_document_title(page_at: Any, ctx: Context) -> None:
    reader = BuiltinSynthesiser()
    login = page_at("/wiki/login")

    def triggers(text: str) -> list[dict[str, Any]]:
        state = StateSpec(name="S", triggers=[text])
        return [c.model_dump() for c in reader.define_triggers(ctx, login, state)]

    title = login.title
    assert triggers(f"The page is titled {title}") == [
        {"type": "title", "params": {"title": title, "match": "exact"}}
    ]
    # in the page's own letter case, a part of it as "contains"
    first = title.split()[0]
    assert triggers(f"The page is titled {first.upper()}") == [
        {"type": "title", "params": {"title": first, "match": "contains"}}
    ]
    # a title the document does not hold is no title check
    with pytest.raises(Unresolved):
        triggers("The page is titled Purple unicorn emporium")


def test_words_placed_by_a_thing_read_where_the_page_model_puts_them(
    page_at: Any, ctx: Context
) -> None:
    reader = BuiltinSynthesiser()
    settings = page_at("/widgets/")

    def triggers(text: str) -> list[dict[str, Any]]:
        state = StateSpec(name="S", triggers=[text])
        return [c.model_dump() for c in reader.define_triggers(ctx, settings, state)]

    # the Sign out line follows the Devices table, outside it
    assert triggers("The line under the Devices table says 'Sign out'") == [
        {"type": "text", "params": {"text": "Sign out"}},
        {"type": "role", "params": {"role": "table", "name": "Devices"}},
    ]
    assert triggers("The line below the table reads Sign out") == [
        {"type": "text", "params": {"text": "Sign out"}},
        {"type": "role", "params": {"role": "table"}},
    ]
    with pytest.raises(Unresolved, match=r"not above the Devices table"):
        triggers("The line above the Devices table says 'Sign out'")
    with pytest.raises(Unresolved, match=r"not under the table"):  # a cell is in it
        triggers("The line under the table says 'Laptop'")
    with pytest.raises(NotHolding, match=r"no Cities table"):
        triggers("The line under the Cities table says 'Sign out'")
    with pytest.raises(NotHolding, match=r"Nothing here"):
        triggers("The line under the table says 'Nothing here'")
    with pytest.raises(Unresolved, match=r"'badge'"):  # a word no check stands for
        triggers("The badge under the table says 'Sign out'")


def test_an_element_said_in_a_region_is_checked_within_it(netgent_browser: Any) -> None:
    triggers = html_triggers(
        netgent_browser,
        "<header aria-label='Site header'><input aria-label='Search towns' value='Ashford'>"
        "</header><aside aria-label='Filters'><input aria-label='Search towns'></aside>",
    )

    # the sidebar by its kind, the header by its name: each region's own box
    assert triggers("The Search towns box in the sidebar is empty") == [
        {
            "type": "role",
            "params": {"role": "textbox", "name": "Search towns", "within": "Filters", "value": ""},
        }
    ]
    with pytest.raises(NotHolding, match=r"holds 'Ashford'"):
        triggers("The Search towns box in the site header is empty")
    with pytest.raises(Unresolved):  # two boxes of that name, and no region said
        triggers("The Search towns box is empty")


def test_ticking_a_box_and_choosing_from_a_closed_combobox(page_at: Any, ctx: Context) -> None:
    settings = page_at("/widgets/")
    assert act(ctx, settings, "Untick the Newsletter checkbox") == [
        {"type": "click", "params": {"by": "css selector", "selector": "#news"}}
    ]
    with pytest.raises(Unresolved, match=r"ticked already"):  # a click would clear it
        act(ctx, settings, "Tick the Newsletter checkbox")
    # the Country combobox lists its options only while open: replay opens it
    assert act(ctx, settings, "Choose Norway in the Country box") == [
        {
            "type": "select",
            "params": {"by": "css selector", "selector": "#country", "text": "Norway"},
        }
    ]


def test_a_value_by_its_label_and_a_number_said_whole(netgent_browser: Any) -> None:
    page = "<div><p>Towns shown</p><p>24</p></div><p>24 of 24 towns</p>"
    triggers = html_triggers(netgent_browser, page)

    assert triggers("Towns shown is 24") == [
        {"type": "text", "params": {"text": "Towns shown\n24"}}
    ]
    # a number the page does not show (yet): the state does not apply, never its other
    # words alone
    with pytest.raises(NotHolding, match=r"'Towns shown 4'"):
        triggers("Towns shown is 4")
    with pytest.raises(NotHolding, match=r"'10 of 24 towns'"):
        triggers("The caption says 10 of 24 towns")
    with pytest.raises(Unresolved):  # no such label: no such reading
        triggers("Cities shown is 24")


def html_triggers(netgent_browser: Any, html: str) -> Any:
    """``triggers(text)``: the builtin's checks for a one-trigger state on a page of
    ``html`` (a data: URL), as synthesis observes it."""
    import urllib.parse

    from pytest_netgent.synthesis.observation import observe

    driver = netgent_browser.driver
    driver.get("data:text/html," + urllib.parse.quote(html))
    observed = observe(driver)
    ctx = Context(workflow="w", values={}, base_url="http://127.0.0.1:1")
    reader = BuiltinSynthesiser()

    def triggers(text: str) -> list[dict[str, Any]]:
        state = StateSpec(name="S", triggers=[text])
        return [c.model_dump() for c in reader.define_triggers(ctx, observed, state)]

    return triggers
