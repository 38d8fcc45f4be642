"""Secrets: values read from the environment at run time, never stored or shown."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..errors import NetgentError, SecretError, display_path
from ..system.redaction import Secret, revealed

if TYPE_CHECKING:
    from .automaton import State
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


ENV_ACTIONS = ("set_env_value", "type_env", "click_text_env")
"""Actions that use an environment variable's value (NetGent's), named by ``env_var``."""


def env_values(
    states: Iterable[State], environ: Mapping[str, str] | None = None
) -> dict[str, Secret]:
    """``{"$NAME": value}`` for every environment variable that an action of ``states``
    uses (``set_env_value``, ``type_env``, ``click_text_env``) and that is set: read
    before the run so that, like a secret, the value is kept out of every report, log
    and capture. One
    that is unset fails the action that needs it, naming its state."""
    env = os.environ if environ is None else environ
    values: dict[str, Secret] = {}
    for state in states:
        for action in state.actions:
            if action.type in ENV_ACTIONS:
                name = str(action.params.get("env_var", ""))
                if env.get(name):
                    values[f"${name}"] = Secret(f"${name}", env[name])
    return values


def env_of(secrets: Mapping[str, str | Secret]) -> dict[str, str]:
    """The environment values among ``secrets`` (:func:`env_values`), by variable name."""
    return {name[1:]: revealed(v) for name, v in secrets.items() if name.startswith("$")}


def cached_env_values(loaded: LoadedWorkflow) -> dict[str, Secret]:
    """:func:`env_values` of the states cached for ``loaded``'s workflow (none when it
    has no readable cache yet): what its reports must keep out before any run."""
    from .store import cache_path, load

    try:
        automaton = load(cache_path(loaded.path, loaded.workflow.name))
    except (NetgentError, OSError):
        return {}  # an unreadable cache fails the item on its own
    return env_values(automaton.states) if automaton is not None else {}
