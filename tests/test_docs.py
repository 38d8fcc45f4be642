"""The documentation site builds in MkDocs' strict mode from docs/ (its reference pages
made from the code), and the CI definitions users copy are valid for their CI systems
and do what they say when their commands run here."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from pytest_netgent.plugin.options import pytest_addoption

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, element

ROOT = Path(__file__).resolve().parent.parent
GITHUB = ROOT / "ci-templates" / "github" / "netgent.yml"
GITLAB = ROOT / "ci-templates" / "gitlab" / "netgent.gitlab-ci.yml"
DATASET = ROOT / "ci-templates" / "github" / "netgent-dataset.yml"
QUIET_DOCS = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


def _script(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def test_the_docs_site_builds_strictly_with_pages_made_from_the_code(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [_script("mkdocs"), "build", "--strict", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **QUIET_DOCS},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    options = (site / "reference" / "options" / "index.html").read_text()
    from _pytest.config.argparsing import Parser

    parser = Parser(_ispytest=True)
    pytest_addoption(parser)  # type: ignore[arg-type]
    names = [n for g in parser._groups if g.name == "netgent" for o in g.options for n in o.names()]
    assert len(names) >= 20 and all(name in options for name in names)
    schema = (site / "reference" / "schema" / "index.html").read_text()
    assert "allowed_hosts" in schema and "start_url" in schema
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "NetgentBrowser" in api and "A browser reset for this test" in api  # its docstring
    for page in ("ci", "troubleshooting", "architecture", "captures", "record"):
        text = (site / page / "index.html").read_text()
        assert "--8&lt;--" not in text and "--8<--" not in text, page  # every snippet filled
    start = html.unescape(re.sub(r"<[^>]+>", "", (site / "index.html").read_text()))
    assert "pytest -n 2 && tox -e oldest,newest" in start  # the README's two commands
    command_line = (ROOT / "docs" / "reference" / "command-line.md").read_text()
    assert [name for name in names if f"`{name}" not in command_line] == []


def test_the_readme_is_short_and_starts_with_the_two_commands_ci_runs() -> None:
    """The README is read in two minutes; the manual is the docs site. ``.ci/run`` runs
    its first two ``sh`` blocks, the install line and the tests, and the docs' home page
    shows the same two."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    assert blocks[0].startswith(
        "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium"
    )
    assert "-r corpus/requirements.txt" in blocks[0]
    assert blocks[1] == "pytest -n 2 && tox -e oldest,newest\n"
    home = (ROOT / "docs" / "index.md").read_text()
    assert re.findall(r"^```sh\n(.*?)^```", home, re.M | re.S)[:2] == blocks[:2]
    for page in (ROOT / "docs").rglob("*.md"):
        assert "README.md" not in page.read_text(), page  # pages are written as pages


@pytest.mark.parametrize(
    ("file", "schema", "wrong"),
    [
        (GITHUB, "vendor.github-workflows", ("runs-on: ubuntu-latest", "")),  # no runner
        (GITLAB, "vendor.gitlab-ci", ("when: always", "when: sometimes")),  # no such when
        (DATASET, "vendor.github-workflows", ("matrix:", "matrices:")),
    ],
    ids=["github", "gitlab", "github-dataset-matrix"],
)
def test_the_ci_definitions_are_valid_for_their_ci_systems(
    file: Path, schema: str, wrong: tuple[str, str], tmp_path: Path
) -> None:
    def check(path: Path) -> subprocess.CompletedProcess[str]:
        command = [_script("check-jsonschema"), "--builtin-schema", schema, str(path)]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    done = check(file)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / file.name  # the check can fail
    assert wrong[0] in file.read_text()
    broken.write_text(file.read_text().replace(*wrong))
    assert check(broken).returncode != 0


def _github_steps() -> dict[str, str]:
    steps = yaml.safe_load(GITHUB.read_text())["jobs"]["replay"]["steps"]
    here = {
        '"$(command -v google-chrome)"': shutil.which("chromium") or "chromium",
        '"$CHROMEWEBDRIVER/chromedriver"': shutil.which("chromedriver") or "chromedriver",
    }
    found = {}
    for step in steps:
        if "run" in step:
            command = step["run"]
            for theirs, ours in here.items():
                command = command.replace(theirs, ours)
            found[step["name"]] = command
    return found


def _drifting_project(project: Project) -> None:
    """A passing workflow, and one whose cached state no longer matches the site."""
    file = project.workflow("search", SEARCH_WORKFLOW)
    project.states(file, "search", SEARCH_STATES)
    drift = project.workflow("drift", SEARCH_WORKFLOW.replace("name: search", "name: drift"))
    changed = {**SEARCH_STATES, "Home": ([element("#no-such-box")], SEARCH_STATES["Home"][1])}
    project.states(drift, "drift", changed)


def _run(project: Project, command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTEST_ADDOPTS": f"--netgent-base-url={project.base_url}"}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        ["bash", "-c", command], cwd=project.path, capture_output=True, text=True, env=env,
        timeout=600,
    )  # fmt: skip


def _junit(path: Path) -> dict[str, str]:
    cases = ET.parse(path).getroot().iter("testcase")
    return {c.get("name", ""): "failed" if c.find("failure") is not None else "passed"
            for c in cases}  # fmt: skip


def test_the_github_jobs_commands_replay_report_and_propose_heals(project: Project) -> None:
    _drifting_project(project)
    steps = _github_steps()
    replay = _run(project, steps["Replay"])
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert _junit(project.path / "netgent-junit.xml") == {"search": "passed", "drift": "failed"}
    artifacts = project.path / "netgent-artifacts"
    assert list(artifacts.rglob("failure-step*.png")), replay.stdout
    assert [p.parent.name for p in artifacts.rglob("trace.zip")] == [
        p.parent.name for p in artifacts.rglob("failure-step*.png")
    ]  # the failed item's trace, kept for the upload
    proposed = _run(project, steps["Propose heals for what failed"])
    assert proposed.returncode == 0, proposed.stdout + proposed.stderr
    assert "1 passed" in proposed.stdout or "1 failed" in proposed.stdout, proposed.stdout
    assert "drift" in proposed.stdout and "search.netgent.yaml" not in proposed.stdout


def test_the_gitlab_jobs_script_fails_the_job_and_leaves_its_reports(project: Project) -> None:
    _drifting_project(project)
    job = yaml.safe_load(GITLAB.read_text())["netgent"]
    done = _run(project, "\n".join(job["script"]))
    assert done.returncode == 1, done.stdout + done.stderr
    assert _junit(project.path / "netgent-junit.xml") == {"search": "passed", "drift": "failed"}
    for path in job["artifacts"]["paths"]:
        assert (project.path / path).is_dir(), path
