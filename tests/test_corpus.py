"""The corpus of real applications (corpus/) replays as written, on two workers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = sorted(p for p in (ROOT / "corpus").iterdir() if (p / "conftest.py").is_file())
APPS = [p.name for p in FOLDERS if (p / "__netgent__").is_dir()]
"""The applications whose states the team wrote (and replays as written)."""
BLIND = [p.name for p in FOLDERS if not (p / "__netgent__").is_dir()]
"""The applications whose workflows were written blind, by someone who read only the
README's workflow format and used the application: measured by recording from nothing."""


def test_the_corpus_replays_every_item(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *(f"corpus/{app}" for app in APPS), "-n", "2", "-q",
         "-p", "no:randomly",
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


def test_the_builtin_records_from_nothing_only_what_it_grounds(tmp_path: Path) -> None:
    """No model, no cached state: on the real applications the builtin records each
    workflow whose every trigger its checks stand for, and declines the others, naming
    the words no check stands for. A pass is never wrong: every declared state visited, as
    in the hand-written replay, the workflow's goal met on its final page (the corpus's
    goals.yaml), and the states it wrote replay without it; a decline writes nothing."""
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
    assert "by the LLM; LLM calls: 0" in done.stdout, done.stdout[-6000:] + done.stderr[-2000:]
    cases = list(ET.parse(report).getroot().iter("testcase"))
    assert len(cases) >= 2 * len(APPS)
    passed, declined = [], []
    for case in cases:
        app, name = case.get("classname", "").split(".")[0], case.get("name", "")
        if name == "two-admins":
            continue  # a scenario: its members' workflows are items of their own
        props = {p.get("name"): p.get("value") or "" for p in case.iter("property")}
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")  # a workflow refused at setup (its YAML, say)
        if failure is None:
            passed.append((app, name))
            declared = _declared_states(work / app, name.split("[")[0])
            assert set(props.get("netgent_states", "").split(" > ")) == declared, (app, name)
            if "netgent_goal" in props:
                assert json.loads(props["netgent_goal"])["met"], (app, name, props)
            continue
        text = failure.get("message", "") + (failure.text or "")
        declined.append((app, name))
        assert "synthesis failure" in text, (app, name, text[-2000:])
        assert any(why in text for why in ("not grounded", "not verified", "could not decide")), (
            app,
            name,
            text[-2000:],
        )
        assert "goal missed" not in text, (app, name)  # a pass whose goal was missed
        workflow = name.split("[")[0]
        cache = work / app / "__netgent__" / Path(_file_of(work / app, workflow)).name.split(".")[0]
        assert not (cache / f"{workflow}.json").exists(), (app, name, "a decline wrote")
    assert passed, "the builtin records none of the corpus"
    print(f"builtin from nothing: {len(passed)} recorded, {len(declined)} declined: {declined}")
    # Jupyter's first cell run now and then never answers while CI loads both cores (the
    # kernel shows idle, the code is in the cell, Shift+Enter was pressed): a replay that
    # drifts is run once more, as a CI job guarding a live site would (pytest-rerunfailures)
    ids = [f"{app}/{_file_of(work / app, name.split('[')[0])}::{name}" for app, name in passed]
    replay = [sys.executable, "-m", "pytest", *ids, "-n", "2", "-q", "-p", "no:randomly",
              f"--netgent-artifacts={tmp_path / 'artifacts'}", "--reruns", "1",
              "--only-rerun", "UI drift"]  # fmt: skip
    done = subprocess.run(replay, cwd=work, capture_output=True, text=True, timeout=900,
                          check=False, env=env)  # fmt: skip
    assert done.returncode == 0, done.stdout[-6000:]
    assert f"{len(passed)} passed" in done.stdout


def _file_of(folder: Path, workflow: str) -> str:
    import yaml

    for path in folder.glob("*.netgent.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc.get("name") == workflow:
                return path.name
    raise AssertionError(f"no workflow {workflow!r} in {folder}")


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


PANEL_PICK = """
name: city-pick
start_url: "{base_url}/app"
vars: {part: Ber}
states:
  - name: Dashboard
    triggers: ["The page says 'Type a city and press Search.'"]
    actions:
      - Type {part} into the City field
      - Press the blue button
  - name: Results
    triggers: ["The page says '2 results for {part}'"]
    end: Cities found
"""


def test_a_pick_inside_web_components_records_and_replays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Panel dashboard's button sits in shadow roots: record declines "the blue
    button", the studio's pick of it is stored with its chain, and the item replays."""
    import urllib.request

    from pytest_netgent.studio.pick_server import serve
    from pytest_netgent.synthesis.picks import picks_path, read_step

    root = Path(__file__).resolve().parent.parent
    monkeypatch.setenv("PYTHONPATH", str(root))  # the studio's recording run imports corpus
    (tmp_path / "conftest.py").write_text(
        "import pytest\nfrom corpus import serve\n\n\n"
        "@pytest.fixture(scope='session')\ndef base_url():\n"
        "    with serve('panel') as url:\n        yield url\n"
    )
    (tmp_path / "city.netgent.yaml").write_text(PANEL_PICK.lstrip())
    pytest_args = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p",
                   "no:cacheprovider"]  # fmt: skip

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*pytest_args, *args], cwd=tmp_path, capture_output=True, text=True, timeout=600,
            check=False,
        )  # fmt: skip

    declined = run("--netgent-record")
    assert declined.returncode == 1 and "netgent studio" in declined.stdout, declined.stdout
    (step_file,) = tmp_path.rglob("pick.json")
    step = read_step(step_file)
    assert step.instruction == "Press the blue button"
    (button,) = [e for e in step.elements if e.tag == "button" and e.name == "Search"]
    assert button.within  # in the components' shadow roots
    with serve(step_file) as studio:
        pick = json.dumps({"mmid": button.mmid}).encode()  # the action: the step's guess
        request = urllib.request.Request(
            studio.url + "pick", pick, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=600) as response:
            answer = json.loads(response.read())
    assert answer["ok"], answer["message"]
    cache = tmp_path / "__netgent__" / "city" / "city-pick.json"
    click = json.loads(cache.read_text())["states"][0]["actions"][-1]
    assert click["type"] == "click" and " >> " in click["params"]["selector"]
    assert not picks_path(cache).exists()
    replay = run()
    assert replay.returncode == 0, replay.stdout[-3000:]


def test_workflows_written_blind_are_recorded_green_or_declined_never_wrong(
    tmp_path: Path,
) -> None:
    """The applications nobody on the team wrote states for, with workflows written by
    someone who read only the README's workflow format and used the application: the
    builtin records each from nothing, and a pass is never wrong (every declared state
    visited, the folder's independent goal met on the final page, and a replay of what it
    wrote passes too). Whatever fails, fails as itself: never with its goal missed."""
    assert BLIND, "no corpus folder holds workflows written blind"
    work = tmp_path / "blind"
    work.mkdir()
    (work / "pytest.ini").write_text(
        # the state timeout a user has (its default): an application's first page may
        # take seconds to draw
        "[pytest]\naddopts = -p no:seleniumbase -p no:langsmith_plugin -p no:benchmark\n"
    )
    for app in BLIND:
        shutil.copytree(ROOT / "corpus" / app, work / app,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    report = tmp_path / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *BLIND, "-n", "2", "-q", "-p", "no:randomly",
         "--netgent-record", f"--junitxml={report}", "-o", "junit_family=xunit1",
         f"--netgent-artifacts={tmp_path / 'artifacts'}"],
        cwd=work, capture_output=True, text=True, timeout=1200, check=False, env=env,
    )  # fmt: skip
    cases = list(ET.parse(report).getroot().iter("testcase"))
    assert len(cases) >= 2 * len(BLIND), done.stdout[-4000:]
    green, failed = [], []
    for case in cases:
        app, name = case.get("classname", "").split(".")[0], case.get("name", "")
        props = {p.get("name"): p.get("value") or "" for p in case.iter("property")}
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")  # a workflow refused at setup (its YAML, say)
        if failure is None:
            green.append(f"{app}/{_file_of(work / app, name.split('[')[0])}::{name}")
            declared = _declared_states(work / app, name.split("[")[0])
            assert set(props.get("netgent_states", "").split(" > ")) == declared, (app, name)
            assert json.loads(props["netgent_goal"])["met"], (app, name, props)
            continue
        text = failure.get("message", "") + (failure.text or "")
        assert "goal missed" not in text, (app, name, text[-2000:])  # a wrong green
        failed.append((app, name, text.splitlines()[0][:160] if text else ""))
    print(f"blind workflows, builtin from nothing: {len(green)} green, {len(failed)} not")
    for row in failed:
        print("  ", *row)
    if green:  # what was written replays, without synthesis
        replay = subprocess.run(
            [sys.executable, "-m", "pytest", *green, "-n", "2", "-q", "-p", "no:randomly",
             f"--netgent-artifacts={tmp_path / 'replay'}"],
            cwd=work, capture_output=True, text=True, timeout=900, check=False, env=env,
        )  # fmt: skip
        assert replay.returncode == 0, replay.stdout[-6000:]
