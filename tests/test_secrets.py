"""A workflow's secrets stay out of everything a run writes: its files and captures,
Selenium's debug log, the terminal, junit and a traceback with its locals; a secret shows
only its ``{name}``."""

from __future__ import annotations

import json
import re

import pytest

from .helpers import Project

SECRET = "s3cr~t wörd+x/y&z"


def encodings(value: str) -> list[str]:
    """Every form the value could take in a file: as typed, URL and form encoded (both
    hex cases, ``~`` either way), JSON-escaped, and split into its characters as
    Selenium's debug log shows an element's keys (``'value': ['s', '3', ...]``)."""
    from urllib.parse import quote, quote_plus

    forms = {value, json.dumps(value)[1:-1], "', '".join(value), '", "'.join(value)}
    for encoded in (quote(value, safe=""), quote_plus(value), quote(value)):
        for form in (encoded, encoded.replace("~", "%7E")):
            forms |= {form, form.lower()}
    return sorted(f for f in forms if f)


def keys_down(text: str) -> str:
    """The keys of every W3C key action logged in ``text``, one ``keyDown`` each (the
    form an action chain's typing takes in Selenium's debug log)."""
    found = re.findall(r"""'type': 'keyDown', 'value': '((?:[^'\\]|\\.))'""", text)
    return "".join(found)


SECRET_SEARCH = """
name: secret-search
start_url: "{base_url}/wiki/"
secrets: {query: NETGENT_TEST_SECRET}
states:
  - name: Results
    triggers: [The URL contains /wiki/search?]
    end: Searched
  - name: Home
    triggers: [The search box is visible]
    actions:
      - Type {query} into the search box
      - Press Enter
"""


@pytest.mark.parametrize("typing", ["element", "key-actions"])
def test_a_secret_in_a_get_form_reaches_no_file_log_or_report(
    project: Project, monkeypatch: pytest.MonkeyPatch, typing: str
) -> None:
    """Also in Selenium's own debug log, which shows a typed value one character at a
    time: an element's keys as a list, an action chain's as one key action each."""
    monkeypatch.setenv("NETGENT_TEST_SECRET", SECRET)
    path = project.workflow("secret", SECRET_SEARCH)
    into = {"by": "id", "selector": "search-input"}
    if typing == "key-actions":  # no element: the keys go to the focused one
        into = {}
    project.states(
        path,
        "secret-search",
        {
            "Home": (
                [{"type": "element", "params": {"by": "id", "selector": "search-input"}}],
                [
                    {"type": "click", "params": {"by": "id", "selector": "search-input"}},
                    {"type": "type", "params": {**into, "text": "{query}"}},
                    {"type": "press_key", "params": {"key": "Enter"}},
                ],
            ),
            "Results": (
                [{"type": "url", "params": {"url": "{base_url}/wiki/search?", "match": "prefix"}}],
                [],
            ),
        },
    )  # fmt: skip
    artifacts = project.path / "out"
    result = project.run_subprocess(
        "--netgent-capture=har,netlog", f"--netgent-artifacts={artifacts}",
        "--log-level=DEBUG", "-rA", "--junitxml=junit.xml", "-v",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    texts = {"stdout": result.stdout.str(), "junit": (project.path / "junit.xml").read_text()}
    for file in artifacts.rglob("*"):
        if file.is_file():
            texts[str(file)] = file.read_text(errors="replace")
    assert any("selenium" in t for t in texts.values())  # the debug log did run
    har = next(t for name, t in texts.items() if name.endswith("capture.har"))
    assert "q={query}" in har  # the URL is there, the value is not
    assert any("keys typed: '{query}'" in t for t in texts.values())  # the typing was logged
    for where, text in texts.items():
        for form in encodings(SECRET):
            assert form not in text, (where, form)
        assert SECRET not in keys_down(text), where


# a page whose first key press keeps the browser busy for 7 s: typing is under way
BUSY_KEY = "if(!window.b){window.b=1;let t=Date.now();while(Date.now()-t<7000){}}"


SLOW_KEYS = """
name: slow-keys
start_url: "data:text/html,<input id=pw onkeydown='BUSY_KEY'>"
secrets: {password: NETGENT_TEST_SECRET}
states:
  - name: Form
    triggers: [The password box is visible]
    actions: ["Type {password} into the password box"]
  - name: Done
    triggers: [Never]
    end: Typed
""".replace("BUSY_KEY", BUSY_KEY)


@pytest.mark.parametrize("tb", ["long", "native"])
def test_a_secret_stays_out_of_a_traceback_with_locals(
    project: Project, monkeypatch: pytest.MonkeyPatch, tb: str
) -> None:
    """pytest-timeout's signal method fails the item in the middle of typing, inside the
    browser driver's own frames (whose locals hold the command's body); --showlocals
    and --tb show every frame: the terminal and junit show the secret's name only."""
    monkeypatch.setenv("NETGENT_TEST_SECRET", SECRET)
    path = project.workflow("slow", SLOW_KEYS)
    project.states(
        path,
        "slow-keys",
        {
            "Form": (
                [{"type": "element", "params": {"by": "id", "selector": "pw"}}],
                [{"type": "type", "params": {"by": "id", "selector": "pw", "text": "{password}"}}],
            ),
            "Done": ([{"type": "element", "params": {"by": "id", "selector": "never"}}], []),
        },
    )
    result = project.run_subprocess(
        "-p", "timeout", "--timeout=4", "--timeout-method=signal", "--showlocals",
        f"--tb={tb}", "--junitxml=junit.xml", "-rA",
    )  # fmt: skip
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "Timeout" in out
    texts = {"stdout": out, "junit": (project.path / "junit.xml").read_text()}
    for where, text in texts.items():
        for form in encodings(SECRET):
            assert form not in text, (where, form)
        assert SECRET not in keys_down(text), where


def test_a_secret_shows_its_name_only() -> None:
    import pickle

    from pytest_netgent.system.redaction import Secret

    secret = Secret("password", SECRET)
    assert repr(secret) == str(secret) == f"{secret}" == "{password}"
    assert repr({"password": secret}) == "{'password': {password}}"
    assert SECRET.encode() not in pickle.dumps(secret)
    assert pickle.loads(pickle.dumps(secret)).reveal() == ""  # a copy keeps no value
    assert secret.reveal() == SECRET
