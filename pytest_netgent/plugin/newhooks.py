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


def pytest_netgent_end_reached(item: pytest.Item, driver: Any, state: str) -> None:
    """Called the moment a workflow item reaches its end state ``state``, while its
    browser (``driver``, the Selenium WebDriver) is still on that page: in record mode,
    the replay that verifies the recording comes after, in the same browser.

    Use it to look at the page the workflow ended on (its text, a video's state) or to
    label it; ``pytest_netgent_run_finished`` follows once the item's run is over.
    """


@pytest.hookspec(firstresult=True)
def pytest_netgent_make_synthesiser(config: pytest.Config, llm: Any) -> Synthesiser | None:
    """Return the synthesiser for one record-mode item, or None for the default.

    ``llm`` is the chat model of ``--netgent-llm`` (None for builtin). The default is
    the builtin synthesiser, tiered before the LLM when there is one.
    """
