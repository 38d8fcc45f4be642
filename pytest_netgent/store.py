"""The on-disk cache of compiled automata, beside the workflow files.

``<dir>/__netgent__/<file stem>/<workflow name>.json`` holds one workflow's states. Reads
never modify a file; writes are atomic (temporary file + ``os.replace``) under a file lock
so that concurrent xdist workers never lose each other's writes. An unreadable file is
reported and never overwritten.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from filelock import FileLock

from .automaton import Automaton, State, parse_automaton
from .errors import CacheError
from .spec import Workflow

CACHE_DIR = "__netgent__"


def file_stem(workflow_file: Path) -> str:
    """``wiki.netgent.yaml`` -> ``wiki``."""
    name = workflow_file.name
    for suffix in (".netgent.yaml", ".netgent.yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return workflow_file.stem


def safe_name(name: str) -> str:
    """A workflow name made safe as a file name (path separators and controls replaced)."""
    return re.sub(r"[\\/\x00-\x1f:*?\"<>|]", "_", name).strip(" .") or "_"


def cache_path(workflow_file: Path, workflow_name: str) -> Path:
    """Where the automaton of ``workflow_name`` from ``workflow_file`` lives."""
    return (
        workflow_file.parent
        / CACHE_DIR
        / file_stem(workflow_file)
        / f"{safe_name(workflow_name)}.json"
    )


def load(path: Path) -> Automaton | None:
    """Read a cache document; ``None`` if there is none.

    Raises :class:`CacheError` naming the file and the parse error if it is unreadable.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise CacheError(path, f"cannot read the cached states: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CacheError(
            path,
            f"corrupt cached states: {exc.msg} at line {exc.lineno} column {exc.colno}",
            heal="fix the JSON by hand (e.g. resolve a merge conflict) or delete the file "
            "and re-record it; it is never overwritten while unreadable",
        ) from None
    try:
        return parse_automaton(data)
    except ValueError as exc:
        raise CacheError(
            path,
            f"invalid cached states: {exc}",
            heal="fix the file by hand or delete it and re-record it",
        ) from None


def write(path: Path, automaton: Automaton) -> None:
    """Write ``automaton`` to ``path`` atomically, under the file's lock.

    Refuses (with :class:`CacheError`) to replace an existing file that is unreadable, so
    a hand edit or merge conflict is never lost.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if path.exists():
            load(path)  # raises on an unreadable file: never overwrite it
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(automaton.to_json())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def replay_states(
    workflow: Workflow, automaton: Automaton | None, path: Path, heal: str
) -> list[State]:
    """The states to replay for ``workflow``, in declared order.

    A document without ``prompt_hash`` is trusted as it is. Otherwise every workflow state
    must be cached with an up-to-date hash; the states that are missing or stale are named
    in the :class:`CacheError`. ``end`` and ``repeat`` always come from the workflow file.
    """
    if automaton is None:
        raise CacheError(path, "no cached states for this workflow", heal=heal)
    if automaton.trusted:
        return list(automaton.states)
    missing: list[str] = []
    stale: list[str] = []
    states: list[State] = []
    for spec in workflow.states:
        cached = automaton.state(spec.name)
        if cached is None:
            missing.append(spec.name)
            continue
        if cached.prompt_hash and cached.prompt_hash != spec.prompt_hash():
            stale.append(spec.name)
            continue
        states.append(
            cached.model_copy(update={"end_state": spec.end, "repeat": spec.engine_repeat})
        )
    if missing or stale:
        parts = []
        if missing:
            parts.append("not cached: " + ", ".join(repr(n) for n in missing))
        if stale:
            parts.append("edited since recorded (stale): " + ", ".join(repr(n) for n in stale))
        raise CacheError(path, "states " + "; ".join(parts), heal=heal)
    return states
