"""The corpus of real applications (corpus/) replays as written, on two workers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = sorted(p.name for p in (ROOT / "corpus").iterdir() if (p / "conftest.py").is_file())


def test_the_corpus_replays_every_item(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "corpus", "-n", "2", "-q", "-p", "no:randomly",
         f"--junitxml={report}", "-o", "junit_family=xunit1",
         f"--netgent-artifacts={tmp_path / 'artifacts'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    cases = list(ET.parse(report).getroot().iter("testcase"))
    apps = {case.get("classname", "").split(".")[1] for case in cases}
    assert apps == set(APPS) and len(APPS) >= 6
    assert len(cases) >= 2 * len(APPS)  # two workflows or more each
    for case in cases:
        states = {p.get("name"): p.get("value") for p in case.iter("property")}
        # every hand-written state of the item was visited (none skipped by a loose check)
        assert states.get("netgent_states", "").count(" > ") >= 1, case.get("name")
    # a real application under several members at once: two admins in browsers of their
    # own (sessions, CSRF tokens) and a script, as one scenario item
    (scenario,) = [c for c in cases if c.get("name") == "two-admins"]
    members = dict(
        part.split(": ", 1)
        for p in scenario.iter("property")
        if p.get("name") == "netgent_states"
        for part in (p.get("value") or "").split("; ")
    )
    assert members == {
        "adder": "Login form > Site administration > Group list > Add group form > Group added",
        "searcher": "Login form > User list > Search results > User page",
    }


def test_the_builtin_records_every_corpus_workflow_from_nothing(tmp_path: Path) -> None:
    # No model, no cached state: the builtin synthesiser reads each workflow's words on
    # the real applications (a video.js player's state, a Jupyter cell editor and a file
    # list, Django's messages and counts, a table row's link), every state is visited as
    # in the hand-written replay, and the states it wrote replay without it.
    work = tmp_path / "corpus"
    work.mkdir()
    (work / "pytest.ini").write_text(
        "[pytest]\naddopts = -p no:seleniumbase -p no:langsmith_plugin -p no:benchmark\n"
        "netgent_state_timeout = 5\n"
    )
    for app in APPS:
        shutil.copytree(ROOT / "corpus" / app, work / app,
                        ignore=shutil.ignore_patterns("__netgent__", "__pycache__"))  # fmt: skip
    report = tmp_path / "junit.xml"
    # the scenario's members record in place, whichever worker runs their own items
    run = [sys.executable, "-m", "pytest", *APPS, "-n", "2", "-q", "-p", "no:randomly",
           f"--junitxml={report}", "-o", "junit_family=xunit1",
           f"--netgent-artifacts={tmp_path / 'artifacts'}"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*run, "--netgent-record"],
        cwd=work, capture_output=True, text=True, timeout=900, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "by the LLM; LLM calls: 0" in done.stdout
    cases = list(ET.parse(report).getroot().iter("testcase"))
    assert len(cases) >= 2 * len(APPS)
    for case in cases:
        app, name = case.get("classname", "").split(".")[0], case.get("name", "")
        if name == "two-admins":
            continue  # a scenario: its members' workflows are items of their own
        visited = {
            p.get("value") for p in case.iter("property") if p.get("name") == "netgent_states"
        }
        declared = _declared_states(work / app, name.split("[")[0])
        assert visited and set(next(iter(visited)).split(" > ")) == declared, (app, name)
    # Jupyter's first cell run now and then never answers while CI loads both cores (the
    # kernel shows idle, the code is in the cell, Shift+Enter was pressed): a replay that
    # drifts is run once more, as a CI job guarding a live site would (pytest-rerunfailures)
    replay = [*run, "--reruns", "1", "--only-rerun", "UI drift"]
    done = subprocess.run(replay, cwd=work, capture_output=True, text=True, timeout=900,
                          check=False, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:]
    assert f"{len(cases)} passed" in done.stdout


def _declared_states(folder: Path, workflow: str) -> set[str]:
    import yaml

    for path in folder.glob("*.netgent.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc.get("name") == workflow:
                return {s["name"] for s in doc["states"]}
    raise AssertionError(f"no workflow {workflow!r} in {folder}")


def test_a_narrow_window_changes_what_the_docs_site_shows(tmp_path: Path) -> None:
    # MkDocs Material folds its tabs and search box into icons below ~1220 px: the states
    # recorded at 1280x900 (the size their file says) fail at 780x580 and say where
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "corpus/docs", "-q", "-p", "no:randomly",
         "--netgent-window-size=780x580", f"--netgent-artifacts={tmp_path / 'artifacts'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 failed" in done.stdout
    assert "click css selector='input.md-search__input') failed" in done.stdout
    assert "element not interactable" in done.stdout


def test_a_web_worker_script_has_its_status_in_the_har(tmp_path: Path) -> None:
    # MkDocs Material runs its search index in a web worker: the worker's script was
    # served (200, or 304 when revalidated), and the HAR says so (the page's log has no
    # response for it)
    artifacts = tmp_path / "artifacts"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "corpus/docs/docs.netgent.yaml::search-docs", "-q",
         "-p", "no:randomly", "--netgent-capture=har", f"--netgent-artifacts={artifacts}"],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    (har,) = artifacts.rglob("*.har")
    entries = json.loads(har.read_text())["log"]["entries"]
    workers = [e for e in entries if "/workers/search." in e["request"]["url"]]
    assert workers, [e["request"]["url"] for e in entries]
    for entry in workers:
        assert entry["response"]["status"] in (200, 304), entry["response"]
        if entry["response"]["status"] == 200:  # a 304 carries no content type
            assert "javascript" in entry["response"]["content"]["mimeType"]
    assert all(e["response"]["status"] for e in entries if "_error" not in e["response"])


def test_a_real_app_in_a_cross_site_frame_is_on_the_video(tmp_path: Path) -> None:
    """The corpus's Panel dashboard, embedded from another host name in a MkDocs site
    (an out-of-process frame): what the search shows inside the frame is on the video."""
    import av

    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "corpus/embed", "-k", "embedded-search", "-q",
         "-p", "no:randomly", "-p", "no:cacheprovider", "--netgent-video=on",
         f"--netgent-artifacts={tmp_path}"],
        cwd=root, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    (video,) = tmp_path.glob("*/video.webm")
    with av.open(str(video)) as container:
        frames = [f.to_ndarray(format="gray") for f in container.decode(video=0)]
    height, width = frames[0].shape
    # inside the frame (its borders left out): the dashboard's form and its results are
    # drawn there by another site's process; a video without them shows it blank
    inside = (slice(height * 35 // 100, height), slice(width * 25 // 100, width * 74 // 100))
    ink = [float((frame[inside] < 160).mean()) for frame in frames]
    assert len(frames) >= 2 and ink[-1] > 0.005, ink
