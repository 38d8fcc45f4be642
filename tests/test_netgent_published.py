"""NetGent's published files (a committed sample, tests/netgent_published/): every shape
loads as NetGent loads it, ``netgent convert`` makes each an item or refuses it saying
why and what to do, and each start state fires on the fresh browser it was made for."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent import NetgentBrowser
from pytest_netgent.browser.page import evaluate
from pytest_netgent.browser.session import START_PAGES
from pytest_netgent.cli import main
from pytest_netgent.workflow.automaton import State, parse_automaton
from pytest_netgent.workflow.netgent_formats import repository_variables

SAMPLE = Path(__file__).parent / "netgent_published"
FILES = sorted(SAMPLE.rglob("*.json"))
REFUSED = {
    "basic-example-workflow.json": "no state has an end_state: give the state that finishes "
    'the workflow a non-empty "end_state" in the repository',
}  # fmt: skip


def _id(path: Path) -> str:
    return path.name.removesuffix(".json")


def load(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def test_the_sample_holds_every_shape() -> None:
    shapes = {
        "list" if isinstance(d, list) else "dump" if "state_repository" in d else "workflow"
        for d in map(load, FILES)
    }
    assert shapes == {"list", "dump", "workflow"} and len(FILES) == 13


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_each_published_file_loads_and_converts(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = load(path)
    automaton = parse_automaton(data)
    assert automaton.states
    listed = data if isinstance(data, list) else data.get("state_repository", [])
    for given, state in zip(listed, automaton.states, strict=False):
        if isinstance(given, dict) and all(isinstance(a, dict) for a in given["actions"]):
            assert set(given) <= set(state.to_netgent()), path  # save_content... kept
    source = tmp_path / path.name
    shutil.copy(path, source)
    code = main(["convert", str(source), "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    if path.name in REFUSED:
        assert code == 2 and REFUSED[path.name] in err, err
        assert f"{source}" in err  # names the file to fix
        return
    assert code == 0, err
    (workflow,) = (tmp_path / "out").glob("*.netgent.yaml")
    (cache,) = (tmp_path / "out" / "__netgent__").rglob("*.json")
    assert [s.name for s in parse_automaton(load(cache)).states][:1] == [
        automaton.states[0].name
    ] or len({s.name for s in automaton.states}) < len(automaton.states)  # names made unique
    text = workflow.read_text("utf-8")
    for name, value in repository_variables(load(path)).items():
        if f"%{name}%" in path.read_text("utf-8") or "{{" in path.read_text("utf-8"):
            assert f"{name}:" in text, (name, text)  # the file's variables become vars
            if value:
                assert value in text


def _start(states: list[State]) -> int | None:
    """The state a fresh browser starts in: one whose checks all name a start page, that
    has none, or that always holds."""
    for index, state in enumerate(states):
        kinds = {c.type for c in state.checks}
        if not state.checks or kinds == {"always_true"}:
            return index
        if kinds == {"url"} and all(c.params["url"] in START_PAGES for c in state.checks):
            return index
    return None


STARTED = [p for p in FILES if _start(parse_automaton(load(p)).states) is not None]


def test_every_file_but_the_basic_example_has_a_start_state() -> None:
    """Start states come first, or (NetGent's first format) anywhere in the list; the
    basic example begins on google.com's page, a state NetGent reaches by its first
    navigation, and is the one file refused above."""
    assert [p.name for p in FILES if p not in STARTED] == ["basic-example-workflow.json"]


@pytest.mark.parametrize("path", STARTED, ids=_id)
def test_the_start_state_fires_on_a_fresh_browser(
    netgent_browser: NetgentBrowser, path: Path
) -> None:
    states = parse_automaton(load(path)).states
    payload = [{"checks": [c.model_dump() for c in s.checks], "hold": 0} for s in states]
    driver = netgent_browser.driver
    for blank in ("about:blank", "data:,"):
        driver.get(blank)
        tick = evaluate(driver, payload, None, 0, fresh=True)
        assert not tick.error, tick.error
        assert tick.matched and tick.matched[0] == _start(states), (blank, tick.matched)


def test_netgents_hulu_workflow_runs_on_a_look_alike_of_the_site(
    base_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NetGent's published Hulu workflow, its two addresses pointed at StreamHub (which
    signs in as Hulu does: email, then password, then "Who's watching?") and its waits
    shortened, everything else as published: environment values typed, the first of
    several selectors clicked, the player started, Stats for Nerds logged."""
    from fixtures import hub
    from pytest_netgent import NetGent

    path = SAMPLE.joinpath(
        "jaber-the-great__netgent-dev/examples/web_browsing/hulu-watch/results/"
        "hulu-watch_result.json"
    )
    text = path.read_text("utf-8")
    text = text.replace("https://auth.hulu.com/web/login", f"{base_url}/hub/login")
    text = text.replace(
        "https://www.hulu.com/watch/60da223c-d2a0-411a-95c9-665a839371f9",
        f"{base_url}/hub/watch?profile=Sam",
    )
    repository = json.loads(text)
    for state in repository:
        for action in state["actions"]:
            if action["type"] == "wait":
                action["params"]["seconds"] = min(action["params"]["seconds"], 3)
    monkeypatch.setenv("HULU_EMAIL", hub.EMAIL)
    monkeypatch.setenv("HULU_PASSWORD", hub.PASSWORD)
    monkeypatch.setenv("HULU_PROFILE_NAME", "Sam")
    with NetGent(llm=None, llm_enabled=False) as agent:
        results = agent.run(state_repository=repository, output_dir=tmp_path)
    assert results.reached_end, results.error and results.error.report()
    assert results.end_state == "Action Completed"
    visited = [e.state for e in results.timeline if e.event == "state"]
    assert visited == [
        "On Browser Home Page", "Hulu Email Login", "Hulu Password Login", "Watching Hulu Video"
    ]  # fmt: skip
    lines = (tmp_path / "hulu_watch_stats.jsonl").read_text("utf-8").splitlines()
    samples = [json.loads(line) for line in lines]
    assert samples and samples[-1]["current_time"] > samples[0]["current_time"]
    shown = json.dumps([vars(e) for e in results.timeline]) + json.dumps(samples)
    assert hub.PASSWORD not in shown and hub.EMAIL not in shown


def test_netgents_two_person_meet_workflow_runs_on_a_look_alike(
    netgent_browser: NetgentBrowser, base_url: str, tmp_path: Path
) -> None:
    """NetGent's published two-person Google Meet workflow (one state: start WebRTC
    tracking, host a meeting, open it again as a second account in a named tab, ask to
    join, admit from the host's People panel, wait in each tab, write the metrics), its
    address pointed at Gather (fixtures/gather.py) and its last wait shortened."""
    from pytest_netgent import Workflow

    path = SAMPLE.joinpath(
        "jaber-the-great__netgent-dev/v1/examples/video_conference/google-meet-two-person/"
        "results/google-meet-two-person_result.json"
    )
    text = path.read_text("utf-8").replace("https://meet.google.com/", f"{base_url}/gather/")
    text = text.replace('"seconds": 30', '"seconds": 4')
    states = parse_automaton(json.loads(text)).states
    (state,) = states
    spec = Workflow.model_validate(
        {"name": "meet", "states": [{"name": state.name, "end": state.end_state}]}
    )
    result = netgent_browser.run(spec, states=states, artifacts=tmp_path)
    assert result.passed, result.error
    metrics = json.loads((tmp_path / "google_meet_two_person_metrics.json").read_text("utf-8"))
    assert metrics["page_count"] == 2  # the host's tab and the second account's
    for page in metrics["pages"]:
        assert "/gather/" in page["url"]
        totals = page["webrtc"]
        assert totals["connection_states"] == ["connected"]
        assert totals["bytes_received"] > 10_000 and totals["frames_decoded"] > 0
    # the host's tab was tracked from the start, the second account's from its opening
    tabs = {s["page"].split("?")[-1] for s in result.webrtc if s["direction"] == "inbound"}
    assert tabs == {"authuser=0", "authuser=1"}, tabs
