"""The files of an item's capture folder: sizes, ``item.json`` and atomic JSON writes,
and the time window each item owns in a browser's logs."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..system import atomic
from . import FILES


@dataclass
class Window:
    folder: Path
    start: float
    end: float | None = None
    redact: Callable[[str], str] | None = None
    """Takes the item's secrets out of its share of the netlog (URLs, form bodies)."""


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def update_item_file(folder: Path) -> None:
    """Bring ``item.json``'s file list up to date with the folder."""
    path = folder / "item.json"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    document.update(files_of(folder, folder))
    write_json(path, document)


def files_of(folder: Path, root: Path) -> dict[str, str]:
    out = {}
    for kind, name in FILES.items():
        path = folder / name
        exists = path.is_file()
        out[kind] = relative_to(path, root) if exists else ""
        out[f"{kind}_bytes"] = str(path.stat().st_size) if exists else ""
    return out


def iso_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="milliseconds")


def relative_to(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def write_json(path: Path, data: Any) -> None:
    atomic.write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
