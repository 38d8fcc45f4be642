"""Answers a person gave where synthesis could not decide: the studio's picks.

When record declines an instruction (its target is ambiguous, or nothing on the page
matches it), or recognises the page as no state, the run leaves a *step file*
(``pick.json``) in the item's artifacts folder: the state and the instruction (or the
states the page may be), why it was declined, every element synthesis saw (with its
selectors and box), the scored candidates, and a screenshot beside it (``pick.png``;
none for a run that types secrets). ``netgent studio pick.json`` shows it; the element
the user picks becomes a :class:`Pick` in the workflow's *picks file* (beside its cache
file, ``NAME.picks.json``).

The next ``--netgent-record`` run of the workflow answers that instruction with the
pick (:class:`~.picked.PickedSynthesiser`, ahead of the builtin rules or a model); a
state picked by one of its elements is taken where that element shows, with the element
as its trigger. It acts on the live page, replays the states it made to the end, and
only then writes the cache, as for any synthesised state. The picks file is removed once
the cache holds them; a pick that does not work is named in the run's failure and the
cache is left untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import NetgentError
from ..system import atomic
from . import Unresolved
from .observation import Observation, ObservedElement, Selector
from .words import KEY_NAMES, key_name

STEP_FILE = "pick.json"
"""The step file a declined instruction leaves in its item's artifacts folder."""

PICTURE = "pick.png"
"""The page as synthesis saw it, beside the step file."""

VERSION = 1
"""Version of the step and picks files' formats."""

PickAction = Literal["click", "type", "select", "hover", "scroll_to", "press_key"]
PICK_ACTIONS: tuple[str, ...] = get_args(PickAction)
"""What a picked element may be used for; ``type``, ``select`` and ``press_key`` take
a text (the text typed, the option, the key)."""

LEGACY = frozenset({"picks", "command", "rootdir"})
"""Fields of step files older releases wrote, no longer written: such a file still loads,
its ``command`` is never run, and ``picks`` and ``rootdir`` are only checked to be that
workflow's picks file and the suite folder the file lies in (``netgent studio``)."""

T = TypeVar("T", bound=BaseModel)

TEXT_ACTIONS = {"type": "text", "select": "text", "press_key": "key"}
"""Actions that need a text, and the parameter it goes into."""


class PickError(NetgentError):
    """A step or picks file that cannot be used."""


class Candidate(BaseModel):
    """An element synthesis considered for the instruction, with its score."""

    mmid: int
    score: float


StepKind = Literal["action", "triggers"]


class Step(BaseModel):
    """What record declined, as the studio shows it (``pick.json``): an instruction
    (``action``), or the page, recognised as no state (``triggers``)."""

    model_config = ConfigDict(extra="forbid")

    version: int = VERSION
    kind: StepKind = "action"
    workflow: str
    state: str
    number: int
    """The instruction's place among its state's actions, from 1 (0: triggers)."""
    instruction: str
    reason: str
    states: list[str] = Field(default_factory=list)
    """For ``triggers``: the states the page may be (the user says which)."""
    action: str = "click"
    """What the instruction asks for, as far as its words tell (the studio's default)."""
    text: str = ""
    """The text it types, the option it selects or the key it presses, if it says."""
    url: str = ""
    viewport: tuple[int, int] = (0, 0)
    elements: list[ObservedElement] = Field(default_factory=list)
    candidates: list[Candidate] = Field(default_factory=list)
    picture: bool = False
    """Whether ``pick.png`` was taken (never for a run that types secrets)."""
    workflow_file: str = ""
    """The workflow's file, relative to the suite folder (pytest's rootdir). The studio
    records ``WORKFLOW_FILE::ITEM`` in the suite the step file lies in, and writes the
    pick into that workflow's picks file: a step file never says what runs, or where."""
    item: str = ""
    """The item that records the instruction again, as pytest names it in its file
    (``login``, ``login[alice]``); "" for the workflow's name."""
    base_url: str = ""
    """The run's ``--netgent-base-url`` ("" when the suite gives its base URL itself).
    The studio records against it only when it is on this machine (127.0.0.0/8,
    ``localhost``, ``[::1]``): another site, which the recording browser and the secrets
    it types would go to, only when the user names it (``netgent studio --base-url``)."""
    picks: str = ""
    """Written by older releases (the picks file's path, see :data:`LEGACY`)."""
    command: list[str] = Field(default_factory=list)
    """Written by older releases, never read (see :data:`LEGACY`)."""
    rootdir: str = ""
    """Written by older releases (see :data:`LEGACY`)."""


@dataclass
class Declined:
    """What record could not decide: instruction ``number`` of ``state``, the reason
    and the page it looked at."""

    state: str
    number: int
    instruction: str
    error: Unresolved
    page: Observation | None
    states: list[str] = field(default_factory=list)
    """When no state was recognised (``state`` is ""): the states it may be."""

    def step(
        self,
        workflow: str,
        viewport: tuple[int, int],
        *,
        picture: bool,
        workflow_file: str,
        item: str,
        base_url: str,
        redact: Callable[[str], str],
    ) -> Step:
        """The step file's content (see :class:`Step` for ``workflow_file``, ``item`` and
        ``base_url``); every text passes through ``redact`` (secrets)."""
        page = self.page
        action, text = guess(self.instruction) if self.state else ("click", "")
        step = Step(
            kind="action" if self.state else "triggers",
            states=self.states,
            workflow=workflow,
            state=self.state,
            number=self.number,
            instruction=self.instruction,
            reason=self.error.reason,
            action=action,
            text=text,
            url=page.url if page else "",
            viewport=viewport,
            elements=page.elements if page else [],
            candidates=[Candidate(score=s, mmid=m) for s, m in self.error.candidates],
            picture=picture,
            workflow_file=workflow_file,
            item=item,
            base_url=base_url,
        )
        return Step.model_validate_json(redact(step.model_dump_json()))


class Pick(BaseModel):
    """A person's answer to one instruction (act on this element), or to a page no
    state recognised (it is ``state``, shown by this element)."""

    model_config = ConfigDict(extra="forbid")

    kind: StepKind = "action"
    state: str
    instruction: str
    action: PickAction = "click"
    text: str = ""
    selectors: list[Selector] = Field(min_length=1)
    """The picked element's unique selectors when it was picked, most stable first."""
    description: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        """What this pick answers."""
        return (self.kind, self.state, " ".join(self.instruction.split()))


class Picks(BaseModel):
    """A workflow's picks file."""

    model_config = ConfigDict(extra="forbid")

    version: int = VERSION
    picks: list[Pick] = Field(default_factory=list)

    def get(self, state: str, instruction: str) -> Pick | None:
        """The pick answering ``instruction`` of ``state``, if any."""
        key = ("action", state, " ".join(instruction.split()))
        return next((p for p in self.picks if p.key == key), None)

    def states(self) -> list[Pick]:
        """The picks that say which state a page is."""
        return [p for p in self.picks if p.kind == "triggers"]

    def put(self, pick: Pick) -> None:
        """Add ``pick``, replacing one for the same instruction."""
        self.picks = [p for p in self.picks if p.key != pick.key] + [pick]


def picks_path(cache_file: Path) -> Path:
    """The picks file of the workflow cached at ``cache_file``."""
    return cache_file.with_name(f"{cache_file.stem}.picks.json")


def read_step(path: Path) -> Step:
    """The step file at ``path``; :class:`PickError` naming what is wrong."""
    return _read(path, Step, "a step file (pick.json) that a declined --netgent-record left")


def read_picks(path: Path) -> Picks | None:
    """The picks file at ``path``, ``None`` if there is none."""
    if not path.exists():
        return None
    return _read(path, Picks, "a picks file that netgent studio wrote")


def _read(path: Path, model: type[T], what: str) -> T:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PickError(f"{path}: cannot be read ({exc}); expected {what}") from None
    try:
        doc = model.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the document"
        raise PickError(
            f"{path}: not {what} ({where}: {first['msg']}); record the item again "
            "(pytest --netgent-record) to get a new one"
        ) from None
    if getattr(doc, "version", VERSION) > VERSION:
        raise PickError(f"{path}: written by a newer pytest-netgent; upgrade to read it")
    return doc


def write_picks(path: Path, picks: Picks) -> None:
    """Replace the picks file at ``path`` (removed when it holds none)."""
    if not picks.picks:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, picks.model_dump_json(indent=2) + "\n")


def guess(instruction: str) -> tuple[str, str]:
    """The action ``instruction``'s words ask for and its text, e.g. ``("type", "QUIC")``
    for "Type 'QUIC' into the search box"; ``("click", "")`` when they do not say."""
    text = instruction.strip()
    quoted = re.search(r"'([^']*)'|\"([^\"]*)\"", text)
    value = next((g for g in quoted.groups() if g is not None), "") if quoted else ""
    low = text.lower()
    if re.match(r"(type|enter|input|fill in|write)\b", low):
        return "type", value
    if re.match(r"(select|choose|pick)\b.+\b(from|in)\b", low):
        return "select", value
    if re.match(r"(hover|mouse)\b", low):
        return "hover", ""
    if re.match(r"scroll to\b", low):
        return "scroll_to", ""
    if m := re.fullmatch(rf"press(?: the)? ({KEY_NAMES})(?: keys?)?(?: in .+)?", low):
        return "press_key", key_name(m[1])
    return "click", ""


def element_pick(step: Step, mmid: int, action: str, text: str, state: str = "") -> Pick:
    """The pick of element ``mmid`` of ``step`` for ``action`` (with ``text``), or for
    a ``triggers`` step, as what shows ``state``; :class:`PickError` when it cannot be
    one."""
    el: ObservedElement | None = next((e for e in step.elements if e.mmid == mmid), None)
    if el is None:
        raise PickError(f"element {mmid} is not one of the step's elements")
    if not el.selectors:
        raise PickError(f"{el.describe()} has no unique selector: pick another element")
    if step.kind == "triggers":
        if state not in step.states:
            raise PickError(f"say which state the page is (one of: {', '.join(step.states)})")
        return Pick(
            kind="triggers",
            state=state,
            instruction="",
            selectors=el.selectors,
            description=el.describe(),
        )
    if action not in PICK_ACTIONS:
        raise PickError(f"{action!r} is not an action a pick may take ({', '.join(PICK_ACTIONS)})")
    if action in TEXT_ACTIONS and not text:
        raise PickError(f"{action} needs a text ({TEXT_ACTIONS[action]})")
    return Pick.model_validate(
        {
            "state": step.state,
            "instruction": step.instruction,
            "action": action,
            "text": text if action in TEXT_ACTIONS else "",
            "selectors": [s.model_dump() for s in el.selectors],
            "description": el.describe(),
        }
    )
