"""NetGent's message models: what its users script with, and what synthesis records.

The models keep NetGent's names and fields (``Element``, ``Toolcall``, ``ActionOutput``,
``Decision``, ``Reflection``, ``Metadata``, ``ExecutedState``, ``StatePrompt``), their
string forms, and the helpers :func:`format_context`,
:func:`format_context_without_reflection`, :func:`save_context_to_file` and
:func:`load_context_from_file`. The LLM synthesiser asks the model for an
:class:`ActionOutput`, the recorder keeps the run's history as a list of messages
(:attr:`NetGentResult.context <pytest_netgent.compat.sdk.NetGentResult.context>`), and the
action prompt shows the actions taken so far through :func:`format_context`.

Messages are pydantic models: build new ones with ``model_copy(update=...)`` rather than
changing them in place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .automaton import ActionType

if TYPE_CHECKING:
    from .spec import StateSpec

ActionName = ActionType
"""Actions the web agent may choose: every action type (NetGent's ``terminate``: the
instruction is complete, nothing more to do)."""


class Message(BaseModel):
    """Base class of every message."""

    model_config = ConfigDict(extra="forbid")


def _lines(tag: str, fields: Iterable[tuple[str, Any]]) -> str:
    body = [f"    {k}: {v}" for k, v in fields if v not in (None, "", {}, [])]
    return "\n".join([f"<{tag}>", *body, f"</{tag}>"])


class Element(Message):
    """A DOM element with its properties."""

    enhanced_css_selector: str | None = None
    css_selector: str | None = None
    aria_label: str | None = None
    accessible_name: str | None = None
    text: str | None = None
    x: float | None = None
    y: float | None = None
    width: float | None = None
    height: float | None = None

    def __str__(self) -> str:
        fields: list[tuple[str, Any]] = [
            ("enhanced css selector", self.enhanced_css_selector),
            ("css selector", self.css_selector if not self.enhanced_css_selector else None),
            ("aria label", self.aria_label),
            ("accessible name", self.accessible_name),
            ("text", self.text),
        ]
        out = _lines("element", fields)
        if self.x is not None and self.y is not None:
            out = out.replace("</element>", f"    x: {self.x:g}, y: {self.y:g}\n</element>")
        return out


class Toolcall(Message):
    """An executed action (tool call), with the element it acted on and any error."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    element: Element | None = None
    error: str | None = None

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        out = f"<toolcall>\n    {self.name}({args})"
        if self.element is not None:
            out += "\n    " + str(self.element).replace("\n", "\n    ")
        if self.error:
            out += f"\n    error: {self.error}"
        return out + "\n</toolcall>"


class ActionOutput(Message):
    """The web agent's structured reply: one action on one numbered element.

    ``done`` (an addition to NetGent's fields) says whether this action completes the
    instruction; ``action="terminate"`` says it was already complete.
    """

    action: ActionName = Field(description="The action to take.")
    mmid: int | None = Field(None, description="Number of the element acted on, if any.")
    params: dict[str, Any] = Field(default_factory=dict, description="Action parameters.")
    reasoning: str = Field(description="Why this action, in one sentence.")
    done: bool = Field(True, description="True when this action completes the instruction.")

    def __str__(self) -> str:
        return _lines(
            "action",
            [
                ("action", self.action),
                ("mmid", self.mmid),
                ("params", json.dumps(self.params) if self.params else None),
                ("reasoning", self.reasoning),
            ],
        )


class Decision(Message):
    """An agent's decision and why."""

    action: str
    reasoning: str

    def __str__(self) -> str:
        return _lines("decision", [("action", self.action), ("reasoning", self.reasoning)])


class Reflection(Message):
    """An agent's reflection on whether its last action worked."""

    is_successful: bool
    reason: str
    next_step: str = ""

    def __str__(self) -> str:
        return _lines(
            "reflection",
            [
                ("successful", "yes" if self.is_successful else "no"),
                ("reason", self.reason),
                ("next step", self.next_step),
            ],
        )


class Metadata(Message):
    """The page at one step: URL, title, numbered elements (``mmid`` → element)."""

    timestamp: int
    elements: dict[int, dict[str, Any]] = Field(default_factory=dict)
    element_description: str = ""
    screenshot: str | None = None
    """Base64 PNG; omitted from :meth:`__str__` and usually from saved contexts."""
    dom: str | None = None
    url: str = ""
    title: str = ""

    def __str__(self) -> str:
        return "\n".join(
            [
                f"<metadata timestep={self.timestamp}>",
                f"    url: {self.url}",
                f"    title: {self.title}",
                *(f"    {line}" for line in self.element_description.splitlines()),
                "</metadata>",
            ]
        )


class ExecutedState(Message):
    """A state that ran: its name, checks and actions, at which step."""

    timestamp: int
    name: str
    description: str = ""
    checks: list[dict[str, Any]] = Field(default_factory=list)
    actions: list[dict[str, Any]] = Field(default_factory=list)

    def __str__(self) -> str:
        checks = "; ".join(f"{c.get('type')} {c.get('params', {})}" for c in self.checks)
        actions = "; ".join(f"{a.get('type')} {a.get('params', {})}" for a in self.actions)
        return _lines(
            "executed-state",
            [
                ("timestep", self.timestamp),
                ("name", self.name),
                ("description", self.description),
                ("checks", checks),
                ("actions", actions),
            ],
        )


class StatePrompt(Message):
    """One natural-language state, as written in NetGent's prompt files."""

    name: str
    description: str = ""
    triggers: list[str] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    end_state: str = ""
    """Empty: the workflow goes on; otherwise why the workflow ends here."""

    def to_spec(self) -> StateSpec:
        """The same state as written in a ``.netgent.yaml`` workflow."""
        from .spec import StateSpec

        return StateSpec.model_validate(
            {
                "name": self.name,
                "description": self.description,
                "triggers": self.triggers,
                "actions": self.actions,
                "end": self.end_state,
            }
        )

    def __str__(self) -> str:
        lines = [f"## State: {self.name}", "", f"- **Description:** {self.description}"]
        lines.append("- **Triggers:**")
        lines += [f"  {i}. {t}" for i, t in enumerate(self.triggers, 1)]
        lines.append("- **Actions:**")
        lines += [f"  {i}. {a}" for i, a in enumerate(self.actions, 1)]
        return "\n".join(lines)


MESSAGE_TYPES: dict[str, type[Message]] = {
    cls.__name__: cls
    for cls in (
        Element,
        Toolcall,
        ActionOutput,
        Decision,
        Reflection,
        Metadata,
        ExecutedState,
        StatePrompt,
    )
}


def format_context(context: Iterable[Message]) -> str:
    """The messages as text for a model, one block each; metadata marks each timestep."""
    return "\n\n".join(str(m) for m in context)


def format_context_without_reflection(context: Iterable[Message]) -> str:
    """:func:`format_context` without the :class:`Reflection` messages."""
    return format_context(m for m in context if not isinstance(m, Reflection))


def save_context_to_file(
    context: Iterable[Message], filename: str | Path, *, screenshots: bool = False
) -> None:
    """Write the messages to a JSON file, each tagged with its ``type``.

    Screenshots are left out unless ``screenshots`` is true (they dominate the size).
    """
    out = []
    for message in context:
        data = message.model_dump(mode="json", exclude_none=True)
        if not screenshots:
            data.pop("screenshot", None)
        out.append({"type": type(message).__name__, **data})
    Path(filename).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n", "utf-8")


def load_context_from_file(filename: str | Path) -> list[Message]:
    """Read messages written by :func:`save_context_to_file` (or by NetGent).

    Each entry's ``type`` names its model; entries without one are recognised by their
    fields. Raises :class:`ValueError` naming the file and entry at fault.
    """
    path = Path(filename)
    try:
        data = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ValueError(f"{path}: JSON nested deeper than can be read") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of messages, got {type(data).__name__}")
    return [_message(path, i, entry) for i, entry in enumerate(data)]


def _message(path: Path, index: int, entry: Any) -> Message:
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: entry {index} is not a JSON object")
    entry = dict(entry)
    kind = entry.pop("type", None)
    if kind in MESSAGE_TYPES:
        candidates = [MESSAGE_TYPES[kind]]
    elif kind is None:
        candidates = [c for c in MESSAGE_TYPES.values() if set(entry) <= set(c.model_fields)]
    else:
        raise ValueError(
            f"{path}: entry {index} has unknown type {kind!r}; "
            f"use one of {', '.join(MESSAGE_TYPES)}"
        )
    errors = []
    for cls in candidates:
        try:
            return cls.model_validate(entry)
        except ValidationError as exc:
            errors.append(f"{cls.__name__}: {exc.errors()[0]['msg']}")
    raise ValueError(
        f"{path}: entry {index} is no message ({'; '.join(errors) or 'unknown fields'})"
    )


__all__ = [
    "ActionName",
    "ActionOutput",
    "Decision",
    "Element",
    "ExecutedState",
    "Message",
    "Metadata",
    "Reflection",
    "StatePrompt",
    "Toolcall",
    "format_context",
    "format_context_without_reflection",
    "load_context_from_file",
    "save_context_to_file",
]
