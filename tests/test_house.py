"""The shape of the package: a thin plugin module and no import circle.

Every import counts, also one inside a function or under ``TYPE_CHECKING``: a circle
there still ties two modules into one concept.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_netgent.replay.runner import NetgentBrowser

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_netgent"
PLUGIN_LINES = 350


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # "from . import x" may name a module x of the package, or a name in it
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_graph() -> dict[str, set[str]]:
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(f) for f in files}
    graph = {module_name(f): imports(f, modules) for f in files}
    # a package's __init__ is what "from . import x" reaches first: not an edge to itself
    return {name: {t for t in targets if not name.startswith(t + ".")}
            for name, targets in graph.items()}  # fmt: skip


def test_no_import_circle_in_the_package() -> None:
    assert circles(package_graph()) == []


def test_the_circle_finder_finds_one() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_plugin_module_stays_thin() -> None:
    lines = len((PACKAGE / "plugin" / "__init__.py").read_text(encoding="utf-8").splitlines())
    assert lines <= PLUGIN_LINES, (
        f"plugin/__init__.py has {lines} lines (at most {PLUGIN_LINES}): options belong in "
        "plugin/options.py, capture in plugin/capturing.py, running workflows in "
        "replay/runner.py"
    )


def test_one_list_of_action_types() -> None:
    from typing import get_args

    from pytest_netgent.browser.actions import Actions
    from pytest_netgent.workflow.automaton import ACTION_PARAMS, ACTION_TYPES
    from pytest_netgent.workflow.messages import ActionName

    registry = Actions(None, 1.0, lambda url: None)._registry  # type: ignore[arg-type]
    assert set(registry) == set(ACTION_PARAMS) == set(ACTION_TYPES)
    assert get_args(ActionName) == ACTION_TYPES


MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES
    }
    assert long == {}, f"split these by what they do (at most {MODULE_LINES} lines): {long}"


FUNCTION_LINES = 60


def test_no_function_body_is_over_60_lines() -> None:
    """A function reads as one idea: its body (its docstring aside) fits on a screen."""
    long = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = node.body
            if len(body) > 1 and ast.get_docstring(node) is not None:
                body = body[1:]
            lines = (node.end_lineno or 0) - body[0].lineno + 1
            if lines > FUNCTION_LINES:
                long[f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"] = lines
    assert long == {}, f"split these where a part names a concept: {long}"


ROUTE_WORKFLOW = PACKAGE.parent / "bench" / "tour" / "tour.netgent.yaml"


def route(run: Callable[[], object], entry: CodeType) -> list[tuple[str, str, str]]:
    """The calls from one package module into another that ``entry`` makes itself while
    ``run()`` runs, as ``(caller, callee, function)``; methods of the workflow's own data
    (``Workflow.prompt_hash``, ``State.fill``) are the data, not a stop."""
    from pytest_netgent.workflow.automaton import Automaton, State
    from pytest_netgent.workflow.spec import Workflow

    data = (Automaton, State, Workflow)
    calls: list[tuple[str, str, str]] = []
    modules = {str(p): module_name(p) for p in PACKAGE.rglob("*.py")}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_back is None or frame.f_back.f_code is not entry:
            return
        callee = modules.get(frame.f_code.co_filename)
        owner = (
            frame.f_locals.get(frame.f_code.co_varnames[0], None)
            if frame.f_code.co_argcount
            else None
        )
        if callee is None or isinstance(owner, data) or owner in data:
            return
        caller = modules[entry.co_filename]
        if callee != caller:
            calls.append((caller, callee, frame.f_code.co_name))

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("record", ["", "all"])
def test_a_run_goes_down_the_house_each_module_once(
    netgent_browser: NetgentBrowser, base_url: str, tmp_path: Path, record: str
) -> None:
    """From the fixture's ``run`` a workflow passes each module once, and each step goes
    along an import arrow (down the house), in replay and in record mode alike."""
    from pytest_netgent.replay.runner import NetgentBrowser

    shutil.copytree(ROUTE_WORKFLOW.parent, tmp_path / "tour")
    workflow = tmp_path / "tour" / ROUTE_WORKFLOW.name
    os.environ.setdefault("NETWIKI_PASSWORD", "netgent-pass")
    calls = route(
        lambda: netgent_browser.run(workflow, name="wiki-tour", record=record or None, check=False),
        NetgentBrowser.run.__code__,
    )
    stops = ["pytest_netgent.replay.runner"]
    for _, callee, _ in calls:
        if stops[-1] != callee:
            stops.append(callee)
    text = " -> ".join(s.removeprefix("pytest_netgent.") for s in stops)
    print(f"route ({record or 'replay'}): {text}")
    if not record:  # record may fail here (the builtin rules read not every sentence)
        assert netgent_browser.results[-1].passed
    assert len(stops) == len(set(stops)), f"a module is visited twice: {text}"
    assert "pytest_netgent.replay.wiring" in stops, text
    graph = package_graph()
    for caller, callee, function in calls:
        assert callee in graph[caller], f"{caller} calls {callee}.{function} but does not import it"


BROAD = ("except Exception", "except BaseException", "suppress(Exception)")


def test_every_broad_except_says_why_on_its_line() -> None:
    """A handler that catches everything is a decision: its line says why (re-raised after
    cleaning up, a page already gone, a fault that must fail closed...)."""
    silent = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if any(b in line for b in BROAD) and "#" not in line
    ]
    assert silent == [], f"say why on the line, or catch what is meant: {silent}"
