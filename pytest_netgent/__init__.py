"""pytest-netgent: web-application workflows as pytest items, compiled once, replayed fast.

Workflows are ``*.netgent.yaml`` files of natural-language states; their compiled
automata live in ``__netgent__/`` beside them and replay headless with no LLM.
"""

from __future__ import annotations

from .automaton import Action, Automaton, Check, State
from .engine import RunResult, TimelineEvent
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
from .recorder import RecordReport
from .runner import NetgentBrowser
from .sdk import NetGent, NetGentResult
from .spec import StateSpec, Workflow, workflow_schema
from .synthesis import Context, Synthesiser, Unresolved, Usage
from .synthesis.builtin import BuiltinSynthesiser
from .synthesis.llm import LLMSynthesiser, TieredSynthesiser
from .synthesis.observation import Observation

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
