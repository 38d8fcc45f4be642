"""pytest-netgent: web-application workflows as pytest items, compiled once, replayed fast.

Workflows are ``*.netgent.yaml`` files of natural-language states; their compiled
automata live in ``__netgent__/`` beside them and replay headless with no LLM.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers and IDEs; at run time names load on first use
    from .automaton import Action, Automaton, Check, State
    from .errors import (
        BrowserError,
        CacheError,
        NetgentError,
        ReplayError,
        SecretError,
        WorkflowSpecError,
    )
    from .messages import (
        ActionOutput,
        Decision,
        Element,
        ExecutedState,
        Message,
        Metadata,
        Reflection,
        StatePrompt,
        Toolcall,
        format_context,
        format_context_without_reflection,
        load_context_from_file,
        save_context_to_file,
    )
    from .run import RunResult, TimelineEvent
    from .runner import NetgentBrowser
    from .sdk import NetGent, NetGentResult
    from .spec import StateSpec, Workflow, workflow_schema
    from .synthesis import Context, RecordReport, Synthesiser, Unresolved, Usage
    from .synthesis.builtin import BuiltinSynthesiser
    from .synthesis.llm import LLMSynthesiser, TieredSynthesiser
    from .synthesis.observation import Observation

# pytest imports this package to load its plugin on every start: the public names are
# imported on first use (PEP 562), so a pytest run that never touches them pays nothing.
_EXPORTS: dict[str, str] = {
    "Action": ".automaton",
    "ActionOutput": ".messages",
    "Automaton": ".automaton",
    "BrowserError": ".errors",
    "BuiltinSynthesiser": ".synthesis.builtin",
    "CacheError": ".errors",
    "Check": ".automaton",
    "Context": ".synthesis",
    "Decision": ".messages",
    "Element": ".messages",
    "ExecutedState": ".messages",
    "LLMSynthesiser": ".synthesis.llm",
    "Message": ".messages",
    "Metadata": ".messages",
    "NetGent": ".sdk",
    "NetGentResult": ".sdk",
    "NetgentBrowser": ".runner",
    "NetgentError": ".errors",
    "Observation": ".synthesis.observation",
    "RecordReport": ".synthesis",
    "Reflection": ".messages",
    "ReplayError": ".errors",
    "RunResult": ".run",
    "SecretError": ".errors",
    "State": ".automaton",
    "StatePrompt": ".messages",
    "StateSpec": ".spec",
    "Synthesiser": ".synthesis",
    "TieredSynthesiser": ".synthesis.llm",
    "TimelineEvent": ".run",
    "Toolcall": ".messages",
    "Unresolved": ".synthesis",
    "Usage": ".synthesis",
    "Workflow": ".spec",
    "WorkflowSpecError": ".errors",
    "format_context": ".messages",
    "format_context_without_reflection": ".messages",
    "load_context_from_file": ".messages",
    "save_context_to_file": ".messages",
    "workflow_schema": ".spec",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "Action",
    "ActionOutput",
    "Automaton",
    "BrowserError",
    "BuiltinSynthesiser",
    "CacheError",
    "Check",
    "Context",
    "Decision",
    "Element",
    "ExecutedState",
    "LLMSynthesiser",
    "Message",
    "Metadata",
    "NetGent",
    "NetGentResult",
    "NetgentBrowser",
    "NetgentError",
    "Observation",
    "RecordReport",
    "Reflection",
    "ReplayError",
    "RunResult",
    "SecretError",
    "State",
    "StatePrompt",
    "StateSpec",
    "Synthesiser",
    "TieredSynthesiser",
    "TimelineEvent",
    "Toolcall",
    "Unresolved",
    "Usage",
    "Workflow",
    "WorkflowSpecError",
    "format_context",
    "format_context_without_reflection",
    "load_context_from_file",
    "save_context_to_file",
    "workflow_schema",
]

__version__ = "0.1.0"
