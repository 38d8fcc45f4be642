"""Reading a trace file: a ZIP with ``trace.json``, screenshots and DOM snapshots.

:func:`read_trace` checks that the file is whole and is a pytest-netgent trace of a
version this release understands, and gives its document and its members by name. Every
problem is a :class:`TraceError` that names the file and says what to do.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import NetgentError, display_path

FORMAT = "netgent-trace"
"""The ``format`` of every trace's ``trace.json``."""
VERSION = 1
"""The newest trace version this release reads."""
DOCUMENT = "trace.json"
"""The member holding the trace's document."""

_REWRITE = "write it again with --netgent-trace=on"
_DAMAGE = (zipfile.BadZipFile, zlib.error, EOFError)
"""What reading a damaged or cut ZIP raises (a member's data or the archive's index)."""


class TraceError(NetgentError):
    """A trace cannot be shown: missing, damaged, not a trace, or from a newer release."""


@dataclass(frozen=True)
class TraceFile:
    """A checked trace: its document and the names of its members.

    Members are read on demand, each from a fresh handle on the file, so a trace holds no
    open file between reads and can be read from several threads at once.
    """

    path: Path
    document: dict[str, Any]
    """The parsed ``trace.json``."""
    names: frozenset[str]
    """The members the ZIP lists (``frames/NNNN.jpg``, ``snapshots/<sha1>.html``, ...)."""

    def member(self, name: str) -> bytes:
        """The bytes of member ``name``: only a name the ZIP lists, never one that leaves
        the archive (``..``, an absolute path)."""
        if not safe_name(name):
            raise TraceError(f"{self.shown}: {name!r} is not a member name a trace can hold")
        if name not in self.names:
            raise TraceError(f"{self.shown} has no member {name!r}")
        try:
            with zipfile.ZipFile(self.path) as archive:
                return archive.read(name)
        except _DAMAGE as exc:
            raise TraceError(
                f"{self.shown} is damaged or truncated ({name}: {exc}): {_REWRITE}"
            ) from exc
        except OSError as exc:
            raise TraceError(f"{self.shown} cannot be read: {exc.strerror or exc}") from exc

    @property
    def shown(self) -> str:
        """The trace's path as printed in messages."""
        return display_path(self.path)


def safe_name(name: str) -> bool:
    """Whether ``name`` is a relative member path that stays inside the archive."""
    if not name or "\\" in name or "\x00" in name or name.startswith("/"):
        return False
    parts = PurePosixPath(name).parts
    return not any(part in ("..", ".") for part in parts) and ":" not in parts[0]


def read_trace(path: Path) -> TraceFile:
    """Open the trace at ``path`` and check it (see the module's documentation).

    Raises :class:`TraceError` when the file is missing, not a ZIP or cut short, holds no
    ``trace.json``, is not a pytest-netgent trace, or was written by a newer release.
    """
    path = Path(path)
    shown = display_path(path)
    if not path.is_file():
        what = "is a folder, not a trace file" if path.is_dir() else "does not exist"
        raise TraceError(f"{shown} {what}: give the path of a trace.zip")
    try:
        with zipfile.ZipFile(path) as archive:
            names = frozenset(archive.namelist())
            if DOCUMENT not in names:
                raise TraceError(
                    f"{shown} holds no {DOCUMENT}: it is not a pytest-netgent trace "
                    f"(a trace is written by --netgent-trace=on)"
                )
            raw = archive.read(DOCUMENT)
    except _DAMAGE as exc:
        raise TraceError(f"{shown} is damaged or truncated: {_REWRITE}") from exc
    except OSError as exc:
        raise TraceError(
            f"{shown} cannot be read ({exc.strerror or exc}): check its permissions"
        ) from exc
    return TraceFile(path, _document(raw, shown), names)


def _document(raw: bytes, shown: str) -> dict[str, Any]:
    """The checked document of a trace's ``trace.json``."""
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise TraceError(
            f"{shown}: its {DOCUMENT} cannot be read ({exc}): it is damaged; {_REWRITE}"
        ) from exc
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise TraceError(
            f"{shown} is not a pytest-netgent trace (its {DOCUMENT} has no "
            f'"format": "{FORMAT}"): give a trace.zip written by --netgent-trace=on'
        )
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise TraceError(
            f"{shown} is not a pytest-netgent trace (its version {version!r} is not a "
            f"number): {_REWRITE}"
        )
    if version > VERSION:
        raise TraceError(
            f"{shown} was written by a newer pytest-netgent (version {version}); upgrade to view it"
        )
    return document
