"""Browser window sizes as workflows, cache files and options write them (``1280x900``)."""

from __future__ import annotations

import re

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
