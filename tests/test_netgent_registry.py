"""NetGent's workflow registry (tests/netgent_registry/, fetched once; the only address
changed is test_youtube_workflow's, to the local video site) and workflows written in its
format (tests/netgent_written/): every workflow converts and collects, the browser ones
with a local counterpart replay green against it, and the measurement steps run the real
tools against servers the test starts, their results in the dataset."""

from __future__ import annotations

import csv
import json
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_netgent.cli import main
from pytest_netgent.workflow.automaton import parse_automaton
from pytest_netgent.workflow.netgent_formats import playwright_check, playwright_selector

from .helpers import Project

HERE = Path(__file__).parent
REGISTRY = HERE / "netgent_registry"
WRITTEN = HERE / "netgent_written"
IDS = sorted(p.parent.name for p in (REGISTRY / "workflows").glob("*/manifest.json"))

pytestmark = pytest.mark.xdist_group("registry")  # one worker: the iperf3 server's port


def convert(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["convert", *args])
    return code, capsys.readouterr().err


def document(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_registry_holds_its_fifteen_workflows() -> None:
    index = json.loads((REGISTRY / "workflows" / "index.json").read_text("utf-8"))
    assert len(IDS) == 15 and sorted(e["id"] for e in index) == IDS


def test_every_registry_workflow_converts_with_its_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = convert(capsys, str(REGISTRY / "workflows"), "-o", str(tmp_path))
    assert code == 0, err
    written = sorted(p.name.removesuffix(".netgent.yaml") for p in tmp_path.glob("*.netgent.yaml"))
    assert written == IDS
    for id_ in IDS:
        doc = document(tmp_path / f"{id_}.netgent.yaml")
        manifest = json.loads((REGISTRY / "workflows" / id_ / "manifest.json").read_text())
        assert doc["metadata"]["netgent_id"] == id_
        assert doc["metadata"]["netgent_name"] == manifest["name"]
        assert doc["metadata"]["netgent_version"] == manifest["version"]
        assert doc["description"] == manifest["description"]
        source = json.loads((REGISTRY / "workflows" / id_ / "workflow.json").read_text())
        spec = source["specification"]
        for name in source["parameters"]:
            if f"<secret>{name}</secret>" in spec:
                assert doc["secrets"][name] == f"NETGENT_{name.upper()}", id_
            else:
                assert name in doc["vars"], id_
        cache = tmp_path / "__netgent__" / id_ / f"{id_}.json"
        assert json.loads(cache.read_text()) == source  # the file as it is, trusted
        assert parse_automaton(source).states[-1].end_state  # one pass, then done
    shell = document(tmp_path / "test_iperf_workflow.netgent.yaml")
    assert shell["category"] == "network_measurement"
    assert "# url: YouTube video URL to load." in (
        tmp_path / "run_youtube_non_navigate_workflow.netgent.yaml"
    ).read_text("utf-8")


def test_one_workflow_folder_or_file_converts_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = REGISTRY / "workflows" / "test_shell_workflow"
    code, err = convert(capsys, str(folder), "-o", str(tmp_path / "a"), "--var", "host=127.0.0.1")
    assert code == 0, err
    assert document(tmp_path / "a" / "test_shell_workflow.netgent.yaml")["vars"] == {
        "host": "127.0.0.1",
        "count": None,  # to be given: NetGent runs no workflow with a parameter missing
    }
    code, err = convert(capsys, str(folder / "workflow.json"), "-o", str(tmp_path / "b"))
    assert code == 0, err
    assert (tmp_path / "b" / "test_shell_workflow.netgent.yaml").is_file()


def test_the_converted_registry_collects_one_item_per_workflow(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = convert(capsys, str(REGISTRY / "workflows"), "-o", str(project.path / "reg"))
    assert code == 0, err
    result = project.run("reg", "--collect-only", "-q")
    names = sorted(line.split("::")[-1] for line in result.outlines if ".netgent.yaml::" in line)
    assert names == IDS, result.outlines


def test_a_parameter_left_without_a_value_fails_its_item_naming_it(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    converted(project, capsys, REGISTRY / "workflows" / "test_shell_workflow", "host=127.0.0.1")
    result = project.run()
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "test_shell_workflow.netgent.yaml:" in text and "var 'count' has no value" in text
    assert "--var count=VALUE" in text


def test_a_file_not_understood_is_refused_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "workflows"
    shutil.copytree(REGISTRY / "workflows", copy)
    broken = copy / "run_twitch_workflow" / "workflow.json"
    data = json.loads(broken.read_text())
    data["states"][0]["actions"][1]["type"] = "tap_element"
    broken.write_text(json.dumps(data))
    out = tmp_path / "out"
    code, err = convert(capsys, str(copy), "-o", str(out))
    assert code == 2
    assert str(broken) in err and "action 2 (tap_element)" in err
    assert "unknown action type 'tap_element'" in err
    assert not list(out.glob("*.netgent.yaml")) and not (out / "__netgent__").exists()


def test_a_manifest_of_an_unknown_type_names_the_field_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "odd"
    shutil.copytree(REGISTRY / "workflows" / "test_shell_workflow", folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "type": "desktop"}))
    code, err = convert(capsys, str(folder), "-o", str(tmp_path / "out"))
    assert code == 2 and 'manifest.json: type: "desktop"' in err and "browser or shell" in err


def test_a_value_for_a_secret_parameter_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = REGISTRY / "workflows" / "test_youtube_workflow"
    code, err = convert(capsys, str(folder), "-o", str(tmp_path), "--var", "video_id=x")
    assert code == 2 and "export NETGENT_VIDEO_ID=" in err


# ----------------------------------------------------------------- Playwright's vocabulary


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ("button.join", ("css selector", "button.join")),
        ("//h1[@id='x']", ("xpath", "//h1[@id='x']")),
        ("xpath=//a", ("xpath", "//a")),
        ("..//a", ("xpath", "..//a")),
        (
            "iframe#call >>> input[type=password]",
            ("css selector", "iframe#call >> input[type=password]"),
        ),
    ],
)
def test_playwright_selectors_read_as_locators(given: str, read: tuple[str, str]) -> None:
    assert playwright_selector(given) == read


@pytest.mark.parametrize("given", ["text=Join", "button:has-text('Join')", "div >> text=Join"])
def test_selectors_only_playwright_reads_are_refused_with_the_fix(given: str) -> None:
    with pytest.raises(ValueError, match="write it as CSS or XPath"):
        playwright_selector(given)


def test_check_element_states_keep_their_meaning() -> None:
    def read(state: str, **more: Any) -> dict[str, Any]:
        check = {"type": "check_element", "params": {"selector": "#x", "state": state, **more}}
        return dict(playwright_check(check)["params"])

    # the first match, as Playwright's locator.first waits on it; a transparent one is shown
    shown = {"by": "css selector", "selector": "#x", "first": True, "transparent": True}
    assert read("visible") == shown
    assert read("hidden") == {**shown, "negate": True}
    present = {"by": "css selector", "selector": "#x", "first": True, "visible": False}
    assert read("attached") == present
    assert read("detached") == {**present, "negate": True}
    assert read("visible", timeout=3)["timeout"] == 3  # the page is given that long


def test_check_text_reads_what_a_reader_reads_and_never_an_empty_text() -> None:
    exact = playwright_check({"type": "check_text", "params": {"text": "Join  now"}})
    assert exact["type"] == "element" and exact["params"]["by"] == "xpath"
    assert "normalize-space(.)='Join now'" in exact["params"]["selector"]
    assert "ancestor-or-self::script" in exact["params"]["selector"]  # nor head, style...
    loose = {"text": "join", "exact": False, "check_visibility": False}
    assert playwright_check({"type": "check_text", "params": loose}) == {
        "type": "text",
        "params": {"text": "join", "ignore_case": True, "check_visibility": False},
    }
    with pytest.raises(ValueError, match="text is empty"):
        playwright_check({"type": "check_text", "params": {"text": " "}})


@pytest.mark.parametrize(
    "given", ['"Join now"', "button:left-of(#x)", "xpath=//iframe >>> button", "..//a >>> b"]
)
def test_more_selectors_only_playwright_reads_are_refused(given: str) -> None:
    with pytest.raises(ValueError, match="selector"):
        playwright_selector(given)


# ----------------------------------------------------------------- runs against local servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def converted(
    project: Project, capsys: pytest.CaptureFixture[str], folder: Path, *given: str
) -> None:
    args = [a for g in given for a in ("--var", g)]
    code, err = convert(capsys, str(folder), "-o", str(project.path), *args)
    assert code == 0, err


def manifest_rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "manifest.csv").open(encoding="utf-8") as rows:
        return list(csv.DictReader(rows))


def measurements(folder: Path, row: dict[str, str]) -> list[dict[str, Any]]:
    lines = (folder / row["folder"] / "measurements.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_the_ping_workflow_pings_and_its_results_are_in_the_dataset(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    converted(project, capsys, REGISTRY / "workflows" / "test_shell_workflow",
              "host=127.0.0.1", "count=3")  # fmt: skip
    result = project.run("--netgent-capture=pcap", "--netgent-artifacts=dataset")
    result.assert_outcomes(passed=1)
    (row,) = manifest_rows(project.path / "dataset")
    assert row["outcome"] == "passed" and row["category"] == "network_measurement"
    assert json.loads(row["metadata"])["netgent_id"] == "test_shell_workflow"
    assert row["measured"].startswith("ping 127.0.0.1: 3/3")
    (ping,) = measurements(project.path / "dataset", row)
    assert ping["step"] == "ping" and ping["received"] == 3 and ping["rtt_avg_ms"] is not None
    card = (project.path / "dataset" / "DATASET.md").read_text("utf-8")
    assert "NetGent registry: Shell Ping Test 1.0.0" in card


def test_the_iperf_workflow_measures_a_local_iperf3_server(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    server = subprocess.Popen(
        ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.3)  # the server binds its port
        converted(project, capsys, REGISTRY / "workflows" / "test_iperf_workflow",
                  "host=127.0.0.1", f"port={port}", "duration=1")  # fmt: skip
        result = project.run("--netgent-capture=pcap", "--netgent-artifacts=dataset")
        result.assert_outcomes(passed=1)
    finally:
        server.kill()
        server.wait()
    (row,) = manifest_rows(project.path / "dataset")
    (iperf,) = measurements(project.path / "dataset", row)
    assert iperf["step"] == "iperf" and iperf["intervals"] and iperf["received_bytes"] > 0
    assert row["measured"].startswith(f"iperf 127.0.0.1:{port}")


def test_udp_to_the_hosts_loopback_from_a_captured_worker_is_refused_naming_why(
    project: Project,
) -> None:
    """A worker with packet capture has a network namespace of its own: a TCP server on
    the host's loopback is bridged to it, a UDP test cannot be, and the step says so
    before iperf3 runs (it would wait for an answer that never comes)."""
    file = project.workflow("udp", "name: udp\nstates:\n  - {name: Measure, end: done}\n")
    iperf = {"type": "iperf", "params": {"host": "127.0.0.1", "port": "5999", "udp": "true"}}
    project.states(file, "udp", {"Measure": ([], [iperf])})
    result = project.run("--netgent-capture=pcap", "--netgent-artifacts=dataset")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*iperf step: UDP to 127.0.0.1 cannot reach a server on this machine's loopback*"]
    )
    assert "measure over TCP" in result.stdout.str()


def test_the_ndt_workflow_without_a_client_fails_naming_what_to_install(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    if shutil.which("ndt7-client") or shutil.which("ndt-client"):
        pytest.fail("an NDT7 client is on PATH: this test is of the machine without one")
    converted(project, capsys, REGISTRY / "workflows" / "test_ndt_workflow",
              "download=true", "upload=false")  # fmt: skip
    result = project.run()
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "ndt7-client" in text and "go install" in text
    assert "network measurement failed" in text


def test_the_wget_workflow_downloads_from_the_local_site(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    converted(project, capsys, WRITTEN / "workflows" / "wget_workflow",
              f"url={project.base_url}/vod/")  # fmt: skip
    result = project.run("--netgent-capture=pcap", "--netgent-artifacts=dataset")
    result.assert_outcomes(passed=1)
    (row,) = manifest_rows(project.path / "dataset")
    (wget,) = measurements(project.path / "dataset", row)
    assert wget["step"] == "wget" and wget["bytes"] > 1000 and wget["output_file"] is None
    folder = project.path / "dataset" / row["folder"]
    assert not [p for p in folder.iterdir() if p.suffix not in (".json", ".jsonl", ".pcap")]
    # the download's traffic is in the item's capture, labelled with it like a browser's
    assert int(row["pcap_bytes"]) > wget["bytes"] and row["category"] == "network_measurement"


def test_browser_workflows_with_a_local_counterpart_replay_green(
    project: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    workflows = REGISTRY / "workflows"
    converted(project, capsys, workflows / "test_browser_workflow", f"url={project.base_url}/vod/")
    converted(project, capsys, workflows / "test_youtube_workflow")
    converted(project, capsys, workflows / "run_youtube_non_navigate_workflow")
    monkeypatch.setenv("NETGENT_VIDEO_ID", "ocean-deep")
    monkeypatch.setenv("NETGENT_URL", f"{project.base_url}/vod/watch/city-lights")
    monkeypatch.setenv("NETGENT_WATCH_SECONDS", "1")
    result = project.run("-v", "--junitxml=j.xml")
    result.assert_outcomes(passed=3)
    junit = (project.path / "j.xml").read_text("utf-8")
    assert "netgent_metadata" in junit and "YouTube Watch Test" in junit


def test_a_playwright_era_workflow_runs_every_action_and_check_on_the_wiki(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    converted(project, capsys, WRITTEN / "workflows" / "wiki_playwright_workflow",
              "query=networking")  # fmt: skip
    result = project.run("--netgent-capture=pcap", "--netgent-artifacts=dataset", "-v")
    result.assert_outcomes(passed=1)
    (row,) = manifest_rows(project.path / "dataset")
    timeline = json.loads((project.path / "dataset" / row["folder"] / "timeline.json").read_text())
    (run,) = timeline["runs"]
    states = [e["state"] for e in run["events"] if e["event"] == "state"]
    assert states == ["State 1", "State 2", "State 3", "State 4", "State 5"], states
    urls = [e["url"] for e in run["events"] if e["event"] == "url"]
    assert urls[-1].endswith("?print=1")  # the new tab the click opened


def test_a_shell_workflow_is_a_scenario_member_beside_a_browser_workflow(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    workflows = REGISTRY / "workflows"
    converted(project, capsys, workflows / "test_shell_workflow")  # its values come below
    converted(project, capsys, workflows / "test_browser_workflow", f"url={project.base_url}/wiki/")
    project.workflow(
        "together",
        """
        name: together
        scenario:
          - name: pinger
            workflow: test_shell_workflow.netgent.yaml
            vars: {host: 127.0.0.1, count: 4}
          - name: reader
            workflow: test_browser_workflow.netgent.yaml
        """,
    )
    result = project.run("together.netgent.yaml", "--junitxml=j.xml")
    result.assert_outcomes(passed=1)  # the shell workflow alone, with no values, is an error
    junit = (project.path / "j.xml").read_text("utf-8")
    assert "ping 127.0.0.1: 4/4" in junit, junit


def test_a_javascript_check_that_is_a_function_holds_only_when_it_returns_true(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def workflow(name: str, script: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        check = {"type": "check_javascript", "params": {"script": script, "arg": 2}}
        state = {"checks": [check], "actions": [], "end_state": "done"}
        opened = {
            "checks": [{"type": "check_url", "params": {"url": "about:blank"}}],
            "actions": [{"type": "go_to_url", "params": {"url": "{{base_url}}/wiki/"}}],
        }
        data = {"specification": "Open the wiki.", "states": [opened, state], "parameters": []}
        (folder / "workflow.json").write_text(json.dumps(data))
        (folder / "manifest.json").write_text(json.dumps({"name": name, "type": "browser"}))
        code, err = convert(capsys, str(folder), "-o", str(project.path))
        assert code == 0, err

    workflow("holds", "(n) => n === 2 && document.title.length > 0")
    workflow("never", "(n) => n === 3")  # a function is no answer: it is called
    result = project.run("-o", "netgent_state_timeout=2")
    result.assert_outcomes(passed=1, failed=1)
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert len(failed) == 1 and "never.netgent.yaml::never" in failed[0], result.outlines


def test_netgent_e_runs_a_shell_workflow_and_writes_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = REGISTRY / "workflows" / "test_shell_workflow" / "workflow.json"
    out = tmp_path / "result.json"
    code = main(["-e", str(file), "--var", "host=127.0.0.1", "--var", "count=2", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    result = json.loads(out.read_text("utf-8"))
    assert result["end_state"] == "Workflow Completed"
    (ping,) = result["measurements"]
    assert ping["step"] == "ping" and ping["transmitted"] == 2 and ping["received"] == 2


def test_playwright_checks_hold_where_playwright_says_and_nowhere_else(
    netgent_browser: Any, base_url: str
) -> None:
    from pytest_netgent.browser.page import evaluate
    from pytest_netgent.workflow.automaton import Check

    driver = netgent_browser.driver
    driver.get(base_url + "/wiki/")
    driver.execute_script(
        "document.body.insertAdjacentHTML('beforeend', arguments[0]);",
        '<p class="dup" style="display:none">one</p><p class="dup">two</p>'
        '<p id="clear" style="opacity:0">see-through</p>'
        "<script>const word = 'scriptword';</script><p>Shown words</p>",
    )

    def holds(kind: str, **params: Any) -> bool:
        check = Check.model_validate(playwright_check({"type": kind, "params": params}))
        tick = evaluate(driver, [{"checks": [check.model_dump()]}], None, 0)
        assert tick.ok, tick.error
        return bool(tick.results[0][0][0])

    assert not holds("check_element", selector="p.dup")  # the first match is hidden
    assert holds("check_element", selector="p.dup", state="attached")
    assert holds("check_element", selector="#clear")  # transparent: Playwright shows it
    assert not holds("check_element", selector="#clear", state="hidden")
    assert holds("check_element", selector="#nothing", state="detached")
    assert holds("check_text", text="Shown words")
    assert not holds("check_text", text="Shown")  # exact: the element's whole text
    assert holds("check_text", text="shown WORDS", exact=False)
    for visible in (True, False):  # a script's text is no page text
        assert not holds("check_text", text="scriptword", exact=False, check_visibility=visible)
        assert not holds("check_text", text="const word = 'scriptword';", check_visibility=visible)
    assert holds("check_javascript", script="(n) => n === 2", arg=2)
    assert not holds("check_javascript", script="(n) => n === 2", arg=3)
    assert not holds("check_javascript", script="async () => true")  # a promise: no answer
