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
from .recorder import RecordReport
from .runner import NetgentBrowser
from .sdk import NetGent, NetGentResult, StatePrompt
from .spec import StateSpec, Workflow, workflow_schema
from .synthesis import Context, Synthesiser, Unresolved, Usage
from .synthesis.builtin import BuiltinSynthesiser
from .synthesis.llm import LLMSynthesiser, TieredSynthesiser
from .synthesis.observation import Observation

__all__ = [
    "Action",
    "Automaton",
    "BrowserError",
    "BuiltinSynthesiser",
    "CacheError",
    "Check",
    "Context",
    "LLMSynthesiser",
    "NetGent",
    "NetGentResult",
    "NetgentBrowser",
    "NetgentError",
    "Observation",
    "RecordReport",
    "ReplayError",
    "RunResult",
    "SecretError",
    "State",
    "StatePrompt",
    "StateSpec",
    "Synthesiser",
    "TieredSynthesiser",
    "TimelineEvent",
    "Unresolved",
    "Usage",
    "Workflow",
    "WorkflowSpecError",
    "workflow_schema",
]

__version__ = "0.1.0"
