"""NetGent's workflow registry: ``workflows/<id>/manifest.json`` beside its workflow file,
listed by a generated ``workflows/index.json``.

A manifest says what the workflow is (``name``, ``description``, ``version``, ``type``:
``browser`` or ``shell``, ``main``: its workflow file, default ``workflow.json``); the
workflow file is a newer engine's workflow (``specification``, unnamed ``states``,
``parameters``), whose specification marks the parameters that are secrets as
``<secret>name</secret>``. :func:`entries` finds the workflows of a registry folder, of
one workflow's folder or of one file; :func:`registry_fields` gives what the converted
workflow file keeps of each: its description, its parameters as vars (with what the
manifest says of each) or secrets, and the manifest's facts as its ``metadata``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .inputs import BadInput, read_json

MANIFEST = "manifest.json"
INDEX = "index.json"
TYPES = ("browser", "shell")
"""The workflow types a manifest may name."""

SECRET = re.compile(r"<secret>\s*([A-Za-z_]\w*)\s*</secret>")
"""A parameter the specification marks as a secret."""

_SAID = re.compile(r"Parameter '([A-Za-z_]\w*)':\s*(.*?)(?=\s*Parameter '|\Z)", re.S)
"""What a manifest's description says of each parameter: ``Parameter 'url': ...``."""


@dataclass
class Entry:
    """One workflow of a registry: its id (its folder's name), manifest and file."""

    id: str
    file: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``browser`` or ``shell`` (``browser`` when there is no manifest)."""
        return str(self.manifest.get("type", "browser"))


def is_registry(path: Path) -> bool:
    """Whether ``path`` is a registry folder, one workflow's folder (with its manifest),
    or a workflow file beside its manifest."""
    folder = path if path.is_dir() else path.parent
    if (folder / MANIFEST).is_file():
        return True
    if not path.is_dir():
        return False
    return any(_roots(path))


def _roots(path: Path) -> list[Path]:
    """The folders holding the registry's workflow folders (each with its manifest):
    ``path`` or its ``workflows``; their ``index.json``, where there is one, orders them."""
    return [root for root in (path, path / "workflows") if any(root.glob(f"*/{MANIFEST}"))]


def entries(path: Path) -> list[Entry]:
    """The workflows ``path`` holds: a registry (in ``index.json``'s order, else its
    folders' order), one workflow's folder, or one workflow file."""
    if path.is_file():
        manifest = _manifest(path.parent / MANIFEST) if (path.parent / MANIFEST).is_file() else {}
        return [Entry(path.parent.name, path, manifest)]
    if (path / MANIFEST).is_file():
        return [_entry(path)]
    found: list[Entry] = []
    for root in _roots(path):
        index = root / INDEX
        if index.is_file():
            found.extend(_entry(root / i, index) for i in _listed(index))
        else:
            found.extend(_entry(m.parent) for m in sorted(root.glob(f"*/{MANIFEST}")))
    if not found:
        raise BadInput(
            f"{path}: no NetGent workflow here: a registry has workflows/<id>/{MANIFEST} "
            "beside each workflow file (and workflows/index.json)"
        )
    return found


def _listed(index: Path) -> list[str]:
    data = read_json(str(index), "INDEX")
    if not isinstance(data, list) or not all(isinstance(e, dict) and "id" in e for e in data):
        raise BadInput(
            f"{index}: expected the registry's list of workflows, each with its 'id' (as "
            "NetGent's generate_workflow_index.py writes it): regenerate it, or remove it "
            "to convert every folder with a manifest.json"
        )
    return [str(e["id"]) for e in data]


def _entry(folder: Path, index: Path | None = None) -> Entry:
    manifest_file = folder / MANIFEST
    if not manifest_file.is_file():
        listed = f" listed in {index}" if index else ""
        raise BadInput(
            f"{manifest_file}: no such file: the workflow {folder.name!r}{listed} has no "
            "manifest: add it, or regenerate the index"
        )
    manifest = _manifest(manifest_file)
    main = folder / str(manifest.get("main", "workflow.json"))
    if not main.is_file():
        raise BadInput(
            f"{manifest_file}: main: {main.name!r} is not in {folder}: name the workflow file "
            "there (default workflow.json)"
        )
    return Entry(folder.name, main, manifest)


def _manifest(path: Path) -> dict[str, Any]:
    data = read_json(str(path), "MANIFEST")
    if not isinstance(data, dict):
        raise BadInput(f"{path}: a manifest is a JSON object (name, description, version...)")
    for key in ("name", "description", "version", "main"):
        if key in data and not isinstance(data[key], str):
            raise BadInput(f"{path}: {key}: expected text, got {json.dumps(data[key])}")
    kind = data.get("type", "browser")
    if kind not in TYPES:
        raise BadInput(
            f"{path}: type: {json.dumps(kind)} is not a workflow type this converts: write "
            f"{' or '.join(TYPES)}"
        )
    return data


def registry_fields(entry: Entry, data: dict[str, Any], used: list[str]) -> dict[str, Any]:
    """What the converted workflow file says of ``entry`` beyond its states: its
    description, its metadata, and its parameters (``used``: the placeholders its states
    use) as ``vars`` or, where the specification says so, ``secrets``."""
    manifest = entry.manifest
    spec = " ".join(str(data.get("specification", "")).split())
    fields: dict[str, Any] = {}
    description = str(manifest.get("description") or spec)
    if description:
        fields["description"] = description
    metadata = {"netgent_id": entry.id, "netgent_type": entry.kind}
    for key in ("name", "version"):
        if manifest.get(key):
            metadata[f"netgent_{key}"] = manifest[key]
    if spec and spec != description:
        metadata["netgent_specification"] = spec
    fields["metadata"] = metadata
    listed = data.get("parameters")
    names = [str(p) for p in listed] if isinstance(listed, list) else []
    names += [n for n in used if n not in names]
    secret = set(SECRET.findall(str(data.get("specification", ""))))
    if secrets := {n: f"NETGENT_{n.upper()}" for n in names if n in secret}:
        fields["secrets"] = secrets
    if values := [n for n in names if n not in secret]:
        fields["vars"] = {n: None for n in values}  # each to be given, as NetGent asks
    return fields


def parameter_notes(entry: Entry) -> dict[str, str]:
    """What the manifest's description says of each parameter."""
    text = str(entry.manifest.get("description", ""))
    return {name: " ".join(said.split()) for name, said in _SAID.findall(text)}
