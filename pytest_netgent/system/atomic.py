"""Files written whole or not at all: the one way this package replaces a file.

The content goes to a temporary file beside the target, which then replaces it in one
``os.replace``: a reader (another worker, an editor, a dataset tool) sees the old file or
the new one, never half of one, and a failure leaves the old file as it was. A file that
ends a dataset (``manifest.csv``, ``labels.csv``, ``flows.csv``, a merged pcap) is also
made durable: its data, then its folder entry, are flushed to disk (``fsync``), so a
power cut after the run leaves the new file or the old one, not an empty one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, cast, overload


@overload
def replacing(
    path: Path, mode: Literal["w"] = "w", *, durable: bool = False
) -> contextlib.AbstractContextManager[IO[str]]: ...
@overload
def replacing(
    path: Path, mode: Literal["wb"], *, durable: bool = False
) -> contextlib.AbstractContextManager[IO[bytes]]: ...
def replacing(
    path: Path, mode: Literal["w", "wb"] = "w", *, durable: bool = False
) -> contextlib.AbstractContextManager[IO[str]] | contextlib.AbstractContextManager[IO[bytes]]:
    """Open a new version of ``path`` for writing (text: UTF-8, ``newline=""`` as the
    ``csv`` module wants; or ``"wb"``) that replaces ``path`` when the block ends without
    an error; with ``durable``, flushed to disk first. On an error the old file stays and
    the temporary one is removed. Created ``0666`` less the umask, as any file the user
    makes (``mkstemp`` would give ``0600``)."""
    return cast("contextlib.AbstractContextManager[Any]", _replacing(path, mode, durable))


@contextlib.contextmanager
def _replacing(path: Path, mode: str, durable: bool) -> Iterator[IO[str] | IO[bytes]]:
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if mode == "wb":
            fh: IO[str] | IO[bytes] = os.fdopen(fd, "wb")
        else:
            fh = os.fdopen(fd, "w", encoding="utf-8", newline="")
        with fh:
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:  # the old file stays, then raised as it came
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Flush ``folder``'s entries (the rename) to disk; a file system that cannot sync a
    folder (some network and FUSE mounts refuse) has nothing more to give."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_text(path: Path, text: str, *, durable: bool = False) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically (see :func:`replacing`)."""
    with replacing(path, durable=durable) as fh:
        fh.write(text)
