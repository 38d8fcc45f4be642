"""``--netgent-trace``, on pytest's side: each item's trace written (or not) at its end.

With ``on`` every item that ran a workflow gets ``trace.zip`` in its artifacts folder;
with ``retain-on-failure`` only an item that did not pass keeps one. Its path is a
property of the item's report (``netgent_trace``: junitxml shows it) and a line of the
failure report says how to open it.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..capture import FILES

if TYPE_CHECKING:
    from ..replay.runner import NetgentBrowser

TRACE_PROPERTY = "netgent_trace"
"""The report property naming an item's trace file."""

TRACE_PLUGIN = "netgent-trace"
TRACE_FILE = "trace.zip"

phases_key: pytest.StashKey[dict[str, str]] = pytest.StashKey()
"""``item.stash[phases_key]``: the outcome of each phase of the item so far."""


def add_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """``--netgent-trace`` and its ini key."""
    group.addoption(
        "--netgent-trace",
        dest="netgent_trace",
        choices=("off", "on", "retain-on-failure"),
        default=None,
        help="A trace per item (trace.zip in its artifacts folder: each tick's checks, "
        "each action with screenshots and DOM snapshots before and after, requests): off "
        "(default), on, or retain-on-failure. Open one with: netgent show-trace PATH",
    )
    parser.addini("netgent_trace", "Trace per item: off, on or retain-on-failure.", default="off")


def trace_mode(config: pytest.Config) -> str:
    """``--netgent-trace``, else the ini key; a bad ini value is a usage error."""
    value = config.getoption("netgent_trace") or str(config.getini("netgent_trace")).strip()
    if value not in ("off", "on", "retain-on-failure"):
        raise pytest.UsageError(
            f"ini netgent_trace = {value}: expected off, on or retain-on-failure "
            "(e.g. netgent_trace = retain-on-failure)"
        )
    return value


class TracePlugin:
    """Writes each item's trace after its teardown, where its outcome is known."""

    def __init__(self, mode: str, artifacts: Path) -> None:
        self.mode = mode
        self.artifacts = artifacts

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        phases = item.stash.setdefault(phases_key, {})
        phases[call.when] = report.outcome
        browser = _browser(item)
        if browser is None or browser.trace is None or not browser.trace.runs:
            return report
        path = _folder(item, browser, self.artifacts) / TRACE_FILE
        if call.when == "call" and report.failed:
            report.sections.append(("netgent trace", f"netgent show-trace {path}"))
        if call.when == "teardown":
            failed = any(p == "failed" for p in phases.values())
            if self.mode == "on" or failed:
                outcome = "failed" if failed else phases.get("call", "passed")
                har = path.parent / FILES["har"]
                browser.trace.write(path, item.nodeid, outcome, har)
                for where in (report.user_properties, item.user_properties):
                    where.append((TRACE_PROPERTY, str(path)))
        return report


def _browser(item: pytest.Item) -> NetgentBrowser | None:
    """The item's ``netgent_browser`` (until its teardown ends)."""
    found = (getattr(item, "funcargs", None) or {}).get("netgent_browser")
    return found if hasattr(found, "trace") else None


def _folder(item: pytest.Item, browser: NetgentBrowser, root: Path) -> Path:
    """The item's artifacts folder (a workflow item's own; a test's by its node id)."""
    folder = getattr(item, "artifacts_dir", None)
    if folder is not None:
        return Path(folder(root))
    from ..capture import folder_name

    values = [s if isinstance(s, str) else s.reveal() for s in browser.secrets.values()]
    return root / folder_name(item.nodeid, values)
