"""Living with the pytest plugins users already run.

- **pytest-html**: a failed run's screenshot is embedded in the HTML report (its
  ``extras``), so the report is whole once the workspace is gone.
- **pytest-rerunfailures**: each attempt at an item runs on a fresh browser and writes
  into a folder of its own, ``<folder>-retryN`` for the N-th rerun (as Playwright names
  its retries), so no attempt overwrites another's screenshot or captures.
- **pytest-repeat**: ``--count N`` and the ``repeat`` mark make N items of a workflow,
  with pytest-repeat's ids (``name[1-3]``, ``name[QUIC-2-3]``) and ``--repeat-scope``
  order.

Light, like every module the plugin loads on each pytest start: a plugin's own module
is imported only where that plugin is active.
"""

from __future__ import annotations

import base64
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import pytest

from .keys import pool_key, result_key

HTML_PLUGIN = "html"
"""pytest-html's name in the plugin manager."""

REPEAT_PLUGIN = "repeat"
"""pytest-repeat's name in the plugin manager."""

repeat_step_key: pytest.StashKey[int] = pytest.StashKey()
"""``item.stash[repeat_step_key]``: which repetition (0-based) a repeated item is."""


def attempt(item: pytest.Item) -> int:
    """Which attempt at ``item`` runs: 1, or pytest-rerunfailures' ``execution_count``."""
    count = getattr(item, "execution_count", 1)
    return count if isinstance(count, int) and count > 1 else 1


def attempt_folder(item: pytest.Item, folder: Path) -> Path:
    """``folder`` for the first attempt at ``item``, ``folder-retryN`` for its N-th rerun."""
    n = attempt(item)
    return folder if n == 1 else folder.with_name(f"{folder.name}-retry{n - 1}")


def repeat_count(config: pytest.Config, marks: Iterable[pytest.MarkDecorator]) -> int:
    """How many items pytest-repeat asks for per workflow item: its ``repeat`` mark,
    else ``--count``; 1 without pytest-repeat. Raises :class:`ValueError` for a
    ``repeat`` mark without a whole number."""
    if not config.pluginmanager.hasplugin(REPEAT_PLUGIN):
        return 1
    for mark in marks:
        if mark.name == "repeat":
            args = mark.args
            if len(args) != 1 or isinstance(args[0], bool) or not isinstance(args[0], int):
                given = [*map(repr, args), *(f"{k}={v!r}" for k, v in mark.kwargs.items())]
                raise ValueError(
                    f"mark 'repeat' takes a whole number of runs, like {{repeat: 3}}; "
                    f"got ({', '.join(given)})"
                )
            return max(args[0], 1)
    count = config.getoption("count", 1)
    return count if isinstance(count, int) and count > 1 else 1


def repeat_ids(count: int) -> list[tuple[int, str]]:
    """Each repetition's step and pytest-repeat's id for it (none when not repeated)."""
    if count <= 1:
        return [(0, "")]
    return [(i, f"{i + 1}-{count}") for i in range(count)]


def _repeat_order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put repeated workflow items in ``--repeat-scope`` order, in the places they hold:
    per file (module, class) or over the session, every item's first run before any
    second run; pytest does this for Python tests through their parametrization."""
    scope = config.getoption("repeat_scope", "function")
    if scope not in ("class", "module", "session"):
        return
    places = [i for i, item in enumerate(items) if repeat_step_key in item.stash]

    def group(item: pytest.Item) -> str:
        return "" if scope == "session" else str(item.path)

    first: dict[str, int] = {}
    for i in places:
        first.setdefault(group(items[i]), i)  # each file's items stay where they begin
    ordered = sorted(
        places, key=lambda i: (first[group(items[i])], items[i].stash[repeat_step_key], i)
    )
    moved = [items[i] for i in ordered]
    for place, item in zip(places, moved, strict=True):
        items[place] = item


def failure_screenshots(exc: BaseException) -> list[tuple[str, Path]]:
    """The screenshots a failed run took, with whose they are: the workflow's of a
    :class:`~.errors.ReplayError`, or each failed member's of a scenario."""
    from ..errors import NetgentError, ReplayError

    if not isinstance(exc, NetgentError):
        return []
    errors: list[tuple[str, Any]] = []
    if isinstance(exc, ReplayError):
        errors.append((exc.workflow, exc))
    for outcome in getattr(exc, "outcomes", None) or ():  # a scenario's members
        result = getattr(outcome, "result", None)
        if result is not None and isinstance(result.error, ReplayError):
            errors.append((f"{outcome.name}: {result.error.workflow}", result.error))
    shots = []
    for name, error in errors:
        shown = error.context.screenshot if error.context is not None else ""
        if shown and not shown.startswith("(") and Path(shown).is_file():
            shots.append((name, Path(shown)))
    return shots


def _html_on(config: pytest.Config) -> bool:
    """pytest-html is loaded and writes a report in this run."""
    return config.pluginmanager.hasplugin(HTML_PLUGIN) and bool(config.getoption("htmlpath", None))


class ThirdPartyPlugins:
    """The hooks that fit workflow items to the plugins above (registered in
    ``pytest_configure``)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A rerun starts on a fresh browser: whatever the failed attempt left in the
        browser (a hung page, a half-finished login) is not the rerun's."""
        if attempt(item) == 1:
            return
        if result_key in item.stash:
            del item.stash[result_key]  # the failed attempt's, not this one's
        if "netgent_browser" in getattr(item, "fixturenames", ()):
            pool = item.config.stash.get(pool_key, None)
            if pool is not None:
                pool.close()  # the item's fixture starts the next one

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """With pytest-html: the failure's screenshots go into the report's ``extras``,
        as data, not as a path into a workspace that is gone when the report is read."""
        report = yield
        if call.when != "call" or not report.failed or call.excinfo is None:
            return report
        if not _html_on(item.config):
            return report
        shots = failure_screenshots(call.excinfo.value)
        if shots:
            from pytest_html import extras  # type: ignore[import-untyped]

            added = [
                extras.png(base64.b64encode(path.read_bytes()).decode("ascii"), name=name)
                for name, path in shots
            ]
            report.extras = [*getattr(report, "extras", []), *added]  # type: ignore[attr-defined]
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Repeated workflow items in ``--repeat-scope`` order."""
        if config.pluginmanager.hasplugin(REPEAT_PLUGIN):
            _repeat_order(config, items)
