"""Start-up cost of pytest-netgent for a user's pytest, in fresh virtual environments.

    python bench/startup.py [--rounds N] [--quick] [--keep DIR]

Builds three venvs side by side: ``bare`` (pytest and pytest-xdist only), ``base``
(``pip install .``: replay and capture) and ``all`` (``pip install '.[uc,llm]'``:
SeleniumBase and langchain-core too). Each runs ``pytest -q`` on one trivial test, the
three interleaved round after round so that all see the same machine, and the medians are
printed as ``startup over bare: X ms (base), Y ms (all extras)``; goal: X <= 300 ms. The
``all`` venv also runs with the extras' pytest plugins turned off, as docs/install.md says.
``--quick`` (CI) runs three rounds; ``--keep DIR`` reuses venvs made there before.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_copy(folder: Path) -> Path:
    """This checkout's package (its code, pyproject.toml and README) copied into
    ``folder``: pip builds in the source's ``build/`` folder, which two installs at once
    (the tests and this benchmark on two workers) would otherwise share."""
    shutil.copytree(
        ROOT / "pytest_netgent", folder / "pytest_netgent",
        ignore=shutil.ignore_patterns("__pycache__"),
    )  # fmt: skip
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, folder / name)
    return folder


def make(folder: Path, packages: list[str], source: Path = ROOT) -> Path:
    """A venv at ``folder`` with ``packages`` installed; its python."""
    python = folder / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(folder)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    pip += ["--root-user-action=ignore", *packages]
    done = subprocess.run(pip, capture_output=True, text=True, check=False)
    if done.returncode == 0 and any(p.startswith(str(source)) for p in packages):
        # a reused venv gets this checkout's code, whatever its version says
        again = [*pip[: pip.index("--root-user-action=ignore") + 1], "--no-deps"]
        again += ["--force-reinstall", str(source)]
        done = subprocess.run(again, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"installing {packages} into {folder} failed:\n{done.stderr[-3000:]}")
    return python


OFF = [
    *("-p", "no:seleniumbase", "-p", "no:langsmith_plugin"),
    *("-p", "no:html", "-p", "no:html_fixtures", "-p", "no:metadata"),
    *("-p", "no:rerunfailures", "-p", "no:pytest_ordering", "-p", "no:anyio"),
]
"""How a user turns off the pytest plugins that the extras' packages register (SeleniumBase
brings pytest-html, pytest-metadata, pytest-rerunfailures, pytest-ordering and anyio's)."""


def once(python: Path, project: Path, extra: list[str]) -> float:
    """Seconds of one ``pytest -q`` on the trivial project."""
    command = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, str(project)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="three rounds (CI)")
    parser.add_argument("--keep", type=Path, help="make (or reuse) the venvs in this folder")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="netgent-startup-") as scratch:
        home = args.keep or Path(scratch)
        project = Path(scratch) / "project"
        project.mkdir()
        (project / "test_trivial.py").write_text("def test_trivial():\n    pass\n")
        source = package_copy(Path(scratch) / "source")
        kinds = {
            "bare": ["pytest", "pytest-xdist"],
            "base": [str(source)],
            "all": [f"{source}[uc,llm]"],
        }
        pythons = {}
        for kind, packages in kinds.items():
            started = time.perf_counter()
            pythons[kind] = make(home / kind, packages, source)
            print(f"venv {kind}: ready in {time.perf_counter() - started:.0f} s", flush=True)
        runs = {kind: (python, []) for kind, python in pythons.items()}
        runs["all, plugins off"] = (pythons["all"], OFF)
        times: dict[str, list[float]] = {kind: [] for kind in runs}
        for python, extra in runs.values():
            once(python, project, extra)  # warm the file cache and the .pyc files
        for n in range(1, rounds + 1):
            for kind, (python, extra) in runs.items():
                times[kind].append(once(python, project, extra))
            line = "  ".join(f"{k} {v[-1] * 1000:5.0f} ms" for k, v in times.items())
            print(f"round {n}: {line}", flush=True)
    medians = {kind: statistics.median(values) * 1000 for kind, values in times.items()}
    for kind, value in medians.items():
        print(f"median {kind}: {value:.0f} ms")
    base = medians["base"] - medians["bare"]
    extras = medians["all"] - medians["bare"]
    quiet = medians["all, plugins off"] - medians["bare"]
    print(
        f"startup over bare: {base:.0f} ms (base), {extras:.0f} ms (all extras); with their "
        f"plugins off: {quiet:.0f} ms (all extras)"
    )


if __name__ == "__main__":
    main()
