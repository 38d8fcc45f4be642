"""Files written whole or not at all: the one way this package replaces a file.

The text goes to a temporary file beside the target, which then replaces it in one
``os.replace``: a reader (another worker, an editor) sees the old file or the new one,
never half of one, and a failure leaves the old file as it was.
"""

from __future__ import annotations

import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically; created ``0666`` less the
    umask, as any file the user makes (``mkstemp`` would give ``0600``)."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
