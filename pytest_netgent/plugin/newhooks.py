"""Hooks that pytest-netgent adds; implement them in a conftest.py or a plugin."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..replay.run import RunResult
    from ..synthesis import Synthesiser


def pytest_netgent_run_finished(item: pytest.Item, result: RunResult) -> None:
    """Called after every workflow item ran, passed or failed.

    ``result`` holds the outcome, the end state, the final URL and the timeline of
    states, actions and URLs; use it to label traffic or collect statistics.
    """


@pytest.hookspec(firstresult=True)
def pytest_netgent_make_synthesiser(config: pytest.Config, llm: Any) -> Synthesiser | None:
    """Return the synthesiser for one record-mode item, or None for the default.

    ``llm`` is the chat model of ``--netgent-llm`` (None for builtin). The default is
    the builtin synthesiser, tiered before the LLM when there is one.
    """
