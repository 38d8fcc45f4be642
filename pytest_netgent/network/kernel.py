"""The kernel's namespace calls: Python's own where it has them (3.12), else libc's."""

from __future__ import annotations

import ctypes
import os

CLONE_NEWNET: int = getattr(os, "CLONE_NEWNET", 0x40000000)
"""A new network namespace (``unshare``), or one to join (``setns``)."""


def unshare(flags: int) -> None:
    """unshare(2): Python's own where it has it (3.12), else libc's."""
    if hasattr(os, "unshare"):
        os.unshare(flags)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def setns(fd: int, flags: int) -> None:
    """setns(2): Python's own where it has it (3.12), else libc's."""
    if hasattr(os, "setns"):
        os.setns(fd, flags)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, flags) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
