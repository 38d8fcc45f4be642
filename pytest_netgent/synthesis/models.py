"""Finding the chat model named by ``--netgent-llm``.

``builtin`` (the default) uses no model. ``local`` runs a small open model on this
machine (:mod:`.local`; ``local:PATH`` another GGUF file). ``module:attr`` imports a
``BaseChatModel`` instance or a factory returning one; ``provider:model``
(``openai:gpt-4o``) goes through ``langchain.chat_models.init_chat_model`` when the
``langchain`` package is installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..system.extras import ModelSpecError, check_model_spec, installed
from .local import is_local, local_model

__all__ = ["ModelSpecError", "load_model"]

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


def load_model(spec: str, option: str = "--netgent-llm") -> BaseChatModel | None:
    """The chat model ``spec`` names; ``None`` for ``builtin`` or an empty spec.

    ``module:attr`` when the module imports and has that attribute (a ``BaseChatModel``,
    or a factory taking no arguments that returns one); anything else is LangChain's
    ``provider:model`` (``openai:gpt-4o`` names a model even where a module ``openai``
    is installed, since it has no attribute ``gpt-4o``). ``option`` names where the spec
    came from, in error messages; every fault is a :class:`ModelSpecError`."""
    check_model_spec(spec, option)
    spec = spec.strip()
    if spec in ("", "builtin"):
        return None
    if is_local(spec):
        return local_model(spec, option)
    module_name, attr = spec.split(":", 1)
    module = _module(module_name, spec, option) if attr.isidentifier() else None
    if module is not None and hasattr(module, attr):
        return _from_module(spec, module, attr, option)
    missing = ""
    if module is not None:
        missing = f"module {module_name!r} has no {attr!r}"
    elif not attr.isidentifier() and installed(module_name):
        missing = f"{attr!r} is a model's name, not an attribute of module {module_name!r}"
    return _provider_model(spec, module_name, missing, option)


def _module(name: str, spec: str, option: str) -> Any:
    """The module ``name``, or None where there is none of that name."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
    except Exception as exc:  # a module that exists but fails as it loads
        raise ModelSpecError(
            f"{option} {spec!r}: importing module {name!r} failed: {type(exc).__name__}: {exc}"
        ) from None


def _provider_model(spec: str, provider: str, missing: str, option: str) -> BaseChatModel:
    """``provider:model`` through LangChain's ``init_chat_model``."""
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        why = missing or f"no module {provider!r}"
        raise ModelSpecError(
            f"{option} {spec!r}: {why}, and 'provider:model' names need the langchain "
            "package: pip install langchain (plus the provider's package, e.g. "
            f"langchain-{provider if provider.isidentifier() else 'openai'})"
        ) from None
    try:
        model: BaseChatModel = init_chat_model(spec)
    except Exception as exc:  # any provider's own error, shown with the spec
        also = f" ({missing})" if missing else ""
        said = " ".join(str(exc).split())  # one line, however the provider wraps it
        raise ModelSpecError(f"{option} {spec!r}{also}: {said}") from None
    return model


def _from_module(spec: str, module: Any, attr: str, option: str) -> BaseChatModel:
    from langchain_core.language_models import BaseChatModel

    value = getattr(module, attr)
    if not isinstance(value, BaseChatModel) and callable(value):
        try:
            value = value()
        except Exception as exc:  # not a factory of no arguments, or one that failed
            raise ModelSpecError(
                f"{option} {spec!r}: calling {module.__name__}.{attr}() to make the model "
                f"failed ({type(exc).__name__}: {exc}): name a langchain-core BaseChatModel, "
                "or a function that takes no arguments and returns one"
            ) from None
        if not isinstance(value, BaseChatModel):
            raise ModelSpecError(
                f"{option} {spec!r}: {module.__name__}.{attr}() returned a "
                f"{type(value).__name__}, not a langchain-core BaseChatModel"
            )
    if not isinstance(value, BaseChatModel):
        raise ModelSpecError(
            f"{option} {spec!r} is a {type(value).__name__}, not a langchain-core "
            "BaseChatModel (or a factory returning one)"
        )
    return value
