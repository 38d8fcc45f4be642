"""The public API is listed three times in ``pytest_netgent/__init__.py``: the imports type
checkers read, the table that loads each name on first use, and ``__all__``. They agree,
and every name loads from where the table says."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest_netgent

INIT = Path(pytest_netgent.__file__)


def _lists() -> tuple[dict[str, str], dict[str, str], list[str]]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    table: dict[str, str] = {}
    listed: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.dump(imp)
                module = "." * imp.level + (imp.module or "")
                typed.update({alias.asname or alias.name: module for alias in imp.names})
        elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_EXPORTS":
            table = ast.literal_eval(node.value)  # type: ignore[arg-type]
        elif isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            listed = ast.literal_eval(node.value)
    return typed, table, listed


def test_the_three_lists_of_the_public_api_agree() -> None:
    typed, table, listed = _lists()
    assert table, "no _EXPORTS table found"
    assert typed == table, "the TYPE_CHECKING imports and _EXPORTS name other modules"
    assert sorted(listed) == sorted(table), "__all__ and _EXPORTS name other names"
    assert len(listed) == len(set(listed)), "__all__ names a name twice"


def test_every_public_name_loads_from_its_module() -> None:
    _, table, _ = _lists()
    for name, module in table.items():
        value = getattr(pytest_netgent, name)
        assert value is getattr(importlib.import_module(module, "pytest_netgent"), name)
    assert sorted(dir(pytest_netgent)) == sorted(set(dir(pytest_netgent)))
    assert set(table) <= set(dir(pytest_netgent))
