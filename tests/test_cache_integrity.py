"""The cached states on disk stay whole and where they belong: concurrent record workers and
a hand edit each keep what they wrote, a trusted file is left as it is, two files that
would share a cache both fail, a long name still makes a file name, and a cache folder
that is a link, read-only or locked through another user's folder is refused naming the
file; a cached value of the wrong kind names file, state and action."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent.workflow import store
from pytest_netgent.workflow.automaton import Automaton

from .helpers import HUNG, Project, element, good, state

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


def test_a_hand_edit_made_during_a_record_run_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "__netgent__" / "flow" / "flow.json"
    start = Automaton(
        workflow="flow", states=[state("A", [element("#a")]), state("B", [element("#b")])]
    )
    store.write(path, start)
    # the user edits A by hand while a record run, which read the file before, heals B
    edited = Automaton(
        workflow="flow", states=[state("A", [element("#edited")]), state("B", [element("#b")])]
    )
    store.write(path, edited)
    healed = Automaton(
        workflow="flow", states=[state("A", [element("#a")]), state("B", [element("#healed")])]
    )
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
