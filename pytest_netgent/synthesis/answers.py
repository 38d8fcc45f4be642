"""The answer a model may give, built per call from what it may choose.

A loose schema (a free string for the state, any integer for an element) lets a model
answer things that cannot be right: the schema's own titles as values, an element for an
action that needs none, ids nobody listed. Here every call gets a schema whose choices
are the ones on offer: the state names as an enum, the candidate check ids, the element
numbers shown, and per action exactly the parameters it needs (an element where the
action acts on one). The fields carry no descriptions (the prompt explains them): a
small model types a field's description in as its value. A backend that decodes under
a grammar (llama.cpp, vLLM, OpenAI's strict mode) then cannot produce an invalid answer;
any other is validated by the same pydantic model and shown its error.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..workflow.messages import ActionOutput
from ..workflow.spec import PLACEHOLDER, StateSpec
from . import Context
from .elements import element_kind
from .observation import Observation, ObservedElement
from .words import GENERIC_NOUNS, KEY_NAMES, key_name, tokens

REASONING = Field("", max_length=300)

_Seconds = Annotated[float, Field(ge=0, le=60)]

ELEMENT_ACTIONS = ("click", "hover", "scroll_to", "play_video")
"""Agent actions on one element and nothing else."""

KEYS = ("Enter", "Tab", "Escape", "ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight", "Space")
"""Keys the agent may press (``press_key``)."""

_PARAMS: dict[str, dict[str, Any]] = {
    "type": {"text": (str, ...)},
    "select": {"text": (str, ...)},
    "press_key": {"key": (Literal[KEYS], ...)},
    "scroll": {
        "direction": (Literal["down", "up"], "down"),
        "times": (int, Field(1, ge=1, le=20)),
    },
    "navigate": {"url": (str, ...)},
    "set_value": {"value": (float | str, ...)},
    "wait": {"seconds": (_Seconds, ...)},
    "go_back": {},
    "start_video_sampling": {"interval": (float, Field(1.0, gt=0, le=60))},
    "stop_video_sampling": {},
    "start_stats_logging": {"out_path": (str, ...), "interval": (float, Field(1.0, gt=0))},
    "stop_stats_logging": {},
    "remember_tab": {"name": (str, ...)},
    "switch_tab": {"name": (str, ...)},
    "store_current_url": {"name": (str, ...)},
    "open_stored_url": {"name": (str, ...), "tab_name": (str, "")},
    "wait_for_text": {"text": (str, ...)},
    "start_webrtc_tracking": {},
    "collect_webrtc_metrics": {"out_path": (str, ...)},
    "terminate": {},
}
"""Agent actions without an element, and what each needs besides ``type`` and ``select``
(which act on one)."""

AGENT_ACTIONS = (*ELEMENT_ACTIONS, *_PARAMS)
"""Every action the web agent may choose."""

ON_ELEMENT = {*ELEMENT_ACTIONS, "type", "select", "set_value"}
"""Agent actions that act on one element (``mmid``)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def state_answer(names: list[str]) -> type[BaseModel]:
    """Stage 1's answer: one of ``names``."""
    state: Any = (Literal[tuple(names)], ...)  # a type built at run time
    return create_model("StateAnswer", __base__=_Strict, reasoning=(str, REASONING), state=state)


def trigger_answer(ids: list[str], most: int = 4) -> type[BaseModel]:
    """Stage 2's answer: one to ``most`` of the candidate check ``ids``."""
    checks: Any = (list[Literal[tuple(ids)]], Field(min_length=1, max_length=most))  # type: ignore[misc]
    return create_model(
        "TriggerAnswer", __base__=_Strict, reasoning=(str, REASONING), checks=checks
    )


def action_answer(
    targets: dict[str, list[int]],
    actions: tuple[str, ...] = AGENT_ACTIONS,
    texts: list[str] | None = None,
    keys: tuple[str, ...] = (),
) -> type[BaseModel]:
    """Stage 3's answer: one of ``actions``, each with exactly its parameters; an action
    on an element names one of ``targets[action]`` (the fields ``type`` can type into,
    the lists ``select`` can pick from) and is left out where there is none. With
    ``texts`` (the placeholders and quoted words of the instruction), ``type`` types one
    of them; with ``keys`` (the keys it names), ``press_key`` presses one of those."""
    variants: list[type[BaseModel]] = []
    for name in actions:
        fields: dict[str, Any] = {"action": (Literal[name], ...)}
        if name in ON_ELEMENT:
            mmids = targets.get(name, [])
            if not mmids:
                continue
            fields["mmid"] = (Literal[tuple(mmids)], ...)
        fields.update(_PARAMS.get(name, {}))
        if name == "type" and texts:
            fields["text"] = (Literal[tuple(texts)], ...)
        if name == "press_key" and keys:
            fields["key"] = (Literal[keys], ...)
        filled = [t for t in texts or () if PLACEHOLDER.fullmatch(t)]
        if name == "wait" and filled:  # "Wait {seconds} seconds": the item's value
            fields["seconds"] = (_Seconds | Literal[tuple(filled)], ...)
        variants.append(create_model(f"Do_{name}", __base__=_Strict, **fields))
    step: Any = variants[0] if len(variants) == 1 else _union(variants)
    return create_model(
        "ActionAnswer",
        __base__=_Strict,
        reasoning=(str, REASONING),
        step=(step, Field(discriminator="action")),
        done=(bool, True),
    )


def _union(variants: list[type[BaseModel]]) -> Any:
    from typing import Union

    return Union[tuple(variants)]  # noqa: UP007 (built at run time from a list)


def action_output(answer: BaseModel) -> ActionOutput:
    """NetGent's :class:`ActionOutput` for a validated :func:`action_answer`."""
    step = answer.step.model_dump()  # type: ignore[attr-defined]
    action = step.pop("action")
    mmid = step.pop("mmid", None)
    params = {k: v for k, v in step.items() if v not in ("", None)}
    return ActionOutput(
        action=action,
        mmid=mmid,
        params=params,
        reasoning=answer.reasoning,  # type: ignore[attr-defined]
        done=answer.done,  # type: ignore[attr-defined]
    )


def targets(page: Observation) -> dict[str, list[int]]:
    """The elements each agent action may act on: ``type`` the fields that take text,
    ``select`` the lists, comboboxes and menu buttons, ``set_value`` the sliders and
    number fields, ``play_video`` the videos, the others any element."""
    every = [e.mmid for e in page.elements]
    kinds = {e.mmid: element_kind(e) for e in page.elements}
    out = {name: every for name in ON_ELEMENT}
    out["type"] = [m for m in every if kinds[m] == "text"]
    out["select"] = [
        e.mmid for e in page.elements
        if kinds[e.mmid] == "select" or e.role == "menu" or e.attrs.get("aria-haspopup")
        not in (None, "", "false")
    ]  # fmt: skip
    out["set_value"] = [
        e.mmid
        for e in page.elements
        if e.role in ("slider", "spinbutton")
        or (e.tag == "input" and e.attrs.get("type", "").lower() in ("range", "number"))
    ]
    out["play_video"] = [e.mmid for e in page.elements if e.tag == "video"]
    return out


def typed_texts(instruction: str) -> list[str]:
    """What an instruction says to type, when it says: its placeholders (``{query}``)
    and its quoted words; none when it leaves the text to the agent."""
    found = [m.group(0) for m in PLACEHOLDER.finditer(instruction)]
    found += re.findall(r"""["'“‘]([^"'“”‘’]+)["'”’]""", instruction)
    return list(dict.fromkeys(found))


_VERBS: dict[str, tuple[str, ...]] = {
    "click": ("click",),
    "tap": ("click",),
    "press": ("click", "press_key"),
    "hit": ("click", "press_key"),
    "type": ("type",),
    "select": ("select", "click"),
    "choose": ("select", "click"),
    "scroll": ("scroll", "scroll_to"),
    "hover": ("hover",),
    "set": ("set_value", "type"),
    "drag": ("set_value",),
    "slide": ("set_value",),
    "move": ("set_value", "hover"),
    "adjust": ("set_value",),
    "wait": ("wait", "wait_for_text"),
}
"""Leading verbs of an instruction, and the agent actions each may be carried out by (a
custom list is picked by clicks; "press the Like button" is a click). Verbs that also
name goals are not here: "Enter the room", "Fill in the form", "Write the WebRTC
metrics to {out}" (NetGent's ``collect_webrtc_metrics``)."""

_AS_KEYS = {k: k for k in KEYS} | {"Return": "Enter", "Esc": "Escape"}
"""A key as :func:`~.words.key_name` writes it, as the answer's ``press_key`` offers it."""
_CLAUSES = re.compile(r",|;|\band then\b|\bthen\b|\band\b", re.I)


Ranked = tuple[tuple[str, ...], tuple[str, ...]]
"""Actions and keys, likeliest first."""


def instructed(instruction: str) -> Ranked:
    """The agent actions for ``instruction``, likeliest first, and the keys it may press,
    likeliest first. When every clause begins with a verb of its own ("Type {query} and
    press Enter"), those verbs' actions come first (and a key that follows "press" is the
    first key: "Press Enter" is not a click on a product); every other action follows,
    ranked after them, never refused: "Type {body} into the new paragraph" may need a
    click on the paragraph first. An instruction that names a goal ("Log in as {user}")
    leaves the order as it is."""
    return _ranked(*_verbs(instruction))


def suggested(instruction: str) -> str:
    """The actions the instruction's verbs name, as the prompt suggests them."""
    actions, keys = _verbs(instruction)
    if not actions:
        return "(any: the instruction names a goal, not the way)"
    out = ", ".join(a for a in actions if a != "terminate")
    return out + (f" (keys: {', '.join(keys)})" if keys and len(keys) < len(KEYS) else "")


def _ranked(
    actions: tuple[str, ...], keys: tuple[str, ...]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if not actions:
        return AGENT_ACTIONS, ()
    rest = tuple(a for a in AGENT_ACTIONS if a not in actions)
    return (*actions, *rest), (*keys, *(k for k in KEYS if k not in keys))


def _verbs(instruction: str) -> Ranked:
    """The actions and keys the verbs of ``instruction`` name (none: it names a goal)."""
    actions: list[str] = []
    keys: list[str] = []
    unquoted = re.sub(r"""(["“‘]).*?["”’]|'[^']*'(?!\w)""", "it", instruction)
    for clause in _CLAUSES.split(unquoted):
        words = re.findall(r"[\w{}]+", clause.lower())
        if not words:
            continue
        verb = _VERBS.get(words[0])
        if verb is None:
            return (), ()
        # "Press Enter", "Press the Enter key", as the builtin rules read a key
        pressed = re.fullmatch(rf"\w+(?: the)? ({KEY_NAMES})(?: keys?)?", " ".join(words))
        key = _AS_KEYS.get(key_name(pressed[1])) if pressed and "press_key" in verb else None
        if key is not None:
            actions.append("press_key")
            keys.append(key)
        else:
            actions += verb
            keys += [] if "press_key" not in verb else list(KEYS)
    if not actions:
        return (), ()
    return (*dict.fromkeys([*actions, "terminate"]),), (*dict.fromkeys(keys),)


def search_field(element: ObservedElement) -> bool:
    """Whether ``element`` is a site's search box (what is typed there is sent in an
    address: the site's logs, a capture's HAR and pcap keep it)."""
    return (
        element.attrs.get("type", "").lower() == "search"
        or element.role == "searchbox"
        or element.region == "search"
    )


def secret_into_search(ctx: Context, params: dict[str, Any], element: ObservedElement) -> str:
    """Why typing ``params["text"]`` into ``element`` is refused: a secret typed into a
    search box ("" if it is not)."""
    typed = str(params.get("text", ""))
    secret = next((n for n in ctx.secrets if "{" + n + "}" in typed), None)
    if secret is None or not search_field(element):
        return ""
    return (
        f"element {element.mmid} is a search box: {{{secret}}} is a secret, and what is "
        "typed there is sent in the page's address; choose the field the instruction names"
    )


def instruction_answer(
    page: Observation, instruction: str, secrets: Iterable[str] = ()
) -> type[BaseModel]:
    """Stage 3's answer for ``instruction`` on ``page``: the actions it says
    (:func:`instructed`) on the elements the page offers (:func:`targets`), typing what it
    says to type (:func:`typed_texts`). A typing instruction on a page with no field to
    type into may click (a search box that opens once its button is clicked). An
    instruction that types one of ``secrets`` (``{password}``) is offered no search box."""
    offered = targets(page)
    if any("{" + name + "}" in instruction for name in secrets):
        searches = {e.mmid for e in page.elements if search_field(e)}
        offered["type"] = [m for m in offered["type"] if m not in searches]
    actions, keys = instructed(instruction)
    return action_answer(offered, actions, typed_texts(instruction), keys)


def likeliest_first(candidates: list[StateSpec], ctx: Context) -> list[StateSpec]:
    """``candidates`` with the states declared after the last one that ran first (in
    declared order), then the others: a workflow usually moves on, and models favour
    what they read first."""
    if not ctx.history or ctx.history[-1] not in ctx.order:
        return candidates
    last = ctx.order.index(ctx.history[-1])
    position = {name: i for i, name in enumerate(ctx.order)}
    return sorted(candidates, key=lambda s: position.get(s.name, len(ctx.order)) <= last)


def relevant(page: Observation, instruction: str, most: int) -> Observation:
    """``page`` with at most ``most`` elements, likeliest first: those that share the
    most words with ``instruction``, then the rest in page order. A page of hundreds of
    elements would not fit a small model's context and drowns the one the instruction
    names; and models, small ones most, favour what they read first."""
    wanted = tokens(instruction) - GENERIC_NOUNS  # "link" names no element in particular
    ranked = sorted(
        enumerate(page.elements),
        key=lambda pair: (-len(wanted & tokens(pair[1].describe())), pair[0]),
    )
    return page.model_copy(update={"elements": [el for _, el in ranked[:most]]})
