"""The on-disk cache of compiled automata, beside the workflow files.

``<dir>/__netgent__/<file stem>/<workflow name>.json`` holds one workflow's states. Reads
never modify a file; writes are atomic (temporary file + ``os.replace``) under a file lock
so that concurrent xdist workers never lose each other's writes. An unreadable file is
reported and never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
from pathlib import Path

from filelock import FileLock

from ..errors import CacheError
from ..system import atomic
from .automaton import Automaton, State, parse_automaton
from .spec import Workflow

CACHE_DIR = "__netgent__"


def file_stem(workflow_file: Path) -> str:
    """``wiki.netgent.yaml`` -> ``wiki``."""
    name = workflow_file.name
    for suffix in (".netgent.yaml", ".netgent.yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return workflow_file.stem


MAX_NAME = 200
"""Longest file name (in UTF-8 bytes, before ``.json``) a cache file gets; file systems
allow 255."""


def safe_name(name: str) -> str:
    """A workflow name made safe as a file name (path separators and controls replaced);
    a long one is cut and given a short hash of the whole, so two names stay apart."""
    safe = re.sub(r"[\\/\x00-\x1f:*?\"<>|]", "_", name).strip(" .") or "_"
    if len(safe.encode()) <= MAX_NAME:
        return safe
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    cut = safe.encode()[: MAX_NAME - 13].decode("utf-8", "ignore").rstrip(" .")
    return f"{cut}-{digest}"


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
    except RecursionError:
        raise CacheError(
            path,
            "corrupt cached states: JSON nested deeper than can be read",
            heal="delete the file and re-record it; it is never overwritten while unreadable",
        ) from None
    try:
        return parse_automaton(data)
    except ValueError as exc:
        raise CacheError(
            path,
            f"invalid cached states: {exc}",
            heal="fix the file by hand or delete it and re-record it",
        ) from None


def _lock(path: Path) -> FileLock:
    """The lock of one cache file. It lives in the system's temporary folder, keyed by the
    file's absolute path, so that no lock file is left in the committed ``__netgent__``."""
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    # this user's own folder: in a shared temporary folder, a lock file another user had
    # linked elsewhere would be opened (and truncated) by the lock
    folder = Path(tempfile.gettempdir()) / f"pytest-netgent-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid():
        raise CacheError(
            path,
            f"the lock folder {folder} is not this user's own folder",
            heal=f"remove {folder} (it is made again), then run again",
        )
    return FileLock(str(folder / f"{key}.lock"))


def _refuse_links(path: Path) -> None:
    """The cache is written only inside the suite's own ``__netgent__`` folder: a symbolic
    link on the way (the file, its workflow's folder, ``__netgent__``) could lead anywhere."""
    for part in (path, path.parent, path.parent.parent):
        if part.is_symlink():
            raise CacheError(
                path,
                f"{part} is a symbolic link; the cache is written only inside the suite's "
                "own __netgent__ folder",
                heal="replace the link by a real folder (or file), then record again",
            )


def write(
    path: Path,
    automaton: Automaton,
    changed: set[str] | None = None,
    order: list[str] | None = None,
) -> None:
    """Write ``automaton`` to ``path`` atomically, under the file's lock.

    With ``changed`` (the names of the states this run synthesised), the file is read
    again under the lock and only those states are replaced: every other state stays as
    the file has it now, so concurrent workers and hand edits made meanwhile are kept.
    ``order`` is the workflow's declared order of states (default: ``automaton``'s).
    Refuses (with :class:`CacheError`) to replace an existing file that is unreadable, so
    a hand edit or merge conflict is never lost.
    """
    _refuse_links(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _lock(path):
            current = load(path)  # raises on an unreadable file: never overwrite it
            if current is not None and changed is not None:
                names = order or [state.name for state in automaton.states]
                automaton = _merge(automaton, current, changed, names)
            atomic.write_text(path, automaton.to_json())
    except OSError as exc:
        raise CacheError(
            path,
            f"cannot write the cached states: {exc.strerror or exc}",
            heal=f"make {path.parent} writable (or point the suite elsewhere), then record again",
        ) from None


def _merge(new: Automaton, current: Automaton, changed: set[str], order: list[str]) -> Automaton:
    """``new``'s states where this run changed them, the file's own everywhere else (also
    the states another worker added since this run read the file), in ``order``."""
    states = []
    for name in order:
        mine, theirs = new.state(name), current.state(name)
        chosen = mine if (name in changed or theirs is None) else theirs
        if chosen is not None:
            states.append(chosen)
    return new.model_copy(update={"states": states})


def cached_states(
    workflow: Workflow, automaton: Automaton | None, *, strict: bool = False
) -> tuple[list[State], list[str], list[str]]:
    """Sort ``workflow``'s states by what the cache holds for them: the usable cached
    states in declared order, the names not cached, and the names edited since recorded.

    A document without ``prompt_hash`` (trusted) is usable as it is. In one with hashes a
    state is usable when its hash matches; a state without a hash is usable too unless
    ``strict`` (record mode, which re-synthesises it). ``end`` and ``repeat`` always come
    from the workflow file.
    """
    if automaton is None:
        return [], [spec.name for spec in workflow.states], []
    if automaton.trusted:
        return list(automaton.states), [], []
    states: list[State] = []
    missing: list[str] = []
    stale: list[str] = []
    for spec in workflow.states:
        cached = automaton.state(spec.name)
        if cached is None:
            missing.append(spec.name)
        elif cached.prompt_hash != spec.prompt_hash() and (strict or cached.prompt_hash):
            stale.append(spec.name)
        else:
            states.append(
                cached.model_copy(update={"end_state": spec.end, "repeat": spec.engine_repeat})
            )
    return states, missing, stale


def replay_states(
    workflow: Workflow, automaton: Automaton | None, path: Path, heal: str
) -> list[State]:
    """The states to replay for ``workflow``, in declared order (see :func:`cached_states`).

    Every workflow state must be cached with an up-to-date hash; the states that are missing
    or stale are named in the :class:`CacheError`.
    """
    if automaton is None:
        raise CacheError(path, "no cached states for this workflow", heal=heal)
    states, missing, stale = cached_states(workflow, automaton)
    if missing or stale:
        parts = []
        if missing:
            parts.append("not cached: " + ", ".join(repr(n) for n in missing))
        if stale:
            parts.append("edited since recorded (stale): " + ", ".join(repr(n) for n in stale))
        raise CacheError(path, "states " + "; ".join(parts), heal=heal)
    return states
