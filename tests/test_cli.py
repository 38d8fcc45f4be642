"""The ``netgent`` command: NetGent's -e / -g modes, convert, and every exit status (its
arguments checked before anything runs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent import load_context_from_file
from pytest_netgent.cli import main

from .helpers import QUIET, Project

LOGIN_PROMPTS = [
    {
        "name": "Start",
        "description": "The browser has just started",
        "triggers": ["If the browser shows a blank page"],
        "actions": ["Navigate to {base_url}/wiki/login"],
    },
    {
        "name": "Login form",
        "triggers": ["If the login form is visible"],
        "actions": [
            "Type {user} into the Username field",
            "Type {password} into the Password field",
            "Click the 'Log in' button",
        ],
    },
    {
        "name": "Account page",
        "triggers": ["If the welcome heading is shown"],
        "end_state": "Logged in",
    },
]
CREDENTIALS = {"user": "researcher", "password": "netgent-pass"}

# A NetGent state repository as NetGent writes it: a bare list in priority order (the
# search box is on every wiki page, so the results state comes before the search state).
NETGENT_REPOSITORY = [
    {
        "name": "Start",
        "checks": [{"type": "url", "params": {"url": "data:,"}}],
        "actions": [{"type": "navigate", "params": {"url": "{base_url}/wiki/"}}],
        "end_state": None,
        "config": {"continuous": False},
    },
    {
        "name": "Results",
        "checks": [
            {"type": "url", "params": {"url": "{base_url}/wiki/search?", "match": "prefix"}}
        ],
        "actions": [],
        "end_state": "Searched",
    },
    {
        "name": "Search",
        "checks": [{"type": "element", "params": {"by": "id", "selector": "search-input"}}],
        "actions": [
            {"type": "type", "params": {"by": "id", "selector": "search-input", "text": "QUIC"}},
            {"type": "press_key", "params": {"key": "Enter"}},
        ],
    },
]


def netgent(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``netgent args`` in this process: (status, stdout, stderr)."""
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def test_generate_then_replay_round_trips_with_secret_credentials(
    tmp_path: Path, base_url: str, changed_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = write(tmp_path / "login_prompts.json", LOGIN_PROMPTS)
    creds = write(tmp_path / "creds.json", CREDENTIALS)
    out = tmp_path / "out.json"
    var = f"base_url={base_url}"
    status, stdout, err = netgent(
        capsys, "-g", "builtin", str(creds), str(prompts), "-o", str(out), "--var", var
    )
    assert status == 0, err
    assert "end state reached: Logged in" in err and "0 LLM calls" in err
    repository = json.loads(out.read_text())
    assert [s["name"] for s in repository] == ["Start", "Login form", "Account page"]
    # NetGent's fields and types, and its start page, so NetGent's loader takes it too
    for state in repository:
        assert set(state) == {"name", "description", "checks", "actions", "end_state", "executed"}
        assert isinstance(state["end_state"], str) and state["executed"] == []
    assert {"type": "url", "params": {"url": "chrome://new-tab-page/"}} in repository[0]["checks"]
    typed = [a["params"]["text"] for a in repository[1]["actions"] if a["type"] == "type"]
    assert typed == ["{user}", "{password}"]
    for text in (out.read_text(), stdout, err):
        assert "netgent-pass" not in text

    result = tmp_path / "result.json"
    status, _, err = netgent(capsys, "-e", str(out), str(creds), "-o", str(result), "--var", var)
    assert status == 0, err
    data = json.loads(result.read_text())
    assert data["reached_end"] and data["end_state"] == "Logged in" and data["error"] is None
    assert [e["name"] for e in data["executed"]] == ["Start", "Login form", "Account page"]
    assert "netgent-pass" not in result.read_text()

    # The same repository against the changed UI: exit 1 with the drift report.
    status, _, err = netgent(
        capsys, "-e", str(out), str(creds), "--var", f"base_url={changed_url}",
        "--state-timeout", "2",
    )  # fmt: skip
    assert status == 1
    assert "UI drift in workflow 'out.json'" in err
    assert "last state reached: Start" in err and "[FAIL]" in err
    assert "heal with: regenerate the repository with netgent -g" in err
    assert "netgent-pass" not in err


def test_replays_a_netgent_repository_and_inline_credentials(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "google_result.json", NETGENT_REPOSITORY)
    profile = tmp_path / "cache"
    status, _, err = netgent(
        capsys, "-e", str(repo), "{}", "--var", f"base_url={base_url}",
        "--user-data-dir", str(profile),
    )  # fmt: skip
    assert status == 0, err
    assert "end state reached: Searched" in err
    assert (profile / "Default").is_dir()  # the browser used (and kept) this profile
    assert f"--user-data-dir {profile} does not exist: a new profile is made there" in err


def test_generate_with_a_chat_model_named_in_a_keys_file(
    tmp_path: Path,
    base_url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A module with a scripted model: the builtin rules decide what they can read; the
    # model is asked for the one instruction they cannot.
    (tmp_path / "scripted_model.py").write_text(
        textwrap.dedent(
            """
            import json
            from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            from langchain_core.messages import AIMessage

            REPLIES = [
                {"action": "navigate", "params": {"url": "{base_url}/wiki/login"},
                 "done": True, "reasoning": "the sign-in form is at /wiki/login"},
            ]
            usage = {"input_tokens": 40, "output_tokens": 8, "total_tokens": 48}
            model = GenericFakeChatModel(
                messages=iter([AIMessage(json.dumps(r), usage_metadata=usage) for r in REPLIES])
            )
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("SCRIPTED_KEY", raising=False)
    keys = write(
        tmp_path / "keys.json",
        {"model": "scripted_model:model", "env": {"SCRIPTED_KEY": "sk-test-123"}},
    )
    prompts = [dict(p) for p in LOGIN_PROMPTS]
    prompts[0]["actions"] = ["Bring up the sign-in form"]  # no rule reads it: the model
    status, stdout, err = netgent(
        capsys, "-g", str(keys), json.dumps(CREDENTIALS),
        str(write(tmp_path / "p.json", prompts)), "--var", f"base_url={base_url}",
    )  # fmt: skip
    assert status == 0, err
    assert "1 LLM call, 48 tokens" in err
    assert [s["name"] for s in json.loads(stdout)] == ["Start", "Login form", "Account page"]
    import scripted_model  # type: ignore[import-not-found]

    assert next(scripted_model.model.messages, None) is None  # its reply was used
    import os

    assert os.environ["SCRIPTED_KEY"] == "sk-test-123"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "one of the arguments -e/--execute -g/--generate is required"),
        (["-e", "missing.json"], "STATES missing.json: no such file"),
        (["-e", "{bad}.json"], "invalid JSON"),
        (["-e", "repo.json", "creds.json", "extra.json"], "-e takes STATES.json [CREDENTIALS]"),
        (
            ["-e", "unknown-action.json"],
            "state 'Start': action 1 (teleport): unknown action type 'teleport' (action types: "
            "navigate, click, type,",
        ),
        (["-e", "empty.json"], "STATES empty.json: holds no states"),
        (["-e", "repo.json", "[1, 2]"], "expected a JSON object of name: value, got a list"),
        (["-e", "repo.json", '{"password": 1'], "CREDENTIALS (inline JSON), column"),
        (["-e", "repo.json", '{"password": {"v": 1}}'], "'password' is a object"),
        (["-e", "repo.json", "--var", "base_url"], "--var 'base_url': write NAME=VALUE"),
        (["-g", "builtin", "{}"], "expected 3 arguments"),
        (["-g", "nomodel", "{}", "prompts.json"], "KEYS 'nomodel' is neither 'builtin'"),
        (["-g", "keys-no-model.json", "{}", "prompts.json"], 'no "model" key'),
        (["-g", "builtin", "{}", "repo.json"], "state 'Start': actions.0: Input should be"),
        (["-g", "builtin", "{}", "empty.json"], "expected a non-empty JSON list"),
        (["--state-timeout", "x", "-e", "repo.json"], "'x' is not a number of seconds"),
        (["--state-timeout", "-5", "-e", "repo.json"], "'-5': give a number of seconds above 0"),
        (["--duration", "nan", "-e", "repo.json"], "'nan': give a number of seconds above 0"),
        (["-e", "repo.json", "--variables", "[1]"], "--variables: expected a JSON object"),
        (["-e", "repo.json", "-o", "nowhere/out.json"], "-o nowhere/out.json: folder nowhere"),
    ],
)
def test_bad_input_exits_2_with_the_reason(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "repo.json", NETGENT_REPOSITORY)
    write(tmp_path / "prompts.json", LOGIN_PROMPTS)
    write(tmp_path / "empty.json", [])
    write(tmp_path / "keys-no-model.json", {"env": {}})
    (tmp_path / "{bad}.json").write_text('[{"name": "Start",\n "checks": [}]')
    bad = [dict(NETGENT_REPOSITORY[0], actions=[{"type": "teleport", "params": {}}])]
    write(tmp_path / "unknown-action.json", bad)
    status, stdout, err = netgent(capsys, *args)
    assert status == 2
    assert message in err
    assert stdout == ""


def test_convert_writes_a_workflow_that_records_and_replays(
    tmp_path: Path,
    project: Project,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prompts = write(project.path / "login_prompts.json", LOGIN_PROMPTS)
    creds = write(tmp_path / "creds.json", CREDENTIALS)
    status, _, err = netgent(capsys, "convert", str(prompts), "--credentials", str(creds))
    assert status == 0, err
    out = project.path / "login.netgent.yaml"
    assert "export NETGENT_USER=... NETGENT_PASSWORD=..." in err
    text = out.read_text()
    assert "secrets:\n  user: NETGENT_USER\n  password: NETGENT_PASSWORD" in text
    assert "netgent-pass" not in text and "researcher" not in text
    assert "end: Logged in" in text

    # Again: refuses to overwrite; --force does.
    assert netgent(capsys, "convert", str(prompts))[0] == 2
    assert netgent(capsys, "convert", str(prompts), "--force")[0] == 0
    assert netgent(capsys, "convert", str(prompts), "--credentials", str(creds), "--force")[0] == 0

    monkeypatch.setenv("NETGENT_USER", "researcher")
    monkeypatch.setenv("NETGENT_PASSWORD", "netgent-pass")
    url = f"--netgent-base-url={project.base_url}"
    record = project.pytester.runpytest_subprocess(*QUIET, url, "--netgent-record")
    record.assert_outcomes(passed=1)
    replay = project.pytester.runpytest_subprocess(*QUIET, url)
    replay.assert_outcomes(passed=1)


def test_convert_rejects_prompts_without_an_end_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = write(tmp_path / "p.json", LOGIN_PROMPTS[:2])
    status, _, err = netgent(capsys, "convert", str(prompts))
    assert status == 2
    assert "no state prompt has an end_state" in err
    assert list(tmp_path.iterdir()) == [prompts]  # nothing written
    assert netgent(capsys, "convert", str(prompts), "-o", "x.yaml")[0] == 2


def test_message_context_of_a_generation_saves_and_loads(tmp_path: Path, base_url: str) -> None:
    from pytest_netgent import (
        ExecutedState,
        Metadata,
        NetGent,
        StatePrompt,
        Toolcall,
        format_context,
        save_context_to_file,
    )

    prompts = [StatePrompt.model_validate(p) for p in LOGIN_PROMPTS]
    with NetGent(llm_enabled=True, credentials=CREDENTIALS) as agent:
        result = agent.run(state_prompts=prompts, variables={"base_url": base_url})
    assert result.reached_end, result.error
    kinds = {type(m) for m in result.context}
    assert kinds == {Metadata, Toolcall, ExecutedState}
    saved = tmp_path / "context.json"
    save_context_to_file(result.context, saved)
    assert "netgent-pass" not in saved.read_text()
    loaded = load_context_from_file(saved)
    assert loaded == result.context
    text = format_context(loaded)
    assert "<metadata timestep=" in text and "type(" in text


@pytest.mark.skipif(shutil.which("netgent") is None, reason="the netgent script is not installed")
def test_console_script_help_and_version() -> None:
    from pytest_netgent import __version__

    done = subprocess.run(["netgent", "--version"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, f"netgent {__version__}")
    done = subprocess.run(["netgent", "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert "-e STATES.json [CREDENTIALS ...]" in done.stdout and "Exit status" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "pytest_netgent.cli", "-e"], capture_output=True, text=True
    )
    assert done.returncode == 2


def test_several_repositories_and_scripts_run_at_once_each_with_its_result(
    tmp_path: Path, base_url: str, changed_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    search = write(tmp_path / "search_result.json", NETGENT_REPOSITORY)
    other = write(tmp_path / "again.json", NETGENT_REPOSITORY)
    script = tmp_path / "fetch.sh"
    script.write_text(f"curl -sS --fail -o /dev/null {base_url}/files/2MB && echo fetched\n")
    out = tmp_path / "out"
    status, _, err = netgent(
        capsys, str(search), str(other), str(script), "--out", str(out),
        "--var", f"base_url={base_url}",
    )  # fmt: skip
    assert status == 0, err
    assert "all 3 succeeded" in err
    for name in ("search", "again"):
        result = json.loads((out / name / f"{name}_result.json").read_text())
        assert result["reached_end"] and result["end_state"] == "Searched"
        assert "end state reached: Searched" in (out / name / f"{name}.log").read_text()
    fetched = json.loads((out / "fetch" / "fetch_result.json").read_text())
    assert fetched["exit_status"] == 0
    assert (out / "fetch" / "fetch.log").read_text() == "fetched\n"
    # at the same time: each run began before the others ended
    spans = [(fetched["started"], fetched["started"])]
    for name in ("search", "again"):
        timeline = json.loads((out / name / f"{name}_result.json").read_text())["timeline"]
        spans.append((timeline[0]["at"], timeline[-1]["at"]))
    assert max(start for start, _ in spans) < min(end for _, end in spans[1:]), spans

    # one failing script and one drifting repository: exit 1, each named, others done
    script.write_text("echo trying; exit 4\n")
    status, _, err = netgent(
        capsys, str(search), str(other), str(script), "--out", str(out),
        "--var", f"base_url={changed_url}", "--state-timeout", "2",
    )  # fmt: skip
    assert status == 1
    assert "3 of 3 failed: search, again, fetch" in err
    assert json.loads((out / "fetch" / "fetch_result.json").read_text())["exit_status"] == 4
    assert "UI drift" in (out / "search" / "search.log").read_text()

    # bad input stops everything before anything runs
    status, _, err = netgent(capsys, str(search), str(tmp_path / "nope.sh"), "--out", str(out))
    assert status == 2 and "nope.sh: no such file" in err
    write(tmp_path / "search.json", NETGENT_REPOSITORY)
    status, _, err = netgent(capsys, str(search), str(tmp_path / "search.json"))
    assert status == 2 and "would both write out/search/" in err


def test_convert_turns_a_multi_application_run_into_a_scenario(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = tmp_path / "netgent"
    inputs.mkdir()
    write(inputs / "search_result.json", NETGENT_REPOSITORY)
    (inputs / "fetch.sh").write_text(f"curl -sS --fail -o /dev/null {base_url}/files/1MB\n")
    project = tmp_path / "project" / "mixed"  # made by convert, as mkdir -p would
    status, _, err = netgent(
        capsys, "convert", str(inputs / "search_result.json"), str(inputs / "fetch.sh"),
        "-o", str(project), "--name", "evening",
    )  # fmt: skip
    assert status == 0, err
    assert "wrote" in err and "evening.netgent.yaml (2 members)" in err
    text = (project / "evening.netgent.yaml").read_text()
    assert "workflow: search.netgent.yaml::search" in text
    assert "run: bash ../../netgent/fetch.sh" in text
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *QUIET, "-p", "no:randomly", "evening.netgent.yaml",
         f"--netgent-base-url={base_url}", "-v"],
        cwd=project, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    assert "evening.netgent.yaml::evening PASSED" in done.stdout


def test_convert_makes_the_output_folder_as_mkdir_p_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository = write(tmp_path / "search_result.json", NETGENT_REPOSITORY)
    out = tmp_path / "suite" / "netgent"
    status, _, err = netgent(capsys, "convert", str(repository), "-o", str(out))
    assert status == 0, err
    assert (out / "search.netgent.yaml").is_file()
    assert (out / "__netgent__" / "search" / "search.json").is_file()

    blocker = tmp_path / "taken"
    blocker.write_text("a file, not a folder\n")
    status, _, err = netgent(capsys, "convert", str(repository), "-o", str(blocker))
    assert status == 2 and f"-o {blocker} is a file: give a folder" in err
    status, _, err = netgent(capsys, "convert", str(repository), "-o", str(blocker / "below"))
    assert status == 2 and "cannot create the folder" in err
    assert blocker.read_text() == "a file, not a folder\n"


def test_deeply_nested_json_is_bad_input_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    for args in (["convert", str(deep)], ["-e", str(deep)]):
        status, _, err = netgent(capsys, *args)
        assert status == 2, err
        assert f"STATES {deep}: its JSON is nested deeper than can be read" in err
        assert "Traceback" not in err and "RecursionError" not in err


def test_an_output_folder_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An immutable folder: root passes its permission bits, yet nothing can be made in
    it. -e is refused before anything runs, convert before anything is written."""
    repository = write(tmp_path / "search_result.json", NETGENT_REPOSITORY)
    locked = tmp_path / "locked"
    locked.mkdir()
    subprocess.run(["chattr", "+i", str(locked)], check=True)
    try:
        status, _, err = netgent(capsys, "-e", str(repository), "-o", str(locked / "r.json"))
        assert status == 2 and "cannot write there; choose a writable place" in err
        assert "end state" not in err  # refused before the run
        status, _, err = netgent(capsys, "convert", str(repository), "-o", str(locked))
        assert status == 2 and "cannot write there" in err and "Traceback" not in err
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True)
    assert list(locked.iterdir()) == []


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
