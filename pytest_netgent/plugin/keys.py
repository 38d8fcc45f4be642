"""Keys the plugin, its items and its report hooks share: stash keys and the names of
report properties. A light module, so that the plugin's hooks can test for them in every
pytest run without importing the workflow machinery."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..browser.pool import BrowserPool
    from ..browser.session import BrowserOptions
    from ..capture.item import ItemCapture
    from ..replay.run import RunResult
    from .record_summary import RecordLog
    from .settings import Settings

WORKFLOW_SUFFIXES = (".netgent.yaml", ".netgent.yml")
"""Files pytest collects as workflow files."""

settings_key: pytest.StashKey[Settings] = pytest.StashKey()
"""``config.stash[settings_key]``: the run-wide :class:`~.settings.Settings`."""

record_log_key: pytest.StashKey[RecordLog] = pytest.StashKey()
pool_key: pytest.StashKey[BrowserPool] = pytest.StashKey()
"""This process's browser pool, once made (see ``plugin.pool.browser_pool``)."""
options_key: pytest.StashKey[BrowserOptions] = pytest.StashKey()
"""The launch options of this process's browser (see ``plugin.pool.browser_options``)."""
swept_key: pytest.StashKey[list[str]] = pytest.StashKey()
"""What this session's start removed of runs killed outright (one line per run)."""
"""``config.stash[record_log_key]``: record mode's summary, registered as a plugin."""

result_key: pytest.StashKey[RunResult] = pytest.StashKey()
"""``item.stash[result_key]``: the :class:`RunResult` of a workflow item that ran."""

capture_key: pytest.StashKey[ItemCapture] = pytest.StashKey()
"""``item.stash[capture_key]``: the :class:`ItemCapture` of a test that captured."""

member_captures_key: pytest.StashKey[list[ItemCapture]] = pytest.StashKey()
"""``item.stash[member_captures_key]``: a scenario's member captures (one manifest row
each)."""

phases_key: pytest.StashKey[dict[str, str]] = pytest.StashKey()
"""``item.stash[phases_key]``: the outcome of each phase (setup, call, teardown)."""

RUN_SECONDS_PROPERTY = "netgent_run_seconds"
"""Report property: seconds the workflow run took, from its start to its end or failure."""

STATES_PROPERTY = "netgent_states"
"""Report property: the states the run went through, in order, joined by ``" > "`` (a
plain string, so junitxml shows it as it is)."""

MEASURED_PROPERTY = "netgent_measured"
"""Report property: one line per measurement step (ping, iperf, ndt, wget) run."""
METADATA_PROPERTY = "netgent_metadata"
"""Report property: the workflow's ``metadata`` (JSON), e.g. a NetGent registry's
id, name and version."""

CAPTURE_PLUGIN = "netgent-capture"
"""The name the capture's pytest plugin is registered under (when capture is on)."""

CAPTURE_PROPERTY = "netgent_capture"
"""Report property (teardown): the item's row of ``manifest.csv``, as a JSON object in a
string (junitxml writes properties as strings)."""

NETWORK_PLUGIN = "netgent-network"
"""The name :class:`~.network.plugin.NetworkPlugin` is registered under."""

NETWORK_PROPERTY = "netgent_network"
"""Report property: the item's network condition, ``name: key=value,...``."""
