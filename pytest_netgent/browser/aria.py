"""The page as its users perceive it: Chromium's own accessibility tree, read over the
DevTools protocol (``Accessibility.getFullAXTree``, one call per frame), as a tree of
:class:`AriaNode` and as a compact, stable text in the manner of Playwright's ARIA
snapshot::

    - heading "Results" [level=1] [ref=e2]
    - textbox "Search" = "QUIC" [focused] [ref=e3]
    - list [ref=e4]:
      - listitem (1 of 2) [ref=e5]:
        - link "First" [ref=e6]
    - slider "Volume" = 50 (0 to 100) [ref=e9]
    - dialog [ref=e12]:
      - text: Are you sure?
      - button "OK" [ref=e13]

Where it comes from: ``aria.js``, in the page, in one round trip. Roles and accessible
names are computed as browsers compute them, by dom-accessibility-api (bundled into
``a11y.js`` by ``tools/vendor_js.py``); states, values and media are read from the DOM.
Chromium's own tree (DevTools ``Accessibility.getFullAXTree``) says the same and is what
the tests hold this against, but it is not fast enough to be the source: on a list of
3,000 results it took 13 to 30 seconds on this project's 2-core machine, where the page
walks its DOM in milliseconds (``bench/page_model.py`` measures both, side by side).

A frame of the page's own site is walked too; a frame of another site runs in a process
of its own that the page's scripts cannot read: it is listed, unread. A password's value
is never read ("(filled)" says that it has one).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from .page import script
from .session import driver_errors

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

MAX_NODES = 5_000
"""The most elements a snapshot reads; a larger page is cut there, and says so."""
MAX_MS = 2_000
"""The longest a snapshot walks the page, in milliseconds; then it is cut there too."""

STATES = (
    "checked",
    "mixed",
    "selected",
    "expanded",
    "collapsed",
    "pressed",
    "disabled",
    "focused",
    "busy",
    "required",
    "readonly",
    "modal",
    "invalid",
)
"""Every state a node may carry, in the order they are written."""

POSITIONED = frozenset(
    {"listitem", "row", "option", "tab", "treeitem", "menuitem", "article", "cell", "gridcell"}
)
"""Roles whose place among their siblings of the same role is part of what they are
("result 2 of 10")."""


@dataclass
class AriaNode:
    """One node of the page as assistive technology sees it."""

    role: str
    name: str = ""
    value: str = ""
    """An input's text, a slider's value (its value text when it has one), a combobox's
    chosen option."""
    description: str = ""
    states: tuple[str, ...] = ()
    level: int = 0
    """A heading's level (1-6), else 0."""
    bounds: tuple[float, float] | None = None
    """A slider's or number field's lowest and highest value."""
    placeholder: str = ""
    media: dict[str, Any] | None = None
    """A video's or audio's ``playing``, ``paused``, ``ended``, ``time`` and ``duration``
    (seconds), ``height`` (pixels), ``buffering`` and ``muted``."""
    position: tuple[int, int] | None = None
    """Its place among its siblings of the same role (1-based) and how many there are."""
    editable: str = ""
    """``plaintext`` or ``richtext`` (a ``contenteditable``) for an element one types in."""
    frame: str = ""
    """The chain of frames it is in (``iframe#player``, as selectors name them), "" for
    the top document."""
    ref: str = ""
    """Its name in this snapshot (``e12``), the same for the whole snapshot."""
    unread: str = ""
    """Why a frame's contents are not here (another site's process), else ""."""
    content: str = ""
    """The element's own text when it is all it holds and not its name (a paragraph's)."""
    children: list[AriaNode] = field(default_factory=list)

    @property
    def text(self) -> bool:
        """Whether this node is text on the page (not an element)."""
        return self.role == "text"

    def walk(self) -> Iterator[AriaNode]:
        """This node and every node under it, in document order."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def line(self) -> str:
        """This node as one line of the snapshot (no indent, no children)."""
        if self.text:
            return f"text: {self.name}"
        parts = [self.role]
        if self.name:
            parts.append(_quoted(self.name))
        if self.value and self.value != self.name:
            number = self.role in ("slider", "spinbutton", "progressbar", "meter")
            parts.append(f"= {self.value if number else _quoted(self.value)}")
        if self.bounds is not None:
            parts.append(f"({_number(self.bounds[0])} to {_number(self.bounds[1])})")
        if self.placeholder:
            parts.append(f"(placeholder {_quoted(self.placeholder)})")
        if self.media is not None:
            parts.append(_media(self.media))
        if self.position is not None:
            parts.append(f"({self.position[0]} of {self.position[1]})")
        if self.level:
            parts.append(f"[level={self.level}]")
        parts.extend(f"[{state}]" for state in self.states)
        if self.editable == "richtext":
            parts.append("[contenteditable]")
        if self.description and self.description != self.name:
            parts.append(f"(description {_quoted(self.description)})")
        if self.unread:
            parts.append(f"(not read: {self.unread})")
        if self.ref:
            parts.append(f"[ref={self.ref}]")
        line = " ".join(parts)
        return f"{line}: {self.content}" if self.content else line


@dataclass
class AriaPage:
    """One snapshot of a page: its tree, and what of it could not be read."""

    root: AriaNode
    cut: int = 0
    """How many elements past :data:`MAX_NODES` (or :data:`MAX_MS`) were left out."""
    blocked: bool = False
    """Whether a dialog of the browser's own (alert, confirm, prompt) blocks the page: then
    it is all the page shows."""

    def nodes(self) -> Iterator[AriaNode]:
        """Every node of the page below its root, in document order."""
        nodes = self.root.walk()
        next(nodes)
        return nodes

    def text(self, budget: int = 0, near: Iterable[str] = ()) -> str:
        """The snapshot as text (see the module), within ``budget`` characters if given:
        the lines that mention a word of ``near`` first, with their ancestors, then the
        rest in document order; what does not fit is counted where it was left out."""
        return render(self, budget, near)


def snapshot(
    driver: WebDriver,
    max_nodes: int = MAX_NODES,
    max_ms: int = MAX_MS,
    refs: Iterable[tuple[int, str, str]] = (),
) -> AriaPage:
    """The page of ``driver`` as its users perceive it (see the module), its frames of
    the same site included; a page between documents gives an empty page. ``refs``
    (number, by, selector) are elements numbered elsewhere: each found is named by its
    number in this snapshot (its ``ref``), every other node by ``e`` and its place."""
    answer = read(driver, max_nodes, max_ms, refs)
    blocked = bool(answer.get("blocked"))
    title = ""
    if answer["nodes"] and not blocked:
        with contextlib.suppress(*driver_errors()):  # a page gone since: no title to give
            title = driver.title
    return from_entries(answer["nodes"], answer["cut"], title, blocked=blocked)


def read(
    driver: WebDriver,
    max_nodes: int = MAX_NODES,
    max_ms: int = MAX_MS,
    refs: Iterable[tuple[int, str, str]] = (),
) -> dict[str, Any]:
    """``aria.js``'s answer for the page of ``driver`` (``nodes``, ``cut``; ``blocked``
    with the text of a dialog of the browser's own that blocks the page)."""
    from selenium.common.exceptions import UnexpectedAlertPresentException

    wanted = [list(r) for r in refs]
    try:
        answer = driver.execute_script(aria_source(), max_nodes, max_ms, wanted)
    except UnexpectedAlertPresentException as exc:  # the browser's own dialog is all there is
        text = " ".join(str(exc.alert_text or "").split())
        return {"nodes": [{"p": -1, "role": "alertdialog", "name": text}], "cut": 0,
                "blocked": True}  # fmt: skip
    except driver_errors():
        return {"nodes": [], "cut": 0}
    return {"nodes": list(answer.get("nodes", [])), "cut": int(answer.get("cut", 0))}


@cache
def aria_source() -> str:
    """``aria.js`` with what it stands on: ``deep.js`` (shadow roots and frames) and
    ``a11y.js`` (accessible names and roles)."""
    return script("deep.js") + script("a11y.js") + script("roles.js") + script("aria.js")


def from_entries(
    entries: list[dict[str, Any]],
    cut: int = 0,
    title: str = "",
    numbered: Iterable[int] | None = None,
    blocked: bool = False,
) -> AriaPage:
    """The page of ``aria.js``'s answer: its nodes, each naming its parent by index.
    With ``numbered``, only the elements of those numbers have a ref (their number): a
    prompt names only what its reader may act on."""
    allowed = None if numbered is None else set(numbered)
    root = AriaNode("RootWebArea", name=title)
    made: list[AriaNode] = []
    for entry in entries:
        bounds = entry.get("bounds")
        node = AriaNode(
            role=str(entry.get("role", "")),
            name=str(entry.get("name", "")),
            value=str(entry.get("value", "")),
            description=str(entry.get("description", "")),
            states=tuple(s for s in STATES if s in entry.get("states", ())),
            level=int(entry.get("level", 0)),
            bounds=(float(bounds[0]), float(bounds[1])) if bounds else None,
            placeholder=str(entry.get("placeholder", "")),
            media=entry.get("media"),
            editable=str(entry.get("editable", "")),
            frame=str(entry.get("frame", "")),
            unread=str(entry.get("unread", "")),
        )
        if node.role == "row" and node.name:
            node.name = ""  # a row is named by its cells, which are listed under it
        parent = int(entry.get("p", -1))
        (made[parent] if 0 <= parent < len(made) else root).children.append(node)
        made.append(node)
    for node in root.walk():
        _merge_text(node)
    _place(root)
    page = AriaPage(root, cut, blocked=blocked)
    for number, (node, entry) in enumerate(zip(made, entries, strict=True), start=1):
        mmid = entry.get("mmid")
        if allowed is not None:
            node.ref = str(mmid) if mmid is not None and mmid in allowed else ""
        elif not node.text:
            node.ref = str(mmid) if mmid is not None else f"e{number}"
    return page


def _merge_text(node: AriaNode) -> None:
    """Text runs of one element in a row become one; an element's only text is written on
    its own line, unless it is its name or value (which say it already)."""
    merged: list[AriaNode] = []
    for child in node.children:
        if child.text and merged and merged[-1].text:
            merged[-1].name = " ".join((merged[-1].name + " " + child.name).split())
        else:
            merged.append(child)
    if len(merged) == 1 and merged[0].text and node.role not in ("RootWebArea", "iframe"):
        if merged[0].name not in (node.name, node.value):
            node.content = merged[0].name
        merged = []
    node.children = merged


def _place(root: AriaNode) -> None:
    """Each positioned node's place among its siblings of its role."""
    for node in root.walk():
        same: dict[str, list[AriaNode]] = {}
        for child in node.children:
            if child.role in POSITIONED:
                same.setdefault(child.role, []).append(child)
        for group in same.values():
            if len(group) > 1:
                for index, child in enumerate(group, start=1):
                    child.position = (index, len(group))


def render(page: AriaPage, budget: int = 0, near: Iterable[str] = ()) -> str:
    """See :meth:`AriaPage.text`."""
    rows = list(_rows(page.root, 0, -1))
    lines = ["  " * depth + "- " + node.line() + (":" if node.children else "")
             for depth, node, _ in rows]  # fmt: skip
    if budget and sum(len(line) + 1 for line in lines) > budget:
        lines = _within(rows, lines, budget, [w.lower() for w in near if w.strip()])
    if page.cut:
        lines.append(f"- ... and {page.cut} elements not read (the page is larger than a snapshot)")
    return "\n".join(lines)


def _rows(node: AriaNode, depth: int, parent: int) -> Iterator[tuple[int, AriaNode, int]]:
    """(depth, node, index of its parent row) for every node under ``node``."""
    stack = [(child, depth, parent) for child in reversed(node.children)]
    index = 0
    while stack:
        child, level, up = stack.pop()
        yield level, child, up
        stack.extend((c, level + 1, index) for c in reversed(child.children))
        index += 1


def _within(
    rows: list[tuple[int, AriaNode, int]], lines: list[str], budget: int, near: list[str]
) -> list[str]:
    """The lines kept within ``budget``: those mentioning ``near`` and their ancestors
    first, then the rest in order; each run left out is one line saying how many."""
    keep: set[int] = set()
    used = 0

    def take(index: int) -> bool:
        nonlocal used
        chain = []
        while index >= 0 and index not in keep:
            chain.append(index)
            index = rows[index][2]
        cost = sum(len(lines[i]) + 1 for i in chain)
        if used + cost > budget:
            return False
        keep.update(chain)
        used += cost
        return True

    for index, line in enumerate(lines):
        if near and any(word in line.lower() for word in near):
            take(index)
    for index in range(len(rows)):
        if index not in keep and not take(index):
            break
    out: list[str] = []
    left = 0
    for index, line in enumerate(lines):
        if index in keep:
            if left:
                out.append("  " * rows[index][0] + f"- ... {left} more")
                left = 0
            out.append(line)
        else:
            left += 1
    if left:
        out.append(f"- ... {left} more")
    return out


def _clean(text: Any) -> str:
    return " ".join(str(text or "").split())


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _media(media: dict[str, Any]) -> str:
    """A video's or audio's state, as a person watching would say it."""
    if media.get("ended"):
        state = "[ended]"
    elif media.get("buffering"):
        state = "[buffering]"
    else:
        state = "[playing]" if media.get("playing") else "[paused]"
    time = f"at {_number(float(media.get('time') or 0))} s"
    if media.get("duration"):
        time += f" of {_number(float(media['duration']))} s"
    height = f", {media['height']}p" if media.get("height") else ""
    return f"{state} ({time}{height})"
