"""--netgent-record with the builtin synthesiser, against the local sites."""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from .helpers import QUIET, SEARCH_WORKFLOW, Project

FEATURED = """
name: featured
start_url: "{base_url}/wiki/"
states:
  - name: Home
    triggers: [The URL is the wiki home page, "'Featured' is shown"]
    actions: [Click the 'QUIC' link]
  - name: Article
    triggers: [An article heading is shown]
    end: Article opened
"""


def states_of(path: Path) -> dict[str, str]:
    """Each cached state as its JSON text, by name."""
    doc = json.loads(path.read_text())
    return {s["name"]: json.dumps(s, sort_keys=True) for s in doc["states"]}


def test_record_from_nothing_then_replay_without_synthesis(project: Project) -> None:
    project.workflow("search", SEARCH_WORKFLOW)
    cache = project.path / "__netgent__" / "search" / "search.json"
    result = project.run("--netgent-record", "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    # the item's record summary, in the junit report as JSON (counted once in the summary)
    junit = ET.parse(project.path / "junit.xml").getroot()
    props = [(p.get("name"), p.get("value")) for p in junit.iter("property")]
    (record,) = [value for name, value in props if name == "netgent_record"]
    assert json.loads(record or "")["synthesised"] == ["Home", "Results", "Article"]
    result.stdout.fnmatch_lines(
        [
            "*= netgent record =*",
            "search.netgent.yaml::search: synthesised 'Home', 'Results', 'Article' -> *search.json",
            "3 states synthesised, 0 healed, 1 files written; steps resolved: * by builtin, 0 by "
            "the LLM; LLM calls: 0, tokens: 0, invalid answers: 0",
        ]
    )
    doc = json.loads(cache.read_text())
    assert doc["synthesis"]["model"] == "builtin"
    home = doc["states"][0]
    assert home["actions"] == [
        {
            "type": "type",
            "params": {
                # found as its users name it, its selector kept as the fallback
                "role": "searchbox",
                "name": "Search NetWiki",
                "by": "css selector",
                "selector": "#search-input",
                "text": "{query}",
                # the box's other stable locators, which a heal tries before synthesis
                "alternatives": [
                    {"by": "css selector", "selector": 'input[name="q"]'},
                    {"by": "css selector", "selector": 'input[aria-label="Search NetWiki"]'},
                    {"by": "css selector", "selector": 'input[placeholder="Search NetWiki"]'},
                ],
            },
        },
        {"type": "press_key", "params": {"key": "Enter"}},
    ]
    results = doc["states"][1]
    assert results["actions"][0]["params"]["index"] == 0  # "the first result", not one title
    assert "alternatives" not in results["actions"][0]["params"]  # found by its place
    before = cache.read_bytes()
    replay = project.run()
    replay.assert_outcomes(passed=1)
    assert "netgent record" not in replay.stdout.str()
    again = project.run("--netgent-record")
    again.assert_outcomes(passed=1)
    assert cache.read_bytes() == before  # nothing to heal: the file is left as it was


def test_heal_rewrites_only_the_broken_state(project: Project, changed_url: str) -> None:
    project.workflow("featured", FEATURED)
    project.run("--netgent-record").assert_outcomes(passed=1)
    cache = project.path / "__netgent__" / "featured" / "featured.json"
    before = states_of(cache)
    drift = project.run(base_url=changed_url)
    drift.assert_outcomes(failed=1)
    healed = project.run("--netgent-record", base_url=changed_url)
    healed.assert_outcomes(passed=1)
    healed.stdout.fnmatch_lines(["featured.netgent.yaml::featured: healed 'Article' -> *"])
    after = states_of(cache)
    assert after["Home"] == before["Home"]  # byte for byte
    assert after["Article"] != before["Article"]
    project.run(base_url=changed_url).assert_outcomes(passed=1)


def test_record_all_resynthesises_fresh_states(project: Project) -> None:
    project.workflow("featured", FEATURED)
    project.run("--netgent-record").assert_outcomes(passed=1)
    result = project.run("--netgent-record=all")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["featured.netgent.yaml::featured: synthesised 'Home', 'Article' -> *"]
    )


def test_record_never_overwrites_a_corrupt_cache(project: Project) -> None:
    project.workflow("featured", FEATURED)
    cache = project.path / "__netgent__" / "featured" / "featured.json"
    cache.parent.mkdir(parents=True)
    cache.write_text('{"states": [ <<<<<<< ours')
    result = project.run("--netgent-record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["__netgent__/featured/featured.json: corrupt cached states: *"])
    assert cache.read_text() == '{"states": [ <<<<<<< ours'


def test_propose_heals_into_artifacts_and_fails(project: Project, changed_url: str) -> None:
    project.workflow("featured", FEATURED)
    project.run("--netgent-record").assert_outcomes(passed=1)
    cache = project.path / "__netgent__" / "featured" / "featured.json"
    before = cache.read_bytes()
    result = project.run("--netgent-record=propose", base_url=changed_url)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "__netgent__/featured/featured.json: states of workflow 'featured' were healed into "
            "netgent-artifacts/proposed/__netgent__/featured/featured.json for review "
            "(--netgent-record=propose); copy that file over the cached one to accept them"
        ]
    )
    assert cache.read_bytes() == before
    proposal = project.path / "netgent-artifacts/proposed/__netgent__/featured/featured.json"
    assert states_of(proposal)["Home"] == states_of(cache)["Home"]
    assert states_of(proposal)["Article"] != states_of(cache)["Article"]


def test_unresolvable_step_fails_clearly_and_writes_nothing(project: Project) -> None:
    project.workflow(
        "unicorn",
        FEATURED.replace("name: featured", "name: unicorn").replace(
            "Click the 'QUIC' link", "Click the purple unicorn"
        ),
    )
    result = project.run("--netgent-record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  reason: state 'Home', instruction 1 ('Click the purple unicorn'): the builtin "
            f"synthesiser could not decide: no element on {project.base_url}/wiki/ matches "
            "'purple unicorn' (closest: *)"
        ]
    )
    assert not (project.path / "__netgent__" / "unicorn" / "unicorn.json").exists()


def test_secret_value_never_reaches_the_cache(project: Project) -> None:
    project.workflow(
        "login",
        """
        name: login
        start_url: "{base_url}/wiki/login"
        vars: {user: researcher}
        secrets: {password: NETGENT_RECORD_PASSWORD}
        states:
          - name: Login
            triggers: [The password field is visible]
            actions:
              - Type {user} into the Username field
              - Type {password} into the Password field
              - Click the 'Log in' button
          - name: Account
            triggers: [The welcome heading is shown]
            end: Logged in
        """,
    )
    os.environ["NETGENT_RECORD_PASSWORD"] = "netgent-pass"
    try:
        result = project.run("--netgent-record", "-rA")
    finally:
        del os.environ["NETGENT_RECORD_PASSWORD"]
    result.assert_outcomes(passed=1)
    cache = project.path / "__netgent__" / "login" / "login.json"
    text = cache.read_text()
    assert '"text": "{password}"' in text and '"text": "{user}"' in text
    assert "netgent-pass" not in text
    assert "netgent-pass" not in result.stdout.str()


def test_xdist_record_writes_every_file_intact(project: Project) -> None:
    documents = []
    for n, query in enumerate(["QUIC", "WebRTC", "HLS", "TCP"]):
        documents.append(
            SEARCH_WORKFLOW.replace("name: search", f"name: search-{n}").replace(
                "vars: {query: QUIC}", f"vars: {{query: {query}}}"
            )
        )
    project.workflow("many", "---\n".join(documents))
    result = project.run_subprocess("-n", "2", "--netgent-record")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["12 states synthesised, 0 healed, 4 files written;*"])
    for n in range(4):
        doc = json.loads((project.path / "__netgent__" / "many" / f"search-{n}.json").read_text())
        assert [s["name"] for s in doc["states"]] == ["Home", "Results", "Article"]
    project.run_subprocess("-n", "2").assert_outcomes(passed=4)


def test_wiki_examples_record_offline_from_nothing_and_heal(
    pytester: pytest.Pytester,
) -> None:
    # The wiki's changed UI keeps its words (only ids, classes and layout move), so the
    # builtin rules heal it offline; the other apps' changed UIs rename their buttons,
    # which needs an LLM to heal.
    root = Path(__file__).resolve().parent.parent
    shutil.copytree(root / "example_suites" / "wiki", pytester.path / "example_suites" / "wiki")
    shutil.copytree(root / "fixtures", pytester.path / "fixtures")
    shutil.copy(root / "conftest.py", pytester.path / "conftest.py")
    pytester.makeini("[pytest]\nnetgent_state_timeout = 5\n")
    for cache in (pytester.path / "example_suites").rglob("__netgent__"):
        shutil.rmtree(cache)

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*QUIET, "example_suites", *args)

    recorded = run("-n", "2", "--netgent-record")
    recorded.assert_outcomes(passed=6)
    recorded.stdout.fnmatch_lines(
        ["* states synthesised, 0 healed, 4 files written; * 0 by the LLM*"]
    )
    run("-n", "2").assert_outcomes(passed=6)
    run("-n", "2", "--site-variant=changed").assert_outcomes(failed=6)
    healed = run("-n", "2", "--site-variant=changed", "--netgent-record")
    # the changed UI's Favourite button carries no pressed state (no aria-pressed): "The
    # Like button is not pressed" stands for nothing there, and that state is declined,
    # never healed into "a Favourite button exists" (which holds once liked, too)
    healed.assert_outcomes(passed=5, failed=1)
    healed.stdout.fnmatch_lines(
        [  # (pytest 8.0's short summary does not repeat the item's message)
            "synthesis failure in workflow 'login-and-like'*",
            "0 states synthesised, * healed, 3 files written;*",
            "FAILED*like.netgent.yaml::login-and-like*",
        ]
    )
    run("-n", "2", "--site-variant=changed").assert_outcomes(passed=5, failed=1)


def test_a_plugin_can_swap_the_synthesiser(project: Project) -> None:
    project.workflow("featured", FEATURED)
    project.pytester.makeconftest(
        """
        from pytest_netgent.synthesis.builtin import BuiltinSynthesiser

        class Careful(BuiltinSynthesiser):
            name = "careful-rules"

        def pytest_netgent_make_synthesiser(config, llm):
            return Careful()
        """
    )
    project.run("--netgent-record").assert_outcomes(passed=1)
    doc = json.loads((project.path / "__netgent__" / "featured" / "featured.json").read_text())
    assert doc["synthesis"]["model"] == "careful-rules"


CHANGING = """
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser
from pytest_netgent.workflow.automaton import Check

class Changing(BuiltinSynthesiser):
    \"\"\"Reads 'Article' off a page that changes before its triggers are checked.\"\"\"
    name = "changing"
    reads = 0

    def define_triggers(self, ctx, page, spec):
        checks = super().define_triggers(ctx, page, spec)
        if spec.name == "Article":
            type(self).reads += 1
            if type(self).reads <= READS:
                return [*checks, Check(type="text", params={"text": "gone a moment later"})]
        return checks

def pytest_netgent_make_synthesiser(config, llm):
    return Changing()
"""


def test_record_reads_a_page_again_when_it_changed_before_its_triggers_were_checked(
    project: Project,
) -> None:
    """The triggers synthesised from a page that no longer shows them a moment later (a
    kernel starting, a tab still loading) are made again from a fresh look at the page,
    until the state timeout; then the item fails naming the state and its checks."""
    project.workflow("featured", FEATURED)
    project.pytester.makeconftest("READS = 2\n" + CHANGING)
    project.run("--netgent-record").assert_outcomes(passed=1)
    doc = json.loads((project.path / "__netgent__" / "featured" / "featured.json").read_text())
    assert "gone a moment later" not in json.dumps(doc)
    project.run().assert_outcomes(passed=1)

    shutil.rmtree(project.path / "__netgent__")
    project.pytester.makeconftest("READS = 10**6\n" + CHANGING)
    failed = project.run("--netgent-record", "--netgent-state-timeout=2")
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(
        ["*the triggers synthesised for state 'Article' do not hold on *gone a moment later*"]
    )


PAGES = """
name: pages
start_url: "{base_url}/shop/"
parametrize:
  pages: [2, 4]
states:
  - name: Done
    triggers: ["The page says 'page {pages} of'"]
    end: Read enough pages
  - name: Catalog page
    triggers: [The Next page link is visible, "The URL starts with '/shop/'"]
    actions: [Click the 'Next page' link]
"""


def test_record_lets_an_earlier_uncompiled_state_preempt_a_compiled_one(
    project: Project,
) -> None:
    # 'Catalog page' is compiled on page 1 and matches every later page too; 'Done' is
    # declared first, so on page 2 record mode must compile and fire it instead.
    project.workflow("pages", PAGES)
    result = project.run("--netgent-record")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*pages*[[]2]: synthesised 'Catalog page', 'Done' -> *"])
    doc = json.loads((project.path / "__netgent__" / "pages" / "pages.json").read_text())
    assert [s["name"] for s in doc["states"]] == ["Done", "Catalog page"]
    assert doc["states"][0]["checks"] == [{"type": "text", "params": {"text": "page {pages} of"}}]
    project.run().assert_outcomes(passed=2)


NEXT_PAGES = """
name: pages
start_url: "{base_url}/shop/"
states:
  - name: First page
    triggers: ["The URL starts with '/shop/'", The 'Next page' link is visible]
    actions: [Click the 'Next page' link]
  - name: Second page
    triggers: ["The URL ends with 'page=2'", The 'Next page' link is visible]
    actions: [Click the 'Next page' link]
  - name: Third page
    triggers: ["The URL ends with 'page=3'"]
    end: Three pages read
"""


def test_record_makes_a_state_exclusive_of_the_page_its_actions_lead_to(
    project: Project,
) -> None:
    # 'First page' as written holds on every page of the catalog: recorded as it is, it
    # would fire on page 2, 3, ... and never let 'Second page' in. Record mode sees it
    # fire again on the page its own click led to, takes the state declared next there,
    # and pins 'First page' to the exact URL it was made on.
    path = project.workflow("pages", NEXT_PAGES)
    result = project.run("--netgent-record", "-v")
    result.assert_outcomes(passed=1)
    doc = json.loads((project.path / "__netgent__" / "pages" / "pages.json").read_text())
    first = doc["states"][0]
    assert first["name"] == "First page"
    urls = [c["params"] for c in first["checks"] if c["type"] == "url"]
    assert urls == [{"url": "{base_url}/shop/"}]  # exact: no longer a prefix
    assert [s["name"] for s in doc["states"]] == ["First page", "Second page", "Third page"]
    # replay goes through every state, once
    replay = project.run("--junitxml=replay.xml", "-o", "junit_family=xunit1")
    replay.assert_outcomes(passed=1)
    junit = (project.path / "replay.xml").read_text()
    assert 'name="netgent_states" value="First page &gt; Second page &gt; Third page"' in junit
    assert path.is_file()


def test_the_window_size_is_part_of_the_automaton(project: Project) -> None:
    path = project.workflow("search", SEARCH_WORKFLOW)
    cache = project.path / "__netgent__" / "search" / "search.json"
    project.run("--netgent-record", "--netgent-window-size=900x700").assert_outcomes(passed=1)
    assert json.loads(cache.read_text())["window"] == "900x700"
    # replay takes the recorded size: a state sees the viewport it was recorded in
    probe = """
import json, pytest
@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    yield
    driver = item.funcargs["netgent_browser"].driver
    size = driver.get_window_size()
    with open("sizes.txt", "a") as out:
        out.write(f"{size['width']}x{size['height']}\\n")
"""
    project.pytester.makeconftest(probe)
    project.run().assert_outcomes(passed=1)
    # told otherwise, the option wins; the workflow's own window: comes next
    project.run("--netgent-window-size=1100x800").assert_outcomes(passed=1)
    path.write_text(path.read_text().replace("states:", "window: 1000x750\nstates:", 1))
    project.run().assert_outcomes(passed=1)
    sizes = (project.path / "sizes.txt").read_text().split()
    assert sizes == ["900x700", "1100x800", "1000x750"]
    assert json.loads(cache.read_text())["window"] == "900x700"  # replay writes nothing
    bad = project.run("--netgent-window-size=huge")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--netgent-window-size: 'huge' is not a window size: write WIDTHxHEIGHT*"]
    )
    path.write_text(path.read_text().replace("window: 1000x750", "window: 10x10"))
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*search.netgent.yaml:4: window: '10x10': a window from 200x200*"])


GUESSING = """
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser
from pytest_netgent.workflow.automaton import Check

class Guessing(BuiltinSynthesiser):
    \"\"\"Takes the end state as soon as a state ran, on a text the page always shows.\"\"\"
    name = "guessing"

    def select_state(self, ctx, page, candidates):
        ends = [c for c in candidates if c.end]
        return ends[0] if ctx.history and ends else super().select_state(ctx, page, candidates)

    def define_triggers(self, ctx, page, spec):
        if spec.end:
            return [Check(type="text", params={"text": "Featured"})]
        return super().define_triggers(ctx, page, spec)

def pytest_netgent_make_synthesiser(config, llm):
    return Guessing()
"""

IDLE = """
name: idle
start_url: "{base_url}/wiki/"
states:
  - name: Home
    triggers: [The search box is visible]
    actions: [Wait 0.2 seconds]
  - name: Done
    triggers: [We are done here]
    end: Done
"""


def test_record_takes_no_end_state_on_a_page_its_actions_left_as_it_was(
    project: Project,
) -> None:
    """A state's actions changed nothing on the page; a model then took the end state
    there: the record fails, and writes nothing (it passed, and wrote a cache that 'ends'
    the workflow on any page showing the home page's words)."""
    project.workflow("idle", IDLE)
    project.pytester.makeconftest(GUESSING)
    failed = project.run("--netgent-record")
    failed.assert_outcomes(failed=1)
    # the end refused, the state that ran is all that is left, and it changes nothing
    failed.stdout.fnmatch_lines(
        ["synthesis failure in workflow 'idle'*", "*state 'Home' does not advance the page*"]
    )
    assert not (project.path / "__netgent__").exists()


SKIPPING = """
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser

class Skipping(BuiltinSynthesiser):
    \"\"\"Takes the article for the search results that lead to it.\"\"\"
    name = "skipping"

    def select_state(self, ctx, page, candidates):
        names = [c.name for c in candidates]
        if "/wiki/search" in page.url and "Results" in names and "Article" in names:
            return next(c for c in candidates if c.name == "Article")
        return super().select_state(ctx, page, candidates)

def pytest_netgent_make_synthesiser(config, llm):
    return Skipping()
"""

SEARCH_IN_ORDER = """
name: in-order
start_url: "{base_url}/wiki/"
states:
  - name: Home
    triggers: [The search box is visible]
    actions: [Type QUIC into the search box, Press Enter]
  - name: Results
    triggers: [At least one search result is shown]
    actions: [Click the first result]
  - name: Article
    triggers: [An article heading is shown]
    actions: [Wait 0.2 seconds]
  - name: Done
    triggers: [The URL contains /wiki/article/]
    end: Done
"""


def test_record_takes_no_state_that_skips_one_the_page_shows(project: Project) -> None:
    """A synthesiser took the article for the search results that lead to it (a model
    did): the results' list is on the page and nothing there confirms an article, so it
    is asked again without it, and the record goes through the results as written (it
    took the article there, and its wait then changed nothing)."""
    project.workflow("in-order", SEARCH_IN_ORDER)
    project.pytester.makeconftest(SKIPPING)
    result = project.run("--netgent-record", "-rA")
    result.assert_outcomes(passed=1)
    states = json.loads((project.path / "__netgent__" / "in-order" / "in-order.json").read_text())
    names = [s["name"] for s in (states["states"] if isinstance(states, dict) else states)]
    assert names == ["Home", "Results", "Article", "Done"], names
    result.stdout.fnmatch_lines(["*state    Results*", "*state    Article*", "*end      Done*"])
