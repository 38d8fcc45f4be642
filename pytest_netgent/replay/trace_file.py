"""The trace file's format, written and read: a ZIP with ``trace.json``, screenshots and
DOM snapshots (what :mod:`.trace` records into it is said there).

:func:`pack` writes one; :func:`read_trace` checks that the file is whole and is a
pytest-netgent trace of a version this release understands, and gives its document and
its members by name. Every problem is a :class:`TraceError` that names the file and says what to do.

A ZIP says how large each member expands to, and a small file can say a great deal (zeros
deflate a thousand to one): a trace whose members claim more than :data:`MEMBER_LIMIT`
each or :data:`ARCHIVE_LIMIT` in all is refused before anything is read, and every read
stops at :data:`MEMBER_LIMIT` whatever the header claimed. Nothing is extracted to disk.
"""

from __future__ import annotations

import io
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
TRACE_FILE = "trace.zip"
"""The name of an item's trace in its folder."""

MEMBER_LIMIT = 256 * 2**20
"""The most bytes one member may expand to. A trace --netgent-trace writes stays far
below: its screenshots are small JPEGs and a DOM snapshot is cut at 2 MB."""
ARCHIVE_LIMIT = 2 * 2**30
"""The most bytes a trace's members may expand to in all (they are read one at a time,
on demand: this bounds what a trace may claim, not what is held at once)."""
_BLOCK = 2**20
"""Bytes read of a member at a time."""

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
                return _read(archive, name, self.shown)
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


def pack(document: dict[str, Any], files: dict[str, bytes]) -> bytes:
    """A trace file of ``document`` (its ``format`` and ``version`` set here) and its
    ``files`` by member name; screenshots are stored as they are, the rest deflated."""
    document = {"format": FORMAT, "version": VERSION, **document}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(DOCUMENT, json.dumps(document, ensure_ascii=False, indent=1))
        for name, data in files.items():
            kind = zipfile.ZIP_STORED if name.endswith(".jpg") else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=kind)
    return buffer.getvalue()


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
            _check_sizes(archive, shown)
            raw = _read(archive, DOCUMENT, shown)
    except _DAMAGE as exc:
        raise TraceError(f"{shown} is damaged or truncated: {_REWRITE}") from exc
    except OSError as exc:
        raise TraceError(
            f"{shown} cannot be read ({exc.strerror or exc}): check its permissions"
        ) from exc
    return TraceFile(path, _document(raw, shown), names)


def _check_sizes(archive: zipfile.ZipFile, shown: str) -> None:
    """Refuse a trace whose members claim to expand beyond the limits (see the module's
    documentation), naming the first member over :data:`MEMBER_LIMIT`."""
    total = 0
    for info in archive.infolist():
        if info.file_size > MEMBER_LIMIT:
            raise _too_large(shown, info.filename, info.file_size)
        total += info.file_size
    if total > ARCHIVE_LIMIT:
        raise TraceError(
            f"{shown}: its members expand to {_size(total)} in all, more than the "
            f"{_size(ARCHIVE_LIMIT)} a trace may hold (traces.ARCHIVE_LIMIT): it is no trace "
            f"--netgent-trace wrote; {_REWRITE}"
        )


def _read(archive: zipfile.ZipFile, name: str, shown: str) -> bytes:
    """The bytes of member ``name``: never more than :data:`MEMBER_LIMIT`, whatever its
    header says it expands to."""
    info = archive.getinfo(name)
    if info.file_size > MEMBER_LIMIT:
        raise _too_large(shown, name, info.file_size)
    blocks, size = [], 0
    with archive.open(info) as member:
        while block := member.read(_BLOCK):
            size += len(block)
            if size > MEMBER_LIMIT:
                raise _too_large(shown, name, None)
            blocks.append(block)
    return b"".join(blocks)


def _too_large(shown: str, name: str, size: int | None) -> TraceError:
    """The error of a member that expands beyond :data:`MEMBER_LIMIT` (``size``: what its
    header claims; None: more than its header claimed)."""
    claim = f"to {_size(size)}" if size is not None else "beyond what its header claims"
    return TraceError(
        f"{shown}: its member {name} expands {claim}, more than the {_size(MEMBER_LIMIT)} a "
        f"trace member may hold (traces.MEMBER_LIMIT): it is no trace --netgent-trace "
        f"wrote (a ZIP bomb?); {_REWRITE}"
    )


def _size(n: int) -> str:
    """``256 MiB`` for a whole number of MiB, else the bytes (and MiB when that many)."""
    if n and n % 2**20 == 0:
        return f"{n // 2**20:,} MiB"
    return f"{n:,} bytes ({n / 2**20:,.1f} MiB)" if n >= 2**20 else f"{n:,} bytes"


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
