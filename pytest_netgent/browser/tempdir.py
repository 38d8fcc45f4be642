"""The browser's temporary folder: Chromium makes its single-instance socket there, and a
Unix socket's path has a fixed room, which a long ``TMPDIR`` overflows (ChromeDriver then
says only that "Chrome instance exited")."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SOCKET_MAX = 107
"""The longest path of a Unix socket (``sun_path`` holds 108 bytes with its NUL)."""
SOCKET_TAIL = "/.org.chromium.Chromium.XXXXXX/SingletonSocket"
"""Where Chromium puts its single-instance socket, under its ``TMPDIR``."""


def socket_room(temp: str) -> int:
    """Bytes to spare in the path of the socket Chromium makes under the temporary
    folder ``temp``: below 0, Chromium cannot start there (ChromeDriver then says only
    that "Chrome instance exited")."""
    return SOCKET_MAX - len(os.fsencode(temp + SOCKET_TAIL))


def home_base() -> str:
    """Where a browser folder of the plugin's own goes: the temporary folder, or ``/tmp``
    where the socket under ``TEMP/netgent-browser-PID-XXXXXXXX/tmp`` would not fit."""
    temp = tempfile.gettempdir()
    home = f"{temp}/netgent-browser-{os.getpid()}-XXXXXXXX/tmp"
    return temp if socket_room(home) >= 0 or not Path("/tmp").is_dir() else "/tmp"


def browser_temp(given: str) -> str:
    """The ``TMPDIR`` a browser gets: ``given`` (its own folder's), else the process's, or
    ``/tmp`` where the process's is too long for the socket ("" keeps the process's)."""
    if given or socket_room(tempfile.gettempdir()) >= 0 or not os.path.isdir("/tmp"):
        return given
    return "/tmp"
