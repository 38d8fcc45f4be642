"""Secrets: values read from the environment at run time, never stored or shown."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import SecretError, display_path
from ..system.redaction import Secret

if TYPE_CHECKING:
    from .spec import LoadedWorkflow


def resolve_secrets(
    loaded: LoadedWorkflow, environ: Mapping[str, str] | None = None
) -> dict[str, Secret]:
    """``{secret name: value}`` for every secret of the workflow, each a :class:`Secret`.

    Raises :class:`SecretError` naming the variable, the workflow file and line, and the
    fix, when a variable is unset; the value itself never appears in any message.
    """
    env = os.environ if environ is None else environ
    values: dict[str, Secret] = {}
    missing: list[str] = []
    for name, variable in loaded.workflow.secrets.items():
        value = env.get(variable)
        if value is None or value == "":
            missing.append(f"{name!r} from ${variable}")
        else:
            values[name] = Secret(name, value)
    if missing:
        first = next(iter(loaded.workflow.secrets))
        line = loaded.line_of("secrets", first)
        raise SecretError(
            f"{display_path(loaded.path)}:{line}: secret "
            + ", ".join(missing)
            + " is not set: export "
            "the environment variable before running pytest (its value is typed by the "
            "browser and never stored)"
        )
    return values
