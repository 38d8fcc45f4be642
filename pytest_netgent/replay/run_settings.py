"""The settings every run of one :class:`~pytest_netgent.NetgentBrowser` shares.

A light module: the plugin's settings extend these, and pytest imports the plugin on
every start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ReplaySettings:
    """What replay and record need of the session's settings."""

    state_timeout: float = 10.0
    artifacts: Path = Path("netgent-artifacts")
    record: str = ""
    """``--netgent-record`` mode: "" (replay), ``missing``, ``all`` or ``propose``."""
    rootdir: Path = field(default_factory=Path.cwd)
    """The project's root: proposals under ``artifacts/proposed`` mirror paths below it."""
    trace: str = "off"
    """``--netgent-trace``: ``off``, ``on`` or ``retain-on-failure`` (see :mod:`.trace`)."""
    video: str = "off"
    """``--netgent-video``: ``off``, ``on`` or ``retain-on-failure``: the pictures of each
    item's runs kept for a video."""
    base_url: str = ""
    """``--netgent-base-url`` or ini ``netgent_base_url`` ("" when a ``base_url`` fixture
    gives it, or nothing does)."""
    window: tuple[int, int] | None = None
    """``--netgent-window-size``: the window every run uses, over what a workflow's
    ``window:`` or its cache file says."""
