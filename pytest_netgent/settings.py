"""The run-wide settings, built once from options and ini in ``pytest_configure``.

A light module: pytest imports the plugin on every start, so what configuration needs
imports no browser, model or workflow machinery.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .browser.session import BrowserOptions
from .capture import CaptureSettings
from .conditions import Condition

WINDOW_RE = re.compile(r"\s*(\d{1,5})\s*[xX,]\s*(\d{1,5})\s*")
"""A window size as written: ``1280x900`` (or ``1280,900``)."""


def parse_window(text: str) -> tuple[int, int]:
    """``(width, height)`` from ``"1280x900"``; ValueError says what is wrong."""
    m = WINDOW_RE.fullmatch(str(text))
    if m is None:
        raise ValueError(f"{text!r} is not a window size: write WIDTHxHEIGHT, e.g. 1280x900")
    width, height = int(m[1]), int(m[2])
    if not (200 <= width <= 7680 and 200 <= height <= 4320):
        raise ValueError(f"{text!r}: a window from 200x200 to 7680x4320, e.g. 1280x900")
    return width, height


def window_text(size: tuple[int, int]) -> str:
    """``"1280x900"`` for ``(1280, 900)``."""
    return f"{size[0]}x{size[1]}"


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
    network: Condition | None = None
    """``--netgent-network``: the condition on the wire of items whose workflow names none."""
    window: tuple[int, int] | None = None
    """``--netgent-window-size``: the window every run uses, over what a workflow's
    ``window:`` or its cache file says."""


def runs_items(config: pytest.Config) -> bool:
    """Whether this process runs items: an xdist worker, or pytest without ``-n``."""
    if getattr(config, "workerinput", None) is not None:
        return True
    return getattr(config.option, "dist", "no") == "no" or not getattr(
        config.option, "numprocesses", None
    )
