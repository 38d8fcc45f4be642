"""Record mode with an LLM: langchain-core's fake chat model with scripted replies."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.synthesis.models import ModelSpecError, load_model

from .helpers import Project

# Triggers the builtin does not read ("not a literal trigger"), each of whose words a check
# the page offers stands for: the address ("wiki", "home", "search", "article") and the
# article's text ("QUIC"). A trigger no offered check could stand for is declined without
# asking the model; an answer whose checks leave a word over is refused
# (test_a_model_answer_that_leaves_words_ungrounded_is_refused).
VAGUE = """
name: vague
start_url: "{base_url}/wiki/"
vars: {topic: QUIC}
states:
  - name: Start
    triggers: [We are on the wiki home page]
    actions:
      - Look up {topic} using the site's finder
  - name: Found
    triggers: [We are on the search page]
    actions: [Open the top match]
  - name: Reading
    triggers: [We are on the QUIC article]
    end: Read
"""

# The model decides every step: the scripted replies are its answers to each stage in turn
# (with the builtin first, it would decide most of these steps itself).
MODEL_DECIDES = ("--netgent-record", "--netgent-llm-only")

# The fake model: replies in order, records every prompt to prompts.json.
CONFTEST = """
import json
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

REPLIES = {replies!r}
PROFILE = {profile!r}
SENT = []
IMAGES = []


def _text(content):
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return content


def _images(content):
    return isinstance(content, list) and [
        b for b in content
        if b.get("type") == "image_url"
        and b["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    ]


class RecordingModel(GenericFakeChatModel):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        SENT.append([_text(m.content) for m in messages])
        IMAGES.append(any(_images(m.content) for m in messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@pytest.fixture(scope="session")
def netgent_llm():
    open("model-built", "w").close()
    usage = {{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}}
    return RecordingModel(
        messages=iter([AIMessage(content=r, usage_metadata=usage) for r in REPLIES]),
        profile=PROFILE,
    )


def pytest_sessionfinish(session):
    with open("prompts.json", "w") as fh:
        json.dump(SENT, fh)
    with open("images.json", "w") as fh:
        json.dump(IMAGES, fh)
"""


def reply(**data: Any) -> str:
    return json.dumps(data)


VAGUE_REPLIES = [
    reply(state="Start", reasoning="the home page"),
    reply(checks=["c1"], reasoning="the home page URL"),
    reply(action="type", mmid=2, params={"text": "{topic}"}, done=False, reasoning="finder"),
    reply(action="press_key", params={"key": "Enter"}, done=True, reasoning="submit"),
    reply(state="Found", reasoning="results"),
    reply(checks=["c2"], reasoning="search page"),
    reply(action="click", mmid=5, params={}, done=True, reasoning="top match"),
    reply(state="Reading", reasoning="article"),
    # the article pages' address stands for "article", the page's text 'QUIC' for "QUIC"
    reply(checks=["c2", "c5"], reasoning="article pages that say QUIC"),
]


def model_project(
    project: Project, replies: list[str], profile: dict[str, Any] | None = None
) -> None:
    project.pytester.makeconftest(CONFTEST.format(replies=replies, profile=profile))


def prompts(project: Project) -> list[str]:
    sent = json.loads((project.path / "prompts.json").read_text())
    return [messages[0] for messages in sent]


def test_record_with_llm_then_replay_without_it(project: Project) -> None:
    project.workflow("vague", VAGUE)
    model_project(project, VAGUE_REPLIES)
    result = project.run(*MODEL_DECIDES)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "vague.netgent.yaml::vague: synthesised 'Start', 'Found', 'Reading' -> *vague.json",
            "3 states synthesised, 0 healed, 1 files written; steps resolved: * by builtin, 9 by "
            "the LLM; LLM calls: 9, tokens: 1080, invalid answers: 0",
        ]
    )
    doc = json.loads((project.path / "__netgent__" / "vague" / "vague.json").read_text())
    assert doc["synthesis"]["llm_calls"] == 9
    start, found, reading = doc["states"]
    assert start["checks"] == [{"type": "url", "params": {"url": "{base_url}/wiki/"}}]
    assert start["actions"][0]["params"]["text"] == "{topic}"  # a placeholder, not QUIC
    assert start["actions"][0]["params"]["selector"] == "#search-input"
    assert found["actions"][0]["type"] == "click"
    assert reading["checks"][0]["params"] == {"url": "{base_url}/wiki/article/", "match": "prefix"}
    assert reading["checks"][1] == {"type": "text", "params": {"text": "QUIC"}}  # "QUIC"

    sent = prompts(project)
    assert len(sent) == 9
    assert "Choose the one state that" in sent[0] and "- Start:" in sent[0]
    assert "[2] <input> 'Search NetWiki' type=search" in sent[0]
    assert "c1: url exact '{base_url}/wiki/'" in sent[1]
    assert "# Instruction: Look up {topic} using the site's finder" in sent[2]
    assert "{topic} = QUIC" in sent[2]
    assert "changed (find the same elements again)\n(none: a new state)" in sent[2]
    assert "type(text='{topic}', by='css selector', selector='#search-input')" in sent[3]
    assert "- Start" in sent[4]  # history

    (project.path / "model-built").unlink()
    replay = project.run()
    replay.assert_outcomes(passed=1)
    assert not (project.path / "model-built").exists()  # plain replay never builds a model
    assert json.loads((project.path / "prompts.json").read_text()) == []


def test_literal_steps_cost_no_llm_call(project: Project) -> None:
    project.workflow(
        "literal",
        """
        name: literal
        start_url: "{base_url}/wiki/"
        states:
          - name: Home
            triggers: [The URL is the wiki home page]
            actions: [Click the 'QUIC' link]
          - name: Article
            triggers: [An article heading is shown]
            end: Read
        """,
    )
    model_project(project, [])
    result = project.run("--netgent-record")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*steps resolved: * by builtin, 0 by the LLM; LLM calls: 0*"])


def test_beside_the_builtin_the_model_decides_only_what_the_builtin_declines(
    project: Project,
) -> None:
    """A search and literal triggers the builtin reads itself (its search rule, the URL, an
    article's heading); what it declines goes to the model: the vague trigger of the first
    state (the builtin names it, and puts no landmarks of the page in its place) and the
    one instruction it cannot read. Two calls, and nothing the builtin decides is asked."""
    wording = [
        ("Look up {topic} using the site's finder", "Search for {topic}"),
        ("We are on the search page", "The URL contains /search"),
        ("Open the top match", "Go with your favourite"),
        ("We are on the QUIC article", "An article heading is shown"),
    ]
    project.workflow("vague", functools.reduce(lambda text, w: text.replace(*w), wording, VAGUE))
    # the builtin alone declines the vague trigger, naming it, and records nothing
    alone = project.run("--netgent-record")
    alone.assert_outcomes(failed=1)
    alone.stdout.fnmatch_lines(
        ["  reason: *could not decide: not a literal trigger: 'We are on the wiki home page'*"]
    )
    assert not (project.path / "__netgent__").exists()
    model_project(
        project,
        [
            reply(checks=["c1"], reasoning="the home page URL"),
            reply(action="click", mmid=5, params={}, done=True, reasoning="1st"),
        ],
    )
    result = project.run("--netgent-record")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*steps resolved: * by builtin, 2 by the LLM; LLM calls: 2,*"])
    triggers, click = prompts(project)
    assert "# State: Start\nTriggers:\n- We are on the wiki home page\n" in triggers
    assert "c1: url exact '{base_url}/wiki/'" in triggers
    assert "# Instruction: Go with your favourite" in click
    doc = json.loads((project.path / "__netgent__" / "vague" / "vague.json").read_text())
    assert doc["states"][0]["checks"] == [{"type": "url", "params": {"url": "{base_url}/wiki/"}}]
    project.run().assert_outcomes(passed=1)


def test_garbage_output_is_retried_then_fails_with_cache_untouched(project: Project) -> None:
    project.workflow("vague", VAGUE)
    model_project(project, ["I think it is the Start state!", '{"state": 3}', '{"state": "Begin"}'])
    result = project.run(*MODEL_DECIDES)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  reason: no cached state matches and the RecordingModel synthesiser could not "
            "decide: the model gave no usable StateAnswer in 3 answers; last answer: "
            '\'{"state": "Begin"}\''
        ]
    )
    assert not (project.path / "__netgent__").exists()
    sent = json.loads((project.path / "prompts.json").read_text())
    assert len(sent) == 3
    # each retry shows the model its invalid reply and what was wrong with it
    assert sent[1][1] == "I think it is the Start state!"
    assert sent[1][2].startswith("That answer cannot be used: ")
    # the whole error: what is wrong and which values are allowed
    assert "Input should be 'Start'" in sent[2][4], sent[2][4]


def test_a_model_answer_that_leaves_words_ungrounded_is_refused(project: Project) -> None:
    """The checks a model chooses must stand for every word of the trigger, as the
    builtin's must: the article pages' address says "article" but not "QUIC", so that
    answer is refused, the model is told which word no check stands for, and its second
    answer, which adds the text 'QUIC', is the one recorded."""
    project.workflow(
        "article",
        """
        name: article
        start_url: "{base_url}/wiki/article/quic"
        states:
          - name: Reading
            triggers: [We are on the QUIC article]
            end: Read
        """,
    )
    model_project(
        project,
        [
            reply(state="Reading", reasoning="the article"),
            reply(checks=["c2"], reasoning="article pages"),
            reply(checks=["c2", "c5"], reasoning="article pages that say QUIC"),
        ],
    )
    result = project.run(*MODEL_DECIDES)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "article.netgent.yaml::article: synthesised 'Reading'; 1 invalid model answers "
            "(each retried) -> *article.json",
            "1 states synthesised, 0 healed, 1 files written; steps resolved: 0 by builtin, 2 by "
            "the LLM; LLM calls: 3, tokens: 360, invalid answers: 1",
        ]
    )
    sent = json.loads((project.path / "prompts.json").read_text())
    assert len(sent) == 3
    assert "c2: url prefix '{base_url}/wiki/article/'" in sent[1][0]
    assert "c5: text contains 'QUIC'" in sent[1][0]
    # the second DEFINE_TRIGGERS prompt: the refused answer, and why it was refused
    assert sent[2][0] == sent[1][0]  # the same question, asked again
    refused, why = sent[2][1], sent[2][2]
    assert json.loads(refused)["checks"] == ["c2"]
    assert why.startswith(
        "That answer cannot be used: trigger 'We are on the QUIC article' is "
        "not grounded: no check stands for 'QUIC' (checks found: url prefix "
        "'{base_url}/wiki/article/')"
    ), why
    assert "add the checks that stand for those words" in why
    doc = json.loads((project.path / "__netgent__" / "article" / "article.json").read_text())
    (reading,) = doc["states"]
    assert reading["checks"] == [
        {"type": "url", "params": {"url": "{base_url}/wiki/article/", "match": "prefix"}},
        {"type": "text", "params": {"text": "QUIC"}},
    ]
    project.run().assert_outcomes(passed=1)


def test_secret_never_reaches_the_model(project: Project) -> None:
    project.workflow(
        "login",
        """
        name: login
        start_url: "{base_url}/wiki/login"
        vars: {user: researcher}
        secrets: {password: NETGENT_LLM_PASSWORD}
        states:
          - name: Login
            triggers: [We are on the wiki's login form]
            actions:
              - Sign into the account as {user} with {password}
          - name: Account
            triggers: ['We are welcomed as {user}']
            end: Signed in
        """,
    )
    model_project(
        project,
        [
            reply(state="Login"),
            # the login page's address stands for "wiki's" and "login", its button for "form"
            reply(checks=["c1", "c12"]),
            reply(action="type", mmid=5, params={"text": "{user}"}, done=False, reasoning="u"),
            reply(action="type", mmid=6, params={"text": "{password}"}, done=False, reasoning="p"),
            reply(action="click", mmid=7, done=True, reasoning="submit the form"),
            reply(state="Account"),
            reply(checks=["c4"]),  # the heading 'Welcome, researcher'
        ],
    )
    os.environ["NETGENT_LLM_PASSWORD"] = "netgent-pass"
    try:
        result = project.run(*MODEL_DECIDES, "-rA")
    finally:
        del os.environ["NETGENT_LLM_PASSWORD"]
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*LLM calls: 7, tokens: 840, invalid answers: 0"])
    sent = (project.path / "prompts.json").read_text()
    assert "{password} = (secret, never shown)" in sent
    assert "netgent-pass" not in sent
    cache = (project.path / "__netgent__" / "login" / "login.json").read_text()
    assert '"text": "{password}"' in cache and "netgent-pass" not in cache
    assert "netgent-pass" not in result.stdout.str()


def test_load_model_from_module_attr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_models.py").write_text(
        "from langchain_core.language_models.fake_chat_models import FakeListChatModel\n"
        "def chat():\n    return FakeListChatModel(responses=['ok'])\n"
        "instance = FakeListChatModel(responses=['ok'])\n"
        "not_a_model = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert type(load_model("my_models:chat")).__name__ == "FakeListChatModel"
    assert type(load_model("my_models:instance")).__name__ == "FakeListChatModel"
    assert load_model("builtin") is None
    with pytest.raises(ModelSpecError, match=r"is a int, not a langchain-core BaseChatModel"):
        load_model("my_models:not_a_model")
    with pytest.raises(
        ModelSpecError,
        match=r"'my_models:nope' \(module 'my_models' has no 'nope'\): Unable to infer model prov",
    ):
        load_model("my_models:nope")
    # a callable that is no model factory: the reason, not an INTERNALERROR
    with pytest.raises(ModelSpecError, match=r"calling json.dumps\(\) to make the model failed"):
        load_model("json:dumps")
    with pytest.raises(ModelSpecError, match=r"os.getcwd\(\) returned a str, not a lang"):
        load_model("os:getcwd")
    # a model name that is no attribute is LangChain's provider:model, module or not
    with pytest.raises(
        ModelSpecError, match=r"'json:gpt-4o' \('gpt-4o' is a model's name, not an attribute of"
    ):
        load_model("json:gpt-4o")
    with pytest.raises(ModelSpecError, match=r"neither 'builtin', 'local', 'module:attr' nor"):
        load_model("gpt4")


def test_provider_model_is_langchains_and_a_missing_provider_a_usage_error(
    project: Project,
) -> None:
    """The llm extra brings LangChain's init_chat_model: 'mistralai:mistral-large-latest'
    is read as provider:model, and without the provider's package the one usage error
    names the install line."""
    project.workflow("vague", VAGUE)
    spec = "mistralai:mistral-large-latest"
    result = project.run("--netgent-record", f"--netgent-llm={spec}")
    # one usage error before anything runs, not a failure per item
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--netgent-llm '{spec}'*: *pip install*langchain-mistralai*"])
    result = project.run("--netgent-record", "--netgent-llm=nosuchprovider:some-model")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--netgent-llm 'nosuchprovider:some-model': Unable to infer model provider*"]
    )


def test_provider_model_without_langchain_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)
    with pytest.raises(
        ModelSpecError,
        match=r"'nosuchprovider:some-model': no module 'nosuchprovider', and 'provider:model' "
        r"names need the langchain package: pip install langchain",
    ):
        load_model("nosuchprovider:some-model")


def test_heal_with_llm_costs_only_the_broken_states(project: Project, changed_url: str) -> None:
    project.workflow("vague", VAGUE)
    model_project(project, VAGUE_REPLIES)
    project.run(*MODEL_DECIDES).assert_outcomes(passed=1)
    cache = project.path / "__netgent__" / "vague" / "vague.json"
    recorded = cache.read_text()
    doc = json.loads(recorded)
    for state in doc["states"]:  # other locators that no longer name the search box
        for action in state["actions"]:
            if "alternatives" in action["params"]:
                action["params"]["alternatives"] = [{"by": "css selector", "selector": "#gone"}]
    cache.write_text(json.dumps(doc))
    before = {s["name"]: json.dumps(s) for s in doc["states"]}
    # On the changed UI the URLs, the result's link text and the article's text 'QUIC'
    # still match, but the search box lost its id: only that state's actions are
    # resynthesised.
    model_project(
        project,
        [
            reply(action="type", mmid=2, params={"text": "{topic}"}, done=False, reasoning="box"),
            reply(action="press_key", params={"key": "Enter"}, done=False, reasoning="submit"),
            # NetGent's terminate: the instruction needs nothing more
            reply(action="terminate", reasoning="the search was submitted"),
        ],
    )
    result = project.run(*MODEL_DECIDES, base_url=changed_url)  # (the builtin reads it too)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "vague.netgent.yaml::vague: healed 'Start' -> *vague.json",
            "0 states synthesised, 1 healed, 1 files written; steps resolved: 0 by builtin, 2 by "
            "the LLM; LLM calls: 3, tokens: 360, invalid answers: *",
        ]
    )
    sent = prompts(project)
    assert "[2] <input> 'Find an article'" in sent[0]
    # what the state did before, and where else its element was, guide the model
    assert (
        "# What this state did before the page changed (find the same elements again)\n"
        "- type searchbox 'Search NetWiki' or css selector='#search-input' text='{topic}' "
        "(its element was also css selector='#gone')"
    ) in sent[0]
    assert "<toolcall>\n    type(text='{topic}'" in sent[1]  # actions taken so far
    after = {s["name"]: json.dumps(s) for s in json.loads(cache.read_text())["states"]}
    assert after["Reading"] == before["Reading"] and after["Found"] == before["Found"]
    assert after["Start"] != before["Start"]
    assert '"selector": "input[name=\\"q\\"]"' in after["Start"]
    project.run(base_url=changed_url).assert_outcomes(passed=1)
    # with the search box's other locators the record kept, the same drift costs no call
    cache.write_text(recorded)
    model_project(project, [])
    result = project.run("--netgent-record", base_url=changed_url)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "vague.netgent.yaml::vague: healed 'Start' -> *vague.json",
            "0 states synthesised, 1 healed, 1 files written; steps resolved: 0 by builtin, 0 by "
            "the LLM; LLM calls: 0, tokens: 0, invalid answers: 0",
        ]
    )
    project.run(base_url=changed_url).assert_outcomes(passed=1)


def test_screenshots_only_for_models_that_accept_images(project: Project) -> None:
    project.workflow("vague", VAGUE)
    model_project(project, VAGUE_REPLIES, profile={"image_inputs": True})
    project.run(*MODEL_DECIDES).assert_outcomes(passed=1)
    assert json.loads((project.path / "images.json").read_text()) == [True] * 9
    (project.path / "__netgent__" / "vague" / "vague.json").unlink()
    model_project(project, VAGUE_REPLIES)  # no profile: text only
    project.run(*MODEL_DECIDES).assert_outcomes(passed=1)
    assert json.loads((project.path / "images.json").read_text()) == [False] * 9


def test_the_llm_budget_stops_a_model_that_never_reaches_the_end(project: Project) -> None:
    project.workflow("vague", VAGUE)
    model_project(project, VAGUE_REPLIES)
    result = project.run(*MODEL_DECIDES, "--netgent-llm-calls", "4")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "model error in workflow 'vague' (vague.netgent.yaml:*)",
            "  reason: the LLM budget of workflow 'vague' is spent (4 calls, 480 tokens; limits "
            "4 calls, 200000 tokens): the model keeps answering without reaching the end; "
            "check the state prompts, or raise --netgent-llm-calls / --netgent-llm-tokens",
        ]
    )
    assert "heal with" not in result.stdout.str()
    assert len(prompts(project)) == 4  # the fifth call was never made
    assert not (project.path / "__netgent__").exists()


FAILING_MODEL = """
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel


class Failing(GenericFakeChatModel):
    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        raise {error}


@pytest.fixture(scope="session")
def netgent_llm():
    return Failing(messages=iter([]))
"""


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        ('RuntimeError("429 Too Many Requests: rate limited")', "RuntimeError: 429 Too Many "
         "Requests: rate limited"),
        ('TimeoutError("read timed out")', "TimeoutError: read timed out"),
    ],
)  # fmt: skip
def test_a_failing_model_is_its_own_cause(project: Project, error: str, shown: str) -> None:
    project.workflow("vague", VAGUE)
    project.pytester.makeconftest(FAILING_MODEL.format(error=error))
    result = project.run(*MODEL_DECIDES)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "model error in workflow 'vague' (vague.netgent.yaml:*)",
            "  reason: the model Failing failed while answering StateAnswer for workflow "
            f"'vague': {shown}",
        ]
    )
    text = result.stdout.str()
    assert "browser crashed" not in text and "Traceback" not in text


@pytest.mark.parametrize(
    "url", ["data:text/html,<script>location='http://elsewhere'</script>", "javascript:alert(1)"]
)
def test_the_model_may_not_open_a_page_it_writes_itself(url: str) -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from pytest_netgent.synthesis import Context
    from pytest_netgent.synthesis.llm import LLMSynthesiser
    from pytest_netgent.synthesis.observation import Observation
    from pytest_netgent.synthesis.transport import Refused
    from pytest_netgent.workflow.messages import ActionOutput

    synth = LLMSynthesiser(FakeListChatModel(responses=["{}"]))
    output = ActionOutput(action="navigate", params={"url": url}, reasoning="go")
    page = Observation(url="http://127.0.0.1:8000/wiki/", title="Wiki")
    with pytest.raises(Refused, match="only http"):
        synth._to_action(Context(workflow="w"), page, output)
    fine = ActionOutput(action="navigate", params={"url": "http://127.0.0.1:8000/x"}, reasoning="")
    assert synth._to_action(Context(workflow="w"), page, fine).params["url"].endswith("/x")
