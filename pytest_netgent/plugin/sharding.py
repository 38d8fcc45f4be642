"""Shards of a run, durations and the run's record, on pytest's side.

``--netgent-shard K/N`` keeps the items of shard K (see :mod:`..dataset.shards`) and
deselects the rest, after every other plugin has chosen (``-k``, ``-m``, ``--lf``), so all
shards split the same list. ``--netgent-store-durations`` writes what each item took
(setup, call and teardown) into the durations file for the next run to balance by.

When capture is on, the session's ``dataset.json`` needs what was collected: xdist's
controller collects nothing, so each worker sends its collection in ``workeroutput``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from ..dataset.record import Collection
from ..dataset.shards import (
    DURATIONS_FILE,
    Shard,
    estimate,
    longest_first,
    read_durations,
    split,
    write_durations,
)

SHARD_PLUGIN = "netgent-shard"
WORKER_KEY = "netgent_collection"


def durations_path(config: pytest.Config) -> Path:
    """The durations file: the option, the ini key, else ``.test_durations`` at the root."""
    text = config.getoption("netgent_durations") or str(config.getini("netgent_durations"))
    path = Path(text) if text else Path(DURATIONS_FILE)
    return path if path.is_absolute() else config.rootpath / path


def run_id(config: pytest.Config) -> str:
    """``--netgent-run-id``, else ``NETGENT_RUN_ID`` (``""`` when neither is given)."""
    return str(config.getoption("netgent_run_id") or os.environ.get("NETGENT_RUN_ID", ""))


class ShardPlugin:
    """Splits the collection, measures durations and keeps the collection for the record."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.shard: Shard | None = config.getoption("netgent_shard")
        self.store = bool(config.getoption("netgent_store_durations"))
        self.path = durations_path(config)
        self.collection: Collection | None = None
        self.measured: dict[str, float] = defaultdict(float)
        self.estimate: tuple[float | None, float | None] = (None, None)
        self.shown = False
        self.known: dict[str, float] = {}
        if self.store or (self.shard is not None and self.shard.count > 1):
            try:  # a bad file stops the run before anything is collected
                self.known = read_durations(self.path)
            except ValueError as exc:
                raise pytest.UsageError(f"--netgent-durations: {exc}") from None
        elif hasattr(config, "workerinput"):  # only to order the items (see below)
            with contextlib.suppress(ValueError):  # no order is worth failing a run for
                self.known = read_durations(self.path)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        every = list(items)
        collected = [item.nodeid for item in every]
        shard = self.shard or Shard(1, 1)
        if self.shard is not None and self.shard.count > 1:
            known = self.known
            chosen = set(split(_units(items), known, shard.count)[shard.index - 1])
            kept = [item for item in items if item.nodeid in chosen]
            dropped = [item for item in items if item.nodeid not in chosen]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            items[:] = kept
            self.estimate = (estimate(list(chosen), known), estimate(collected, known))
        if hasattr(config, "workerinput") and self.known:
            _longest_first(items, self.known)
        expected = [item.nodeid for item in every if hasattr(item, "capture_fields")]
        self.collection = Collection(collected, [item.nodeid for item in items], shard, expected)

    def pytest_report_collectionfinish(self, config: pytest.Config) -> str | None:
        line = self._line()
        self.shown = line is not None
        return line

    def _line(self) -> str | None:
        if self.shard is None or self.collection is None:
            return None
        c = self.collection
        line = (
            f"netgent shard {self.shard}: {len(c.assigned)} of the run's {len(c.collected)} items"
        )
        mine, everything = self.estimate
        if mine is not None and everything is not None:
            line += f" (about {mine:.0f} s of {everything:.0f} s by earlier runs)"
        elif self.shard.count > 1:
            line += f" (no durations in {self.path.name}: split by a stable hash)"
        return line

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not hasattr(self.config, "workerinput"):
            self.measured[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        c = self.collection
        if (
            session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
            and self.shard is not None
            and c is not None
            and c.collected
            and not c.assigned
        ):
            session.exitstatus = pytest.ExitCode.OK  # the run has items; none landed here
        if hasattr(self.config, "workerinput") and c is not None:
            output: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
            output[WORKER_KEY] = json.dumps(
                [c.collected, c.assigned, c.shard.index, c.shard.count, c.expected]
            )
        elif self.store and self.measured:
            write_durations(self.path, {**self.known, **self.measured})

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist's controller: the collection a worker saw (all workers see the same)."""
        text = getattr(node, "workeroutput", {}).get(WORKER_KEY)
        if self.collection is None and isinstance(text, str):
            collected, assigned, index, count, expected = json.loads(text)
            self.collection = Collection(collected, assigned, Shard(index, count), expected)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput"):
            return
        if not self.shown and (line := self._line()):  # xdist: the workers collected
            terminalreporter.write_line(line)
        if self.store and self.measured:
            terminalreporter.write_line(
                f"netgent: durations of {len(self.measured)} items written to {self.path}"
            )


def _longest_first(items: list[pytest.Item], known: dict[str, float]) -> None:
    """Put the workflow items the longest first (by ``known`` durations), in the places
    workflow items hold: xdist hands the items out in this order, so the last of the run,
    when a worker may wait for the others, are short. Other tests keep their places."""
    places = [n for n, item in enumerate(items) if hasattr(item, "capture_fields")]
    ids = longest_first([items[n].nodeid for n in places], known)
    by_id = {items[n].nodeid: items[n] for n in places}
    for n, nodeid in zip(places, ids, strict=True):
        items[n] = by_id[nodeid]


def _units(items: list[pytest.Item]) -> list[tuple[str, list[str]]]:
    """The items that must land together: those of one xdist group (a workflow ``group``),
    else each item alone."""
    units: dict[str, list[str]] = {}
    for item in items:
        mark = item.get_closest_marker("xdist_group")
        name = mark.kwargs.get("name") or (mark.args[0] if mark.args else "") if mark else ""
        units.setdefault(f"group:{name}" if name else item.nodeid, []).append(item.nodeid)
    return list(units.items())


def shard_plugin(config: pytest.Config) -> ShardPlugin | None:
    """This session's :class:`ShardPlugin`."""
    plugin = config.pluginmanager.get_plugin(SHARD_PLUGIN)
    return plugin if isinstance(plugin, ShardPlugin) else None
