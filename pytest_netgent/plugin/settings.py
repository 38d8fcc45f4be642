"""The run-wide settings, built once from options and ini in ``pytest_configure``.

A light module: pytest imports the plugin on every start, so what configuration needs
imports no browser, model or workflow machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ..browser.session import BrowserOptions
from ..capture import CaptureSettings
from ..network.conditions import Condition
from ..replay.settings import ReplaySettings


@dataclass
class Settings(ReplaySettings):
    """Run-wide settings, from the command line, the ini file and defaults: those of
    replay, and the browser's, the captures' and the network's."""

    browser: BrowserOptions = field(default_factory=BrowserOptions)
    base_url: str = ""
    profile: Path | None = None
    """``--netgent-user-data-dir``: the browser profile each worker copies."""
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    """``--netgent-capture``: what each item captures, and where."""
    network: Condition | None = None
    """``--netgent-network``: the condition on the wire of items whose workflow names none."""


def runs_items(config: pytest.Config) -> bool:
    """Whether this process runs items: an xdist worker, or pytest without ``-n``."""
    if getattr(config, "workerinput", None) is not None:
        return True
    return getattr(config.option, "dist", "no") == "no" or not getattr(
        config.option, "numprocesses", None
    )
