"""The local model, end to end: ``--netgent-llm local`` runs SmolLM2-135M-Instruct on this
machine's CPU (llama-cpp-python's OpenAI-compatible server, reached through LangChain's
ChatOpenAI), and with ``--netgent-llm-only`` it decides every synthesis step: it records
a workflow from nothing on the local wiki and heals it on the wiki's changed UI. Token
budgets keep each run short; what the model was sent is read back from the server's
answers (calls and tokens in the record summary)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from pytest_netgent.synthesis.local import DISTRIBUTION, model_path
from tests.helpers import Project, css

QUIC = (
    Path(__file__).resolve().parent.parent / "fixtures" / "workflows" / "quic.netgent.yaml"
).read_text()

LOCAL = ("--netgent-llm=local", "--netgent-llm-only", "--netgent-llm-tokens=40000")


def _servers(parent: int) -> set[int]:
    """Model servers that process ``parent`` started (another test's, on another
    worker, are not seen)."""
    out = subprocess.run(
        ["pgrep", "-P", str(parent), "-f", "llama_cpp.server"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return {int(pid) for pid in out.split()}


def _running(pids: set[int]) -> set[int]:
    """Those of ``pids`` still running (not ended, nor ended and unreaped)."""
    alive = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):  # ended and reaped
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
    return alive


def _summary(text: str) -> tuple[int, int]:
    """LLM calls and tokens of the record summary."""
    match = re.search(r"LLM calls: (\d+), tokens: (\d+)", text)
    assert match, text
    return int(match.group(1)), int(match.group(2))


def test_the_bundled_model_is_found_without_importing_its_package() -> None:
    path = model_path("local")
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert DISTRIBUTION in str(path).replace("_", "-")


def test_local_model_records_from_nothing_and_the_cache_replays(project: Project) -> None:
    before = _servers(os.getpid())
    path = project.workflow("quic", QUIC)
    result = project.run("--netgent-record", *LOCAL)
    result.assert_outcomes(passed=1)
    calls, tokens = _summary(result.stdout.str())
    # the model made both states: the builtin rules were not asked
    result.stdout.fnmatch_lines(["*steps resolved: 0 by builtin, * by the LLM*"])
    assert 3 <= calls <= 20 and 0 < tokens <= 40_000, (calls, tokens)
    cache = json.loads((path.parent / "__netgent__" / "quic" / "quic.json").read_text())
    assert cache["synthesis"]["model"] == "SmolLM2-135M-Instruct.Q4_1"
    home = next(s for s in cache["states"] if s["name"] == "Home")
    assert [a["type"] for a in home["actions"]] == ["click"], home
    assert "QUIC" in json.dumps(home["actions"]), home
    # replay: no model, the same path
    again = project.run()
    again.assert_outcomes(passed=1)
    # the session ended its model server
    assert _servers(os.getpid()) <= before


def test_local_model_heals_a_changed_ui(project: Project, changed_url: str) -> None:
    """The article's heading moved to another element in the changed UI: the cached
    check fails there, and the model makes the state again."""
    path = project.workflow("quic", QUIC)
    project.states(
        path,
        "quic",
        {
            "Home": (
                [{"type": "url", "params": {"url": "{base_url}/wiki/"}}],
                [{"type": "click", "params": {"by": "link text", "selector": "QUIC"}}],
            ),
            "Article": ([{"type": "element", "params": css("h1#firstHeading")}], []),
        },
    )
    project.run(base_url=changed_url).assert_outcomes(failed=1)
    healed = project.run("--netgent-record", *LOCAL, base_url=changed_url)
    healed.assert_outcomes(passed=1)
    healed.stdout.fnmatch_lines(["quic.netgent.yaml::quic: healed 'Article' -> *quic.json"])
    assert _summary(healed.stdout.str())[0] > 0
    project.run(base_url=changed_url).assert_outcomes(passed=1)


def test_a_model_file_that_does_not_exist_is_a_usage_error(project: Project) -> None:
    project.workflow("quic", QUIC)
    result = project.run("--netgent-record", "--netgent-llm=local:/nonexistent/model.gguf")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--netgent-llm 'local:/nonexistent/model.gguf': no such model file*GGUF*"]
    )
    assert not (project.path / "__netgent__").exists()


def test_a_killed_run_leaves_no_model_server(tmp_path: Path) -> None:
    """The server dies with the process that started it, however that one ends."""
    script = tmp_path / "start.py"
    script.write_text(
        "import time\n"
        "from pytest_netgent.synthesis.local import local_model\n"
        "local_model('local')\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    proc = subprocess.Popen(
        ["python", str(script)], stdout=subprocess.PIPE, text=True, cwd=os.getcwd()
    )
    servers: set[int] = set()
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        servers = _servers(proc.pid)
        assert servers, "the server runs while its starter does"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    end = time.monotonic() + 20
    while _running(servers) and time.monotonic() < end:
        time.sleep(0.2)
    assert not _running(servers)
