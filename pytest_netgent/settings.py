"""The run-wide settings, built once from options and ini in ``pytest_configure``.

A light module: pytest imports the plugin on every start, so what configuration needs
imports no browser, model or workflow machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .browser.session import BrowserOptions
from .capture import CaptureSettings


@dataclass
class Settings:
    """Run-wide settings, from the command line, the ini file and defaults."""

    browser: BrowserOptions = field(default_factory=BrowserOptions)
    state_timeout: float = 10.0
    artifacts: Path = Path("netgent-artifacts")
    base_url: str = ""
    record: str = ""
    """``--netgent-record`` mode: "" (replay), ``missing``, ``all`` or ``propose``."""
    rootdir: Path = field(default_factory=Path.cwd)
    """The project's root: proposals under ``artifacts/proposed`` mirror paths below it."""
    profile: Path | None = None
    """``--netgent-user-data-dir``: the browser profile each worker copies."""
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    """``--netgent-capture``: what each item captures, and where."""
