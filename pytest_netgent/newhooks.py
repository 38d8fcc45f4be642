"""Hooks that pytest-netgent adds; implement them in a conftest.py or a plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

    from .engine import RunResult


def pytest_netgent_run_finished(item: pytest.Item, result: RunResult) -> None:
    """Called after every workflow item ran, passed or failed.

    ``result`` holds the outcome, the end state, the final URL and the timeline of
    states, actions and URLs; use it to label traffic or collect statistics.
    """
