"""pytest-netgent: web-application workflows as pytest items, compiled once, replayed fast.

Workflows are ``*.netgent.yaml`` files of natural-language states; their compiled
automata live in ``__netgent__/`` beside them and replay headless with no LLM.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .system.version import __version__ as __version__

if TYPE_CHECKING:  # for type checkers and IDEs; at run time names load on first use
    from .compat.sdk import NetGent, NetGentResult
    from .errors import (
        BrowserError,
        CacheError,
        NetgentError,
        ReplayError,
        SecretError,
        WorkflowSpecError,
    )
    from .replay.run import RunResult, TimelineEvent
    from .replay.runner import NetgentBrowser
    from .synthesis import Context, RecordReport, Synthesiser, Unresolved, Usage
    from .synthesis.builtin import BuiltinSynthesiser
    from .synthesis.llm import LLMSynthesiser
    from .synthesis.observation import Observation
    from .synthesis.tiered import TieredSynthesiser
    from .workflow.automaton import Action, Automaton, Check, State
    from .workflow.messages import (
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
    from .workflow.spec import StateSpec, Workflow, workflow_schema

# pytest imports this package to load its plugin on every start: the public names are
# imported on first use (PEP 562), so a pytest run that never touches them pays nothing.
_EXPORTS: dict[str, str] = {
    "Action": ".workflow.automaton",
    "ActionOutput": ".workflow.messages",
    "Automaton": ".workflow.automaton",
    "BrowserError": ".errors",
    "BuiltinSynthesiser": ".synthesis.builtin",
    "CacheError": ".errors",
    "Check": ".workflow.automaton",
    "Context": ".synthesis",
    "Decision": ".workflow.messages",
    "Element": ".workflow.messages",
    "ExecutedState": ".workflow.messages",
    "LLMSynthesiser": ".synthesis.llm",
    "Message": ".workflow.messages",
    "Metadata": ".workflow.messages",
    "NetGent": ".compat.sdk",
    "NetGentResult": ".compat.sdk",
    "NetgentBrowser": ".replay.runner",
    "NetgentError": ".errors",
    "Observation": ".synthesis.observation",
    "RecordReport": ".synthesis",
    "Reflection": ".workflow.messages",
    "ReplayError": ".errors",
    "RunResult": ".replay.run",
    "SecretError": ".errors",
    "State": ".workflow.automaton",
    "StatePrompt": ".workflow.messages",
    "StateSpec": ".workflow.spec",
    "Synthesiser": ".synthesis",
    "TieredSynthesiser": ".synthesis.tiered",
    "TimelineEvent": ".replay.run",
    "Toolcall": ".workflow.messages",
    "Unresolved": ".synthesis",
    "Usage": ".synthesis",
    "Workflow": ".workflow.spec",
    "WorkflowSpecError": ".errors",
    "format_context": ".workflow.messages",
    "format_context_without_reflection": ".workflow.messages",
    "load_context_from_file": ".workflow.messages",
    "save_context_to_file": ".workflow.messages",
    "workflow_schema": ".workflow.spec",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


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
