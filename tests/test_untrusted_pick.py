"""A step file (``pick.json``) is data from elsewhere: a bug report, a CI artifact.

``netgent studio`` never runs what a step file says, nor where it says: it records the
workflow the file names with a command of its own, in the suite folder the file lies in,
and refuses (a one-line usage error, exit 2, nothing written) a file naming anything
outside that folder. It records against the file's base URL only when that is this
machine, another site only when the user names it (``--base-url``). It says "recorded
and replayed" only when the cache was written with the pick.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_netgent.cli import main as netgent
from pytest_netgent.studio import pick_server
from pytest_netgent.studio.pick_server import serve
from pytest_netgent.synthesis.observation import ObservedElement, Selector
from pytest_netgent.synthesis.picks import LEGACY, PickError, Step, picks_path, read_step

from .helpers import Project, css, url_is
from .test_studio_pick import LOGIN, declined, post

pytestmark = pytest.mark.xdist_group("studio")

EVIL_PLUGIN = """\
from pathlib import Path

Path(__file__).with_name("marker").write_text("the pick file's command ran")
"""
"""A plugin that leaves ``marker`` in its own folder once it is imported."""


def evil_command(target: str) -> list[str]:
    """What a crafted step file says to run: the item's recording, with a plugin."""
    return ["--netgent-record=missing", target, "-p", "evilplugin"]


def tree(folder: Path) -> list[str]:
    """Every file and folder below ``folder`` (symlinks not followed)."""
    found = []
    for root, dirs, files in os.walk(folder):
        found += [str(Path(root, name).relative_to(folder)) for name in dirs + files]
    return sorted(found)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A suite folder (its tox.ini says so) with the login workflow."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "tox.ini").write_text("[pytest]\n")
    (folder / "login.netgent.yaml").write_text(textwrap.dedent(LOGIN).lstrip())
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the suite, holding the evil plugin and a workflow of its own."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "evilplugin.py").write_text(EVIL_PLUGIN)
    (folder / "login.netgent.yaml").write_text(textwrap.dedent(LOGIN).lstrip())
    return folder


def pick_file(suite: Path, **fields: Any) -> Path:
    """A step file of the login in ``suite``'s artifacts folder, with ``fields`` set
    (``None``: left out)."""
    step = Step(
        workflow="login",
        state="Form",
        number=3,
        instruction="Click 'Log in'",
        reason="'Log in' is ambiguous",
        workflow_file="login.netgent.yaml",
        item="login",
    )
    doc = {**step.model_dump(exclude=set(LEGACY)), **fields}
    path = suite / "netgent-artifacts" / "login.netgent.yaml_login" / "pick.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({k: v for k, v in doc.items() if v is not None}))
    return path


def login_button(step: Step) -> int:
    """The element of the login form's button, one of the step's candidates."""
    scored = {c.mmid for c in step.candidates}
    return next(e.mmid for e in step.elements if e.tag == "button" and e.mmid in scored)


def studio_exit(path: Path, monkeypatch: pytest.MonkeyPatch, *options: str) -> int:
    """``netgent studio PATH OPTIONS``; a studio that serves is stopped at once (as by
    Ctrl-C)."""

    def ctrl_c(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pick_server, "time", SimpleNamespace(sleep=ctrl_c))
    return netgent(["studio", str(path), *options])


LEGACY_ONLY = {"workflow_file": None, "item": None}
"""A step file as older releases wrote it: no workflow file, no item."""

CRAFTED: dict[str, Callable[[Path], dict[str, Any]]] = {
    "rootdir-elsewhere": lambda out: {
        "rootdir": str(out),
        "command": evil_command("login.netgent.yaml::login"),
    },
    "rootdir-climbing": lambda out: {"rootdir": "../outside", "command": evil_command("x::y")},
    "picks-climbing": lambda out: {
        **LEGACY_ONLY,
        "picks": "../outside/__netgent__/login/login.picks.json",
    },
    "picks-absolute": lambda out: {
        **LEGACY_ONLY,
        "picks": str(out / "__netgent__" / "login" / "login.picks.json"),
    },
    "picks-elsewhere": lambda out: {"picks": str(out / "login.picks.json")},
    "workflow_file-climbing": lambda out: {"workflow_file": "../outside/login.netgent.yaml"},
    "workflow_file-absolute": lambda out: {"workflow_file": str(out / "login.netgent.yaml")},
    "workflow_file-symlink": lambda out: {"workflow_file": "linked/login.netgent.yaml"},
    "workflow_file-not-a-workflow": lambda out: {"workflow_file": "tox.ini"},
    "item-another": lambda out: {"item": "other"},
    "base_url-script": lambda out: {"base_url": "javascript:alert(1)"},
}
"""Step files naming something outside the suite (``linked`` is a symlink to the
folder ``out`` beside it), by the field at fault."""


@pytest.mark.parametrize("case", sorted(CRAFTED))
def test_a_step_file_naming_anything_outside_its_suite_is_refused(
    case: str,
    suite: Path,
    outside: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (suite / "linked").symlink_to(outside, target_is_directory=True)
    path = pick_file(suite, **CRAFTED[case](outside))
    field = case.split("-")[0]
    before = tree(tmp_path)
    with pytest.raises(PickError, match=rf"pick\.json: {field} "):
        serve(path).close()
    assert studio_exit(path, monkeypatch) == 2
    (line,) = capsys.readouterr().err.splitlines()  # one line, no traceback
    assert line.startswith(f"netgent studio: {path}: {field} "), line
    assert "record the item again (pytest --netgent-record)" in line, line
    assert tree(tmp_path) == before  # nothing written, in the suite or outside
    assert not (outside / "marker").exists()


def test_a_cache_folder_linked_out_of_the_suite_is_refused(
    suite: Path, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow file is the suite's own, but its picks file would be written
    through a symlink into another folder."""
    (suite / "__netgent__").symlink_to(outside, target_is_directory=True)
    path = pick_file(suite)
    before = tree(tmp_path)
    with pytest.raises(PickError, match=r"workflow_file \(its picks file\) .* lies outside"):
        serve(path).close()
    assert studio_exit(path, monkeypatch) == 2
    assert tree(tmp_path) == before


def test_a_step_file_outside_any_suite_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Downloaded from a bug report, beside no suite: nothing says where to record."""
    (tmp_path / "evilplugin.py").write_text(EVIL_PLUGIN)
    report = tmp_path / "report"
    path = pick_file(report, rootdir=str(tmp_path), command=evil_command("x::y"))
    (report / "login.netgent.yaml").write_text(LOGIN)
    markers = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "conftest.py")
    if any((folder / name).exists() for folder in path.parents for name in markers):
        pytest.skip(f"a folder above {tmp_path} holds a pytest configuration")
    assert studio_exit(path, monkeypatch) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert f"{path}: lies in no pytest suite" in line, line
    assert not (tmp_path / "marker").exists()


def test_an_older_step_file_loads_and_its_command_is_not_what_runs(
    suite: Path, outside: Path
) -> None:
    """Older releases wrote the picks file, a command and the root folder: such a file
    still opens; the studio records the workflow beside that picks file itself."""
    (suite / "evilplugin.py").write_text(EVIL_PLUGIN)
    picks = suite / "__netgent__" / "login" / "login.picks.json"
    path = pick_file(
        suite,
        workflow_file=None,
        item=None,
        picks=str(picks),
        rootdir=str(suite),
        command=evil_command("login.netgent.yaml::login"),
    )
    with serve(path) as studio:
        run = studio.recording
    assert run.suite == suite.resolve() and run.picks == picks.resolve()
    assert run.target == "login.netgent.yaml::login"
    assert run.command()[1:] == ["-m", "pytest", "--netgent-record=missing", run.target]
    absolute = pick_file(suite, workflow_file=str(suite / "login.netgent.yaml"))
    with serve(absolute) as studio:  # an absolute path inside the suite is one of its files
        assert studio.recording.target == "login.netgent.yaml::login"


def as_older_release(project: Project, step_file: Path, cache: Path, command: list[str]) -> None:
    """Give the step file the fields older releases wrote: the picks file, ``command``
    and the suite folder it ran in."""
    doc = json.loads(step_file.read_text())
    doc.update(command=command, rootdir=str(project.path), picks=str(picks_path(cache)))
    step_file.write_text(json.dumps(doc))


def test_a_crafted_command_never_runs_and_the_studio_records_with_its_own(
    project: Project,
) -> None:
    """A step file a run left, given the fields of older releases by someone else: the
    command with their plugin, the suite as its folder. The plugin is never loaded; the
    pick records with the studio's own command."""
    step_file, cache = declined(project)
    (project.path / "evilplugin.py").write_text(EVIL_PLUGIN)
    as_older_release(project, step_file, cache, evil_command("login.netgent.yaml::login"))
    with serve(step_file, timeout=300) as studio:
        answer = post(studio.url + "pick", {"mmid": login_button(studio.step), "action": "click"})
    assert not (project.path / "marker").exists(), "the pick file's command ran"
    assert answer["ok"] is True, answer["message"]
    assert "recorded and replayed" in answer["message"]
    assert cache.exists() and not picks_path(cache).exists()


def test_a_run_that_records_nothing_is_not_said_to_have_recorded(project: Project) -> None:
    """The cache was mended since the step was left: the recording run passes without
    the pick and writes nothing; the studio says so, and keeps no pick."""
    step_file, cache = declined(project)
    heal = ["--netgent-record=missing", "login.netgent.yaml::login"]
    as_older_release(project, step_file, cache, [*heal, f"--netgent-base-url={project.base_url}"])
    file = project.path / "login.netgent.yaml"
    typed = [
        {"type": "type", "params": {**css("#username"), "text": "researcher"}},
        {"type": "type", "params": {**css("#password"), "text": "netgent-pass"}},
        {"type": "click", "params": css("#login-button")},
    ]
    welcome = [{"type": "text", "params": {"text": "Welcome, researcher"}}]
    project.states(
        file,
        "login",
        {"Form": ([url_is("/wiki/login", "contains")], typed), "Welcome": (welcome, [])},
    )
    mended = cache.read_bytes()
    with serve(step_file, timeout=300) as studio:
        answer = post(studio.url + "pick", {"mmid": login_button(studio.step), "action": "click"})
    assert answer["ok"] is False, answer["message"]
    assert "recorded and replayed" not in answer["message"]
    assert "was not recorded with this pick" in answer["message"], answer["message"]
    assert cache.read_bytes() == mended and not picks_path(cache).exists()


ELSEWHERE = "http://203.0.113.5:8000"
"""Another machine (TEST-NET-3: never contacted, the studio refuses before it runs)."""

NOT_THIS_MACHINE = [
    ELSEWHERE,
    "https://staging.example.test/app",
    "http://127.0.0.1.evil.test/",  # a name that starts like a loopback address
    "http://localhost.evil.test:8000/",
    "http://127.0.0.1@203.0.113.5/",  # a user part, then the host
    "http://203.0.113.5\\@127.0.0.1/",  # Chromium reads the backslash as a "/"
    "http://[::ffff:203.0.113.5]/",
]
"""Base URLs a step file may not record against by itself."""


def button_step(suite: Path, base_url: str) -> Path:
    """A step file of the login with ``base_url`` and one element to pick (the login
    button)."""
    selector = Selector(by="css selector", selector="#login-button")
    button = ObservedElement(mmid=7, tag="button", text="Log in", selectors=[selector])
    path = pick_file(suite, base_url=base_url, elements=[button.model_dump()])
    assert read_step(path).elements[0].mmid == 7
    return path


def no_recording_run(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The commands the studio's recording runs would run; none runs (each "fails")."""
    commands: list[list[str]] = []

    def record(run: pick_server.Recording, timeout: float) -> tuple[bool, str]:
        commands.append(run.command())
        return False, "not run by the test"

    monkeypatch.setattr(pick_server, "_record", record)
    return commands


@pytest.mark.parametrize("base_url", NOT_THIS_MACHINE)
def test_a_step_file_pointing_at_another_machine_is_refused(
    base_url: str,
    suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A crafted step file would send the recording browser, and the password the login
    types from the environment, to its own site: refused, nothing served or run."""
    commands = no_recording_run(monkeypatch)
    path = pick_file(suite, base_url=base_url)
    before = tree(tmp_path)
    with pytest.raises(PickError, match=r"pick\.json: base_url .*: not this machine"):
        serve(path).close()
    assert studio_exit(path, monkeypatch) == 2
    out, err = capsys.readouterr()
    (line,) = err.splitlines()  # one line, no traceback
    assert line.startswith(f"netgent studio: {path}: base_url {base_url!r}: not this "), line
    assert "(127.0.0.0/8, localhost or [::1])" in line, line
    assert line.endswith("; pass --base-url URL to record against it"), line
    assert not out  # never served
    assert tree(tmp_path) == before and commands == []


def test_a_base_url_the_user_names_is_recorded_against(
    suite: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--base-url`` confirms another machine, or names another base URL than the step
    file's: a pick records against it (the run is stopped before it starts), and the
    studio says which base URL it uses."""
    commands = no_recording_run(monkeypatch)
    path = button_step(suite, ELSEWHERE)
    with serve(path, base_url=ELSEWHERE) as studio:
        assert studio.recording.base_url == ELSEWHERE
        answer = post(studio.url + "pick", {"mmid": 7, "action": "click"})
    assert answer["ok"] is False and "not run by the test" in answer["message"]
    recording = ["--netgent-record=missing", "login.netgent.yaml::login"]
    assert commands == [
        [sys.executable, "-m", "pytest", *recording, f"--netgent-base-url={ELSEWHERE}"]
    ]
    assert studio_exit(path, monkeypatch, "--base-url", ELSEWHERE) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert f" against {ELSEWHERE} (given with --base-url) " in line, line
    # a step file naming this machine, or any other base URL: the user's is used
    local = button_step(suite, "http://127.0.0.1:9")
    with serve(local, base_url="https://staging.example.test") as studio:
        assert studio.recording.command()[-1] == "--netgent-base-url=https://staging.example.test"
    # the user's base URL is checked too
    assert studio_exit(path, monkeypatch, "--base-url", "javascript:alert(1)") == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == "netgent studio: --base-url 'javascript:alert(1)': not an http(s) URL " + (
        "(http://HOST[:PORT])"
    ), line


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:8000",
        "http://localhost:5000/wiki",
        "http://[::1]:8080",
        "http://127.8.9.10",
    ],
)
def test_a_base_url_on_this_machine_is_recorded_against_as_before(
    base_url: str,
    suite: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """What a run on this machine leaves opens with no option; the studio says which base
    URL a pick records against."""
    commands = no_recording_run(monkeypatch)
    path = button_step(suite, base_url)
    with serve(path) as studio:
        post(studio.url + "pick", {"mmid": 7, "action": "click"})
    assert [command[-1] for command in commands] == [f"--netgent-base-url={base_url}"]
    assert studio_exit(path, monkeypatch) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert f" against {base_url} (the pick file's, this machine) " in line, line
