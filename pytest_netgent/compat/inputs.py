"""What the ``netgent`` command reads: NetGent's state prompts, state repositories and
credentials, each validated, and the exit codes and usage errors of the command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, NoReturn

OK, FAILED, BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """A command-line input cannot be used; the message says which and how to fix it."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors exit with :data:`BAD_INPUT` (2), naming the fault."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(BAD_INPUT, f"netgent: error: {message}\n")


TOO_DEEP = (
    "its JSON is nested deeper than can be read (arrays or objects thousands of levels "
    "deep): no NetGent file is; check that this is the file meant"
)
"""Why a JSON document nested past Python's recursion limit is refused."""


def writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder``, found by making one: the permission bits
    do not say (root passes them; an immutable folder or a read-only mount does not)."""
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".netgent-probe-"):
            return True
    except OSError:
        return False


def read_json(path_text: str, what: str) -> Any:
    """The JSON file ``path_text`` (``what`` names it in errors), or :class:`BadInput`."""
    path = Path(path_text)
    if not path.is_file():
        raise BadInput(f"{what} {path_text}: no such file")
    try:
        return json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise BadInput(
            f"{what} {path_text}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{what} {path_text}: cannot be read: {exc}") from None
    except RecursionError:
        raise BadInput(f"{what} {path_text}: {TOO_DEEP}") from None


def read_credentials(text: str) -> dict[str, str]:
    """Credentials from a JSON file or an inline JSON object: ``{name: value}``."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise BadInput(
                f"CREDENTIALS (inline JSON), column {exc.colno}: invalid JSON: {exc.msg}"
            ) from None
        except RecursionError:
            raise BadInput(f"CREDENTIALS (inline JSON): {TOO_DEEP}") from None
        where = "CREDENTIALS (inline JSON)"
    else:
        data = read_json(text, "CREDENTIALS")
        where = f"CREDENTIALS {text}"
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a JSON object of name: value, got a {kind_of(data)}")
    out: dict[str, str] = {}
    for name, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise BadInput(
                f"{where}: {name!r} is a {kind_of(value)}; each credential must be a string"
            )
        if not name.isidentifier():
            raise BadInput(
                f"{where}: {name!r} cannot be a placeholder name; use letters, digits and _"
            )
        out[name] = str(value)
    return out


def read_repository(path_text: str) -> list[dict[str, Any]]:
    """A NetGent state repository (a JSON list of states) or a pytest-netgent cache
    document, validated."""
    from ..workflow.automaton import parse_automaton

    data = read_json(path_text, "STATES")
    try:
        automaton = parse_automaton(data)
    except ValueError as exc:
        raise BadInput(
            f"STATES {path_text}: {exc} (see the check and action types in "
            "`python -m pytest_netgent schema` and the cache file's reference, "
            "docs/reference/cache.md)"
        ) from None
    if not automaton.states:
        raise BadInput(f"STATES {path_text}: holds no states")
    return [s.model_dump(mode="json", exclude_none=True) for s in automaton.states]


def read_prompts(path_text: str) -> list[Any]:
    """NetGent state prompts: a JSON list (or ``{"state_prompts": [...]}``), validated."""
    from pydantic import ValidationError

    from ..workflow.messages import StatePrompt

    data = read_json(path_text, "PROMPTS")
    if isinstance(data, dict):
        data = data.get("state_prompts", data.get("prompts"))
    if not isinstance(data, list) or not data:
        raise BadInput(
            f"PROMPTS {path_text}: expected a non-empty JSON list of state prompts "
            '({"name", "description", "triggers", "actions", "end_state"})'
        )
    prompts = []
    for index, entry in enumerate(data):
        try:
            prompts.append(StatePrompt.model_validate(entry))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "entry"
            name = entry.get("name", index) if isinstance(entry, dict) else index
            raise BadInput(
                f"PROMPTS {path_text}: state {name!r}: {field}: {err['msg']} "
                "(state prompts have name, description, triggers, actions, end_state)"
            ) from None
    return prompts


def kind_of(value: Any) -> str:
    names = {"dict": "object", "list": "list", "str": "string", "NoneType": "null"}
    return names.get(type(value).__name__, type(value).__name__)
