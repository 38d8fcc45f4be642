"""The base install, as a user gets it: ``pip install .`` into a fresh virtual env.

It replays and captures without SeleniumBase or langchain-core; a feature that needs an
extra says which ``pip install`` line brings it; and the plugin imports nothing heavy
when pytest starts.
"""

from __future__ import annotations

import importlib.util
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def package_copy(folder: Path) -> Path:
    """bench/startup.py's copy of the package to install (not the checkout's build/)."""
    spec = importlib.util.spec_from_file_location("startup", ROOT / "bench" / "startup.py")
    assert spec is not None and spec.loader is not None
    startup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(startup)
    return startup.package_copy(folder)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with ``pip install .`` (no extras); its python."""
    folder = tmp_path_factory.mktemp("base-venv")
    venv.EnvBuilder(with_pip=True).create(folder)
    python = folder / "bin" / "python"
    source = package_copy(tmp_path_factory.mktemp("source"))  # not the checkout's build/
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--root-user-action=ignore", str(source)],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return python


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "test_trivial.py").write_text("def test_trivial():\n    pass\n")
    return tmp_path


def run(python: Path, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=project, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


def test_the_base_install_has_no_extras(base_venv: Path) -> None:
    listed = subprocess.run(
        [str(base_venv), "-m", "pip", "list", "--format=freeze"],
        capture_output=True, text=True, check=True,
    ).stdout.lower()  # fmt: skip
    assert "pytest-netgent==" in listed and "selenium==" in listed
    assert "seleniumbase" not in listed and "langchain-core" not in listed


def test_uc_without_its_extra_is_a_usage_error(base_venv: Path, project: Path) -> None:
    done = run(base_venv, project, "--netgent-uc")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "pip install 'pytest-netgent[uc]'" in done.stderr


@pytest.mark.parametrize(
    "args",
    [("--netgent-llm", "openai:gpt-4o-mini"), ("-o", "netgent_llm=mypackage.models:chat")],
)
def test_a_model_without_its_extra_is_a_usage_error(
    base_venv: Path, project: Path, args: tuple[str, str]
) -> None:
    done = run(base_venv, project, *args)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "needs langchain-core, which is not installed: pip install 'pytest-netgent[llm]'" in (
        done.stderr
    )


def test_the_local_model_without_its_extra_names_its_install_line(
    base_venv: Path, project: Path
) -> None:
    done = run(base_venv, project, "--netgent-llm", "local")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "pip install 'pytest-netgent[local]'" in done.stderr


def test_a_plain_pytest_run_imports_nothing_heavy(base_venv: Path, project: Path) -> None:
    (project / "conftest.py").write_text(
        "import sys\n\n"
        "def pytest_sessionfinish(session):\n"
        "    heavy = sorted(m for m in sys.modules if m.split('.')[0] in (\n"
        "        'selenium', 'seleniumbase', 'langchain_core', 'pydantic', 'yaml', 'dpkt',\n"
        "        'snowballstemmer', 'pyroute2'))\n"
        "    print('HEAVY', heavy)\n"
    )
    done = run(base_venv, project, "-q", "-s")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HEAVY []" in done.stdout
    assert "1 passed" in done.stdout


def test_the_base_install_replays_a_workflow(base_venv: Path, project: Path) -> None:
    """No extra is needed to replay (here a workflow whose states are cached)."""
    (project / "blank.netgent.yaml").write_text(
        "name: blank\nstates:\n  - name: Start\n    triggers: [The browser shows its start "
        "page]\n    end: Started\n"
    )
    cache = project / "__netgent__" / "blank" / "blank.json"
    cache.parent.mkdir(parents=True)
    cache.write_text(
        '[{"name": "Start", "checks": [{"type": "url", "params": {"url": '
        '"chrome://new-tab-page/"}}], "actions": [], "end_state": "Started"}]'
    )
    done = run(base_venv, project, "-q", "blank.netgent.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
