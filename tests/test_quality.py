"""The code base stays ruff- and mypy-clean and in its layers: checked with the tests, so
CI enforces it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy"],
    ],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_tool_is_clean(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_imports_keep_to_their_layers() -> None:
    """import-linter's layers contract (pyproject.toml): no module imports from a layer
    above its own, so the house stays in the layers docs/architecture.md draws."""
    script = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "1 kept, 0 broken" in done.stdout, done.stdout + done.stderr


def test_the_lower_bounds_are_the_releases_tox_tests() -> None:
    """pyproject's lower bounds and tox's "oldest" pins name the same releases: a raised
    bound without a raised pin (or the other way round) would claim untested support."""
    import tomllib
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    named = [*project["dependencies"], *extras["llm"], *extras["plots"], *extras["video"]]
    bounds = {}
    for text in named:
        requirement = Requirement(text)
        (spec,) = [s for s in requirement.specifier if s.operator == ">="]
        bounds[requirement.name.lower()] = spec.version
    pins = {}
    for line in (ROOT / "constraints-oldest.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    assert pins == bounds
    tox = (ROOT / "tox.ini").read_text()
    assert "PIP_CONSTRAINT = {toxinidir}/constraints-oldest.txt" in tox


def test_the_packaging_holds_no_install_to_the_corpus_and_builds_its_license() -> None:
    """An SPDX ``license`` string needs setuptools >= 77 (older ones refuse it); no extra,
    dev included, pins exact releases (the corpus's applications are pinned in
    corpus/requirements.txt, which the README's install line reads); pytest's default
    summary of failures and errors is kept beside the skips."""
    import tomllib
    from packaging.requirements import Requirement
    from packaging.version import Version

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(pyproject["project"]["license"], str)
    (setuptools,) = [
        Requirement(r) for r in pyproject["build-system"]["requires"] if r.startswith("setuptools")
    ]
    assert not setuptools.specifier.contains(Version("76.1")), setuptools
    pinned = [
        f"{extra}: {r}"
        for extra, requirements in pyproject["project"]["optional-dependencies"].items()
        for r in requirements
        if any(s.operator in ("==", "===") for s in Requirement(r).specifier)
    ]
    assert pinned == []
    corpus = (ROOT / "corpus" / "requirements.txt").read_text()
    assert "django==" in corpus and "-r corpus/requirements.txt" in (ROOT / "README.md").read_text()
    addopts = pyproject["tool"]["pytest"]["ini_options"]["addopts"].split()
    (report,) = [o for o in addopts if o.startswith("-r")]
    assert set("fEs") <= set(report[2:]), report


def test_the_package_says_the_version_pyproject_names() -> None:
    import tomllib

    from pytest_netgent import __version__

    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"] == __version__
