"""Bad input and faults: each fails its own item clearly, nothing is lost, nothing runs
that should not. One case per finding, each asserting the exact outcome."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.workflow import store
from pytest_netgent.workflow.automaton import Automaton, State

from .helpers import (
    QUIET,
    SEARCH_STATES,
    SEARCH_WORKFLOW,
    Project,
    away_workflow,
    kill_conftest,
    leftovers,
)

# --------------------------------------------------------------------------- data loss

# Each parameter lands on a page of its own, so concurrent workers synthesise different
# states of one workflow into one cache file.
SPREAD = """
name: spread
start_url: "{base_url}/wiki/{page}"
parametrize:
  page: [login, article/quic, "search?q=zzz1", article/http-3, "search?q=zzz2",
         "login?next=1", article/webrtc, "search?q=zzz3"]
states:
  - name: Login form
    triggers: [The URL contains /wiki/login]
    end: Login
  - name: Article
    triggers: [The URL contains /wiki/article/]
    end: Article
  - name: Empty results
    triggers: [The URL contains /wiki/search?q=]
    end: Empty
"""


def test_concurrent_record_keeps_every_workers_states(project: Project) -> None:
    project.workflow("spread", SPREAD)
    cache = project.path / "__netgent__" / "spread" / "spread.json"
    for _ in range(10):
        cache.unlink(missing_ok=True)
        project.run_subprocess("--netgent-record", "-n", "2").assert_outcomes(passed=8)
        names = [s["name"] for s in json.loads(cache.read_text())["states"]]
        assert names == ["Login form", "Article", "Empty results"]
    project.run_subprocess("-n", "2").assert_outcomes(passed=8)
    assert oct(cache.stat().st_mode & 0o777) == oct(0o666 & ~current_umask())
    assert not list((project.path / "__netgent__").rglob("*.lock"))


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def state(name: str, selector: str) -> State:
    return State.model_validate(
        {
            "name": name,
            "checks": [{"type": "element", "params": {"by": "css selector", "selector": selector}}],
            "prompt_hash": "sha256:x",
        }
    )


def test_a_hand_edit_made_during_a_record_run_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "__netgent__" / "flow" / "flow.json"
    start = Automaton(workflow="flow", states=[state("A", "#a"), state("B", "#b")])
    store.write(path, start)
    # the user edits A by hand while a record run, which read the file before, heals B
    edited = Automaton(workflow="flow", states=[state("A", "#edited"), state("B", "#b")])
    store.write(path, edited)
    healed = Automaton(workflow="flow", states=[state("A", "#a"), state("B", "#healed")])
    store.write(path, healed, changed={"B"}, order=["A", "B"])
    doc = store.load(path)
    assert doc is not None
    assert [s.checks[0].params["selector"] for s in doc.states] == ["#edited", "#healed"]


def test_plain_record_leaves_a_trusted_file_as_it_is(project: Project) -> None:
    project.workflow(
        "trusted",
        """
        name: trusted
        start_url: "{base_url}/wiki/login"
        states:
          - name: Login form
            triggers: [The login form is visible]
            end: Login
        """,
    )
    cache = project.raw_states(
        project.path / "trusted.netgent.yaml",
        "trusted",
        [
            {
                "name": "Login form",
                "checks": [{"type": "element", "params": {"by": "id", "selector": "login-form"}}],
                "actions": [],
                "end_state": "Login",
            }
        ],
    )
    before = cache.read_bytes()
    project.run("--netgent-record").assert_outcomes(passed=1)
    assert cache.read_bytes() == before


def test_twin_files_that_would_share_a_cache_both_fail_clearly(project: Project) -> None:
    text = "name: twin\nstart_url: '{base_url}/wiki/'\nstates:\n  - {name: A, end: done}\n"
    (project.path / "twin.netgent.yaml").write_text(text)
    (project.path / "twin.netgent.yml").write_text(text)
    good(project)
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*twin.netgent.yaml:1: twin.netgent.yaml and twin.netgent.yml would share the "
            "cached states in __netgent__/twin/: rename one of the two files",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*twin.netgent.yml:1: twin.netgent.yml and twin.netgent.yaml would share*"]
    )


def test_parameter_values_of_one_id_make_items_of_their_own(project: Project) -> None:
    project.workflow(
        "dup",
        """
        name: dup
        start_url: "{base_url}/wiki/article/quic"
        parametrize:
          topic: [QUIC, QUIC, a b, a_b]
        states:
          - name: Article
            triggers: [An article heading is shown]
            end: Read
        """,
    )
    project.states(
        project.path / "dup.netgent.yaml",
        "dup",
        {
            "Article": (
                [{"type": "element", "params": {"by": "css selector", "selector": "h1"}}],
                [],
            )
        },
    )
    result = project.run_subprocess("-n", "2", "-v")
    result.assert_outcomes(passed=4)
    for name in ("dup[QUIC0]", "dup[QUIC1]", "dup[a_b0]", "dup[a_b1]"):
        assert f"PASSED dup.netgent.yaml::{name}" in result.stdout.str()


# --------------------------------------------------------------------------- YAML


def good(project: Project) -> None:
    """A workflow that passes (its start state holds on the blank page), to show that
    the session goes on beside a bad file."""
    path = project.workflow("good", "name: good\nstates:\n  - {name: Start, end: done}\n")
    project.raw_states(
        path,
        "good",
        [
            {
                "name": "Start",
                "checks": [{"type": "url", "params": {"url": "chrome://new-tab-page/"}}],
                "actions": [],
                "end_state": "done",
            }
        ],
    )


BOMB = (
    'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    + "".join(
        f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n"
        for p, n in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "name: bomb\nstates: [{name: A, end: done}]\n"
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BOMB, "bad.netgent.yaml:1: the document expands to more than 50000 values*"),
        (
            "name: x\nstates: " + "[" * 50000 + "]" * 50000 + "\n",
            "*bad.netgent.yaml:2: lists and maps nest deeper than 64 levels here",
        ),
        (
            "name: x\nstart_url: !custom x\nstates: [{name: A, end: done}]\n",
            "*bad.netgent.yaml:2: the tag '!custom' is not plain YAML data; workflow files "
            "hold only text, numbers, lists and maps: remove the tag",
        ),
        (
            "name: x\nstart_url: !!python/name:os.system x\nstates: [{name: A, end: done}]\n",
            "*bad.netgent.yaml:2: the tag 'tag:yaml.org,2002:python/name:os.system' is not*",
        ),
    ],
    ids=["alias-bomb", "deep-nesting", "local-tag", "python-tag"],
)
def test_hostile_yaml_fails_its_own_file_only(project: Project, text: str, message: str) -> None:
    (project.path / "bad.netgent.yaml").write_text(text)
    good(project)
    result = project.run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([message])


def test_yaml_merge_keys_simply_work(project: Project) -> None:
    project.workflow(
        "merged",
        """
        x-login: &login
          triggers: [The login form is visible]
          end: Login
        name: merged
        start_url: "{base_url}/wiki/login"
        states:
          - <<: *login
            name: Login form
        """,
    )
    project.states(
        project.path / "merged.netgent.yaml",
        "merged",
        {
            "Login form": (
                [{"type": "element", "params": {"by": "id", "selector": "login-form"}}],
                [],
            )
        },
    )
    project.run().assert_outcomes(passed=1)


# --------------------------------------------------------------------------- no code runs


@pytest.mark.parametrize(
    ("mark", "message"),
    [
        (
            "{skipif: [\"__import__('pathlib').Path('ran').touch() or False\"]}",
            "*mark 'skipif' has a string condition, which pytest would run as Python: "
            "workflow files hold data, not code*",
        ),
        (
            "{xfail: {condition: \"__import__('pathlib').Path('ran').touch()\", reason: r}}",
            "*mark 'xfail' has a string condition, which pytest would run as Python*",
        ),
        (
            "{usefixtures: [tmp_path]}",
            "*mark 'usefixtures' does not apply to workflow items: request the fixture from "
            "an autouse fixture in a conftest.py",
        ),
        (
            "{parametrize: [x, [1, 2]]}",
            "*mark 'parametrize' does not apply to workflow items: use the workflow's own "
            "'parametrize' key",
        ),
    ],
)
def test_marks_never_run_code_nor_vanish(project: Project, mark: str, message: str) -> None:
    project.workflow("marked", f"name: marked\nmarks: [{mark}]\nstates:\n  - {{name: A, end: d}}\n")
    good(project)
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([message])
    assert not (project.path / "ran").exists()


def test_the_heal_command_is_quoted_for_the_shell(project: Project) -> None:
    name = "x'$(touch pwned)'"
    project.workflow(
        "quoted",
        f"""
        name: "{name}"
        start_url: "{{base_url}}/wiki/"
        states:
          - name: Gone
            triggers: [The login form is visible]
            end: never
        """,
    )
    project.states(
        project.path / "quoted.netgent.yaml",
        name,
        {"Gone": ([{"type": "element", "params": {"by": "id", "selector": "nope"}}], [])},
    )
    result = project.run("-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    line = next(x for x in result.outlines if "heal with:" in x)
    command = line.split("heal with:", 1)[1].strip()
    assert shlex.split(command) == [
        "pytest",
        "--netgent-record=missing",
        f"quoted.netgent.yaml::{name}",
    ]


def test_a_very_long_workflow_name_records_and_replays(project: Project) -> None:
    name = "long-" + "x" * 300
    project.workflow(
        "long",
        f"""
        name: {name}
        start_url: "{{base_url}}/wiki/login"
        states:
          - name: Login form
            triggers: [The login form is visible]
            end: Login
        """,
    )
    project.run("--netgent-record").assert_outcomes(passed=1)
    (cache,) = (project.path / "__netgent__" / "long").iterdir()
    assert len(cache.name.encode()) <= 205 and cache.name.startswith("long-xxx")
    project.run().assert_outcomes(passed=1)


def test_a_symlinked_cache_folder_is_not_followed(project: Project, tmp_path: Path) -> None:
    project.workflow(
        "browse",
        """
        name: browse
        start_url: "{base_url}/wiki/login"
        states:
          - name: Login form
            triggers: [The login form is visible]
            end: Login
        """,
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project.path / "__netgent__").mkdir()
    (project.path / "__netgent__" / "browse").symlink_to(elsewhere)
    result = project.run("--netgent-record=all")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*browse is a symbolic link; the cache is written only inside*"])
    assert list(elsewhere.iterdir()) == []


# --------------------------------------------------------------------------- secrets

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


# --------------------------------------------------------------------------- faults


def unused_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def one_state(url: str) -> str:
    return f"""
name: faulty
start_url: "{url}"
states:
  - name: Page
    triggers: [The login form is visible]
    end: Seen
"""


def cache_one_state(project: Project, path: Path) -> None:
    project.states(
        path,
        "faulty",
        {"Page": ([{"type": "element", "params": {"by": "id", "selector": "login-form"}}], [])},
    )


def test_recording_against_a_site_that_is_down_says_so(project: Project) -> None:
    """Record mode does not synthesise on the browser's error page: it said "synthesis
    failure ... no element on chrome-error://" and asked for a better synthesiser."""
    url = f"http://127.0.0.1:{unused_port()}/"
    # the first page loads, then sends the browser to the site that is down
    start = f"data:text/html,<meta http-equiv=refresh content='0;url={url}'>"
    text = one_state(start).replace("states:", "allowed_hosts: [127.0.0.1]\nstates:")
    project.workflow("faulty", text)
    result = project.run("--netgent-record", "-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "network error in workflow 'faulty' (faulty.netgent.yaml:*)",
            f"  reason: the page did not load: ERR_CONNECTION_REFUSED at {url} (the site is "
            "down or unreachable; no re-recording heals this); no state can be recorded on "
            "a page that did not load",
        ]
    )
    assert "synthesis failure" not in result.stdout.str()
    assert not (project.path / "__netgent__").exists()  # nothing was written


def test_a_server_that_is_down_is_a_network_error_not_ui_drift(project: Project) -> None:
    url = f"http://127.0.0.1:{unused_port()}/"
    cache_one_state(project, project.workflow("faulty", one_state(url)))
    result = project.run("-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "network error in workflow 'faulty' (faulty.netgent.yaml:*)",
            f"  reason: the page did not load: ERR_CONNECTION_REFUSED at {url} (the site is "
            "down or unreachable; no re-recording heals this); *",
        ]
    )
    assert "heal with" not in result.stdout.str()


def test_a_server_error_status_is_named(project: Project) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Down(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"<h1>maintenance</h1>")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Down)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        cache_one_state(project, project.workflow("faulty", one_state(url)))
        result = project.run("-o", "netgent_state_timeout=1")
    finally:
        server.shutdown()
        server.server_close()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "server error in workflow 'faulty' (faulty.netgent.yaml:*)",
            f"  reason: the server answered 503 for {url} (a fault of the site, not of the "
            "workflow); no state matched the page within 1s*",
        ]
    )


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--netgent-state-timeout", "nan"], "*--netgent-state-timeout expects a number of "
         "seconds greater than 0, got 'nan'*"),
        (["--netgent-state-timeout", "1e309"], "*got '1e309'*"),
        (["-o", "netgent_state_timeout=inf"], "*ini netgent_state_timeout expects a number*"),
        (["--netgent-base-url", "http://[::1"], "*--netgent-base-url expects an http:// or "
         "https:// URL with a host, got 'http://[::1' (Invalid IPv6 URL)*"),
        (["--netgent-base-url", "http://"], "*got 'http://' (no host)*"),
        (["--netgent-base-url", "http://127.0.0.1:99999"], "*got 'http://127.0.0.1:99999' (Port "
         "out of range 0-65535)*"),
        (["--netgent-artifacts", "a-file"], "*--netgent-artifacts * is a file, not a folder*"),
        (["--netgent-record", "--netgent-llm", "nosuchmodule:chat"], "*--netgent-llm "
         "'nosuchmodule:chat': Unable to infer model provider for model='nosuchmodule:chat'*"),
    ],
)  # fmt: skip
def test_options_are_checked_once_up_front(project: Project, args: list[str], message: str) -> None:
    (project.path / "a-file").write_text("")
    good(project)
    result = project.run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert len(result.stderr.lines) <= 3  # one usage error, no traceback


def test_an_invalid_cached_parameter_names_file_state_and_action(project: Project) -> None:
    path = project.workflow("waits", "name: waits\nstates:\n  - {name: Start, end: done}\n")
    project.raw_states(
        path,
        "waits",
        [{"name": "Start", "checks": [], "actions": [{"type": "wait",
          "params": {"seconds": "forever"}}], "end_state": "done"}],
    )  # fmt: skip
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "__netgent__/waits/waits.json: invalid cached states: state 'Start': action 1 "
            "(wait): wait action: seconds must be a number (or a {placeholder}), got 'forever'"
        ]
    )
    # an element's index among the matches is a number too (it was an 89-line traceback)
    project.raw_states(
        path,
        "waits",
        [{"name": "Start", "checks": [], "actions": [{"type": "click",
          "params": {"by": "css selector", "selector": "a", "index": "first"}}],
          "end_state": "done"}],
    )  # fmt: skip
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "__netgent__/waits/waits.json: invalid cached states: state 'Start': action 1 "
            "(click): click action: index must be a number (or a {placeholder}), got 'first'",
            "  fix: fix the file by hand or delete it and re-record it",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_read_only_cache_folder_is_a_cache_error(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.workflow(
        "ro",
        """
        name: ro
        start_url: "{base_url}/wiki/login"
        states:
          - name: Login form
            triggers: [The login form is visible]
            end: Login
        """,
    )
    real_open = os.open

    def refusing(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # what a read-only folder answers (root would write anyway, so it is simulated)
        if "__netgent__" in str(path) and flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    result = project.run("--netgent-record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*__netgent__/ro/ro.json: cannot write the cached states: Permission denied",
         "  fix: make * writable (or point the suite elsewhere), then record again"]
    )  # fmt: skip
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "netgent: error: unknown option --bogus (netgent --help lists them)"),
        (["-e", "s.json", "--state-timout", "3"], "netgent: error: unknown option "
         "--state-timout; did you mean --state-timeout?*"),
        (["-e", "s.json", "--state-timeout", "-5"], "*--state-timeout: '-5': give a number of "
         "seconds above 0"),
        (["-e", "s.json", "--user-data-dir", "no/where"], "netgent: error: --user-data-dir "
         "no/where: neither it nor its folder no exists"),
        (["-e", "s.json", "--user-data-dir", "s.json"], "netgent: error: --user-data-dir "
         "s.json is a file: give a profile folder"),
        (["-e", "s.json", "-o", "ro/result.json"], "netgent: error: -o ro/result.json: cannot "
         "write there; choose a writable place"),
    ],
)  # fmt: skip
def test_the_netgent_command_checks_its_arguments_before_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    args: list[str], message: str,
) -> None:  # fmt: skip
    from fnmatch import fnmatch

    from pytest_netgent.compat.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.json").write_text('[{"name": "A", "checks": [], "end_state": "x"}]')
    (tmp_path / "ro").mkdir()
    # immutable: nothing can be made in it, root or not (root passes permission bits)
    subprocess.run(["chattr", "+i", str(tmp_path / "ro")], check=True)
    try:
        assert main(args) == 2
    finally:
        subprocess.run(["chattr", "-i", str(tmp_path / "ro")], check=True)
    err = capsys.readouterr().err.strip().splitlines()
    assert any(fnmatch(line, message) for line in err), err


@pytest.mark.parametrize("path", ["/wiki/login", "/social/login"])
def test_the_local_logins_take_any_password(base_url: str, path: str) -> None:
    """The local apps are as robust as what they imitate: a non-ASCII password (or bytes
    that are not UTF-8) is a wrong password, not a server error."""
    import urllib.error
    import urllib.request

    for body in (b"username=researcher&password=p%C3%A4ss%E2%82%AC", b"password=\xff"):
        request = urllib.request.Request(f"{base_url}{path}", data=body, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status = answer.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status in (200, 303, 401), (path, body, status)


def test_an_unquoted_colon_in_a_trigger_says_to_quote_the_line(project: Project) -> None:
    project.workflow(
        "colon",
        """
        name: colon
        states:
          - name: Rows
            triggers:
              - The row page "cities: 1" is shown
            end: done
        """,
    )
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "colon.netgent.yaml:5: states.0.triggers.0 in state 'Rows': this line holds ': ' "
            "(in 'The row page \"cities: 1\" is shown'), which YAML reads as a key and a "
            'value, not text: put the whole line in quotes, e.g. - \'The row page "cities: 1" '
            "is shown'"
        ]
    )


def test_a_failure_header_names_the_item_with_its_parameters(project: Project) -> None:
    path = project.workflow(
        "users",
        """
        name: user-search
        start_url: "{base_url}/wiki/"
        parametrize:
          user: [alice]
        states:
          - name: Gone
            triggers: [The login form is visible]
            end: never
        """,
    )
    project.states(
        path, "user-search",
        {"Gone": ([{"type": "element", "params": {"by": "id", "selector": "nope"}}], [])},
    )  # fmt: skip
    result = project.run("-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["UI drift in workflow 'user-search[[]alice[]]' (users.netgent.yaml:*)"]
    )


HUNG = """
name: hung
start_url: "{base_url}/wiki/"
timeout: 6
states:
  - name: Home
    triggers: ["'Featured' is shown"]
    end: Home
"""


def test_a_script_check_that_never_returns_fails_its_item_only(project: Project) -> None:
    path = project.workflow("hung", HUNG)
    spin = {"type": "script", "params": {"script": "(() => { while (true) {} })()"}}
    project.raw_states(path, "hung", [{"name": "Home", "checks": [spin], "end_state": "Home"}])
    project.workflow("fine", HUNG.replace("hung", "fine"))
    project.raw_states(
        project.path / "fine.netgent.yaml",
        "fine",
        [{"name": "Home", "checks": [{"type": "text", "params": {"text": "Featured"}}],
          "end_state": "Home"}],
    )  # fmt: skip
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "script error in workflow 'hung'*",
            "  reason: the page stopped answering while the checks of the candidate states "
            "ran: a script check (of 'Home') never returns; its tab was closed to stop it*",
        ]
    )
    assert "heal with" not in result.stdout.str()


def test_a_page_load_gets_only_what_is_left_of_the_workflow_timeout(
    project: Project, slow_server: str
) -> None:
    project.workflow(
        "slow",
        f"""
        name: slow
        start_url: "{slow_server}/page?seconds=30"
        timeout: 3
        states:
          - name: Page
            triggers: [The page says slow]
            end: Page
        """,
    )
    project.raw_states(
        project.path / "slow.netgent.yaml",
        "slow",
        [{"name": "Page", "checks": [{"type": "text", "params": {"text": "slow"}}],
          "end_state": "Page"}],
    )  # fmt: skip
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*start_url: navigate: */page?seconds=30 did not finish loading within *s (what was "
         "left of the workflow's timeout; raise 'timeout' if it needs longer)*"]
    )  # fmt: skip
    assert float(result.duration) < 20


def test_a_slow_api_is_a_timeout_not_ui_drift(project: Project, slow_server: str) -> None:
    path = project.workflow(
        "items",
        f"""
        name: items
        start_url: "{slow_server}/app?seconds=30"
        states:
          - name: Items
            triggers: [The list shows one]
            end: Items
        """,
    )
    project.raw_states(
        path,
        "items",
        [{"name": "Items", "checks": [{"type": "text", "params": {"text": "one"}}],
          "end_state": "Items"}],
    )  # fmt: skip
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "timeout in workflow 'items'*",
            f"  reason: the page was still waiting for its server: GET {slow_server}/api?"
            "seconds=30 unanswered after *s (a slow server or API, not a UI change; raise "
            "'state_timeout' if the site is this slow); no state matched the page within 3s*",
        ]
    )
    assert "heal with" not in result.stdout.str()


WAITS = """
name: {name}
start_url: "{{base_url}}/wiki/"
states:
  - name: Home
    triggers: [The search box is visible]
    actions: [Wait {seconds} seconds]
    end: waited
"""


SEARCH_BOX = {"by": "css selector", "selector": "#search-input"}


def waiting_workflow(project: Project, name: str, seconds: int) -> None:
    path = project.workflow(name, WAITS.format(name=name, seconds=seconds))
    project.raw_states(
        path,
        name,
        [{"name": "Home", "checks": [{"type": "element", "params": SEARCH_BOX}],
          "actions": [{"type": "wait", "params": {"seconds": seconds}}], "end_state": "waited"}],
    )  # fmt: skip


@pytest.mark.usefixtures("cpu_burners")  # a stop must hold on a busy machine
@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT], ids=["killed", "ctrl-c"])
def test_a_driver_that_dies_leaves_no_browser_behind(
    project: Project, short_tmp: Path, monkeypatch: pytest.MonkeyPatch, stop: signal.Signals
) -> None:
    tmp = short_tmp
    monkeypatch.setenv("TMPDIR", str(tmp))
    waiting_workflow(project, "victim", 4)
    waiting_workflow(project, "wrap-up", 1)  # collected after the victim
    project.pytester.makeconftest(kill_conftest("driver", stop))
    result = project.run_subprocess("-p", "no:randomly")
    result.stdout.fnmatch_lines(["*the browser crashed or stopped answering at step 1*"])
    if stop == signal.SIGKILL:  # the next item starts a new browser
        result.assert_outcomes(passed=1, failed=1)
    else:
        # a Ctrl-C reaches the whole process group: should pytest itself miss it, the
        # driver ended by it still stops the run before another browser starts
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*KeyboardInterrupt: the browser's ChromeDriver was stopped by SIGINT (Ctrl-C)*"]
        )
    assert leftovers(tmp) == ([], [])


def browsers_started(tmp: Path) -> set[bytes]:
    """The profiles in ``tmp`` a browser runs on (a profile folder is made before its
    browser starts)."""
    found = set()
    for pid in leftovers(tmp)[1]:
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            found.update(a for a in args if a.startswith(b"--user-data-dir="))
    return found


@pytest.mark.parametrize(
    ("stop", "workers"),
    [(signal.SIGINT, 2), (signal.SIGTERM, 2), (signal.SIGTERM, 0)],
    ids=["ctrl-c", "sigterm", "sigterm-one-process"],
)
@pytest.mark.usefixtures("cpu_burners")  # a stop must hold on a busy machine
def test_a_stopped_run_leaves_no_browser_or_profile(
    project: Project, short_tmp: Path, stop: signal.Signals, workers: int
) -> None:
    tmp = short_tmp
    for n in range(4):
        waiting_workflow(project, f"long{n}", 30)
    command = [sys.executable, "-m", "pytest", *QUIET, "-n", str(workers), "-p", "no:randomly",
               f"--netgent-base-url={project.base_url}"]  # fmt: skip
    browsers = max(workers, 1)
    run = subprocess.Popen(
        command,
        cwd=project.path,
        env={**os.environ, "TMPDIR": str(tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while len(browsers_started(tmp)) < browsers and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(browsers_started(tmp)) == browsers, "every browser started"
        time.sleep(4)  # the items are inside their wait
        os.killpg(run.pid, stop)  # what a terminal's Ctrl-C (or a CI job's timeout) does
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            still = subprocess.run(["ps", "-o", "pid,stat,etime,args", "-g", str(run.pid)],
                                   capture_output=True, text=True, check=False).stdout  # fmt: skip
            pytest.fail(f"the run did not end within 60 s of {stop.name}; still running:\n{still}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    # SIGTERM too: the run ends as pytest's own Ctrl-C ends it, its workers and their
    # browsers with it
    assert run.returncode == pytest.ExitCode.INTERRUPTED
    time.sleep(1)  # what the browser's own helpers end on their own
    assert leftovers(tmp) == ([], [])


def test_forty_thousand_never_matching_states_replay(project: Project) -> None:
    path = project.workflow("big", HUNG.replace("hung", "big").replace("timeout: 6\n", ""))
    never = [
        {"name": f"Never {n}", "checks": [{"type": "element",
         "params": {"by": "css selector", "selector": f"#never-{n}"}}]}
        for n in range(40_000)
    ]  # fmt: skip
    home = {"name": "Home", "checks": [{"type": "text", "params": {"text": "Featured"}}],
            "end_state": "Home"}  # fmt: skip
    project.raw_states(path, "big", [*never, home])
    started = time.monotonic()
    project.run().assert_outcomes(passed=1)
    # every state used to be placed by scanning all placed before it: over 100 s here
    assert time.monotonic() - started < 60


def test_states_keep_their_declared_order_whatever_order_they_come_in() -> None:
    from pytest_netgent.replay.engine import Engine
    from pytest_netgent.replay.run import RunSettings

    def named(name: str) -> State:
        return State.model_validate({"name": name, "checks": []})

    engine = Engine(
        None,  # type: ignore[arg-type]  # placing states talks to no browser
        "w",
        [named("C"), named("A")],
        {},
        {},
        RunSettings(),
        order=["A", "B", "C", "D"],
    )
    engine.put_state(named("D"))
    engine.put_state(named("B"))
    engine.put_state(named("X"))  # not declared: last
    engine.put_state(named("B"), replace=False)  # a second of one name: after the first
    assert [s.name for s in engine.states] == ["A", "B", "B", "C", "D", "X"]
    assert engine.put_state(named("C")) == 3  # replaced where it is


def test_a_page_that_takes_the_browser_elsewhere_is_stopped_before_it_leaves(
    project: Project, slow_site: Any
) -> None:
    elsewhere = away_workflow(project, slow_site.url)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "navigation blocked in workflow 'away'*",
            f"  reason: the page tried to open {elsewhere}, outside allowed_hosts "
            "['127.0.0.1']: it was stopped before any request left; add the host to the "
            "workflow's 'allowed_hosts' if this is expected",
        ]
    )
    assert "/landing" not in slow_site.hits


def test_a_lock_folder_that_is_not_the_users_own_is_refused(
    project: Project, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another user of a shared temporary folder made the lock folder a link elsewhere
    elsewhere = short_tmp / "elsewhere"
    elsewhere.mkdir()
    (short_tmp / f"pytest-netgent-locks-{os.getuid()}").symlink_to(elsewhere)
    monkeypatch.setenv("TMPDIR", str(short_tmp))
    project.workflow("locked", HUNG.replace("hung", "locked").replace("timeout: 6\n", ""))
    result = project.run_subprocess("--netgent-record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*__netgent__/locked/locked.json: the lock folder * is not this user's own folder",
         "  fix: remove * (it is made again), then run again"]
    )  # fmt: skip
    assert list(elsewhere.iterdir()) == []


def test_a_filled_value_is_never_filled_again() -> None:
    """``{name}`` and NetGent's ``%name%`` are filled in one pass: a password that holds
    ``%user%`` (or a query that holds ``{user}``) is typed as it is, not filled again."""
    from pytest_netgent.replay.run import substitute

    values = {"password": "p%user%x", "query": "a{user}b", "user": "alice"}
    assert substitute("{password}", values) == "p%user%x"
    assert substitute("%password%", values) == "p%user%x"
    assert substitute("%query% by {user}", values) == "a{user}b by alice"
    assert substitute({"text": ["{query}", "%user%"]}, values) == {"text": ["a{user}b", "alice"]}


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


@pytest.mark.parametrize("length", [30, 40, 90])
def test_a_long_temporary_folder_still_starts_the_browser(
    project: Project, monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    """Chromium's socket under TMPDIR must fit 107 bytes: a TMPDIR of 27-40 characters
    failed every item with "check that chromium and chromium-driver are the same
    version". Both the plugin's own profiles and a user's (--netgent-user-data-dir)."""
    import tempfile as tmp

    root = Path(tmp.mkdtemp(prefix="ng-", dir="/tmp"))
    folder = root / ("x" * (length - len(str(root)) - 1))
    folder.mkdir()
    profile = root / "p"
    profile.mkdir()
    try:
        monkeypatch.setenv("TMPDIR", str(folder))
        path = project.workflow("search", SEARCH_WORKFLOW)
        project.states(path, "search", SEARCH_STATES)
        project.run_subprocess().assert_outcomes(passed=1)
        project.run_subprocess(f"--netgent-user-data-dir={profile}").assert_outcomes(passed=1)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_socket_path_too_long_is_named_as_the_cause() -> None:
    from pytest_netgent.browser.tempdir import socket_room

    assert socket_room("/tmp") > 0
    assert socket_room("/tmp/" + "x" * 56) == 0  # 61 characters: the longest that fits
    assert socket_room("/tmp/" + "x" * 57) < 0


VANISHING_DRIVER = """
import socket, sys
port = int(next(a for a in sys.argv if a.startswith("--port=")).split("=")[1])
with open(sys.argv[0] + ".starts", "a") as log:
    log.write("start\\n")
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen()
server.accept()[0].close()  # it answers that it listens...
server.accept()[0].close()  # ...then its process goes away, the new session unanswered
"""


def test_a_chromedriver_that_goes_away_as_it_starts_is_tried_again_then_named(
    tmp_path: Path,
) -> None:
    """A ChromeDriver whose process goes away once it has listened (a loaded machine,
    something ending its processes) fails the start with an error naming it and what to
    check, never a transport's traceback (older Selenium let that out: then the start is
    tried once more with a new ChromeDriver)."""
    from pytest_netgent.browser.session import BrowserOptions, start_browser
    from pytest_netgent.errors import BrowserError

    fake = tmp_path / "chromedriver"
    fake.write_text(f"#!{sys.executable}\n{VANISHING_DRIVER}", encoding="utf-8")
    fake.chmod(0o755)
    with pytest.raises(BrowserError) as failed:
        start_browser(BrowserOptions(chromedriver=str(fake)))
    said = str(failed.value)
    assert str(fake) in said and ("stopped answering" in said or "did not start" in said), said
    starts = (tmp_path / "chromedriver.starts").read_text().count("start")
    assert starts == (2 if "stopped answering" in said else 1), (starts, said)
