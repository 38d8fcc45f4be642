"""What each optional feature needs, checked without importing it.

The base install replays and captures; ``pytest-netgent[uc]`` adds SeleniumBase for
``--netgent-uc`` and ``pytest-netgent[llm]`` adds langchain-core for models. Asking for
a feature whose extra is missing is an error that names the install line. A light
module: the plugin checks its options with it on every pytest start.
"""

from __future__ import annotations

import importlib.util

UC_MISSING = (
    "--netgent-uc drives Chromium through SeleniumBase, which is not installed: "
    "pip install 'pytest-netgent[uc]'"
)


class ModelSpecError(ValueError):
    """``--netgent-llm`` names no usable model; the message says how to fix it."""


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (a dotted name's parents
    are imported to look)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or no name at all
        return False


def check_model_spec(spec: str, option: str = "--netgent-llm") -> None:
    """Refuse, without importing anything, a ``spec`` that cannot name a model here:
    a malformed one, or any model without langchain-core installed."""
    spec = spec.strip()
    if spec in ("", "builtin"):
        return
    if ":" not in spec and spec != "local":
        raise ModelSpecError(
            f"{option} {spec!r} is neither 'builtin', 'local', 'module:attr' nor "
            "'provider:model' (e.g. mypackage.models:chat or openai:gpt-4o)"
        )
    if not installed("langchain_core"):
        extra = "local" if spec == "local" or spec.startswith("local:") else "llm"
        raise ModelSpecError(
            f"{option} {spec!r} needs langchain-core, which is not installed: "
            f"pip install 'pytest-netgent[{extra}]' (or use 'builtin', which needs no model)"
        )
