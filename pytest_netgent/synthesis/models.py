"""Finding the chat model named by ``--netgent-llm``.

``builtin`` (the default) uses no model. ``module:attr`` imports a ``BaseChatModel``
instance or a factory returning one; ``provider:model`` (``openai:gpt-4o``) goes through
``langchain.chat_models.init_chat_model`` when the ``langchain`` package is installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..extras import ModelSpecError, check_model_spec

__all__ = ["ModelSpecError", "load_model"]

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def load_model(spec: str, option: str = "--netgent-llm") -> BaseChatModel | None:
    """The chat model ``spec`` names; ``None`` for ``builtin`` or an empty spec.

    ``option`` names where the spec came from, in error messages."""
    check_model_spec(spec, option)
    spec = spec.strip()
    if spec in ("", "builtin"):
        return None
    module_name, attr = spec.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        module = None
    if module is not None:
        return _from_module(spec, module, attr, option)
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise ModelSpecError(
            f"{option} {spec!r}: no module {module_name!r}, and 'provider:model' names "
            "need the langchain package: pip install langchain (plus the provider's package, "
            f"e.g. langchain-{module_name if module_name.isidentifier() else 'openai'})"
        ) from None
    try:
        model: BaseChatModel = init_chat_model(spec)
    except Exception as exc:
        raise ModelSpecError(f"{option} {spec!r}: {exc}") from None
    return model


def _from_module(spec: str, module: Any, attr: str, option: str) -> BaseChatModel:
    from langchain_core.language_models import BaseChatModel

    try:
        value = getattr(module, attr)
    except AttributeError:
        raise ModelSpecError(
            f"{option} {spec!r}: module {module.__name__!r} has no {attr!r}"
        ) from None
    if not isinstance(value, BaseChatModel) and callable(value):
        value = value()
    if not isinstance(value, BaseChatModel):
        raise ModelSpecError(
            f"{option} {spec!r} is a {type(value).__name__}, not a langchain-core "
            "BaseChatModel (or a factory returning one)"
        )
    return value
