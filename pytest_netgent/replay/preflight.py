"""The cached states' own faults, looked for in the browser before a run starts.

Some parameters are wrong whatever the page shows: a selector the browser cannot parse
(CSS or XPath), a url or title ``pattern`` that is no regular expression, a script check
that does not compile, a key no keyboard has. A state with one would only ever time out
or fail as if the site had changed (UI drift, with a heal command that heals nothing).
They are looked for once, in one round trip to the browser, before the first step, and
fail the item as a fault of the cache file: its state, its check or action, what the
browser said, and the fix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..browser.chain import links
from ..browser.keyboard import key_chord
from ..browser.session import driver_errors
from ..errors import CacheError
from ..workflow.automaton import CSS_ONLY, State
from .run import substitute

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..system.redaction import Redactor

_PARSE = """
const [items] = arguments;
return items.map(([kind, text]) => {
  try {
    if (kind === "css") document.createDocumentFragment().querySelectorAll(text);
    else if (kind === "xpath") document.createExpression(text, null);
    else if (kind === "pattern") new RegExp(text);
    else new Function("return (" + text + "\\n);");  // as checks.js compiles a script check
    return "";
  } catch (e) {
    const refused = e && (e.name === "SyntaxError" || e.name === "NamespaceError");
    return refused ? String(e.message || e) : "";
  }
});
"""
"""For each ``[kind, text]`` (``css``, ``xpath``, ``pattern``, ``script``), why the
browser cannot parse it, or ``""``. Only parsing: nothing is looked up or run (a script
that cannot be compiled here, under a page's CSP, counts as fine)."""


@dataclass(frozen=True)
class _Part:
    """One parameter the browser is asked to parse."""

    where: str
    """``state 'Home': check 1 (element)``."""
    what: str
    """``its selector '//div[' (by xpath)``, as the cache file has it."""
    kind: str
    text: str
    """What the browser parses: the value with its placeholders filled."""


_PARSED: set[tuple[str, str]] = set()
"""The ``(kind, text)`` this process's browser parsed already: a workflow's next items
(``--count``, parameters, the next run) ask only for what is new."""

GIVEN = Path("<states>")
"""What a report names as the source of states passed to a run (not read from a file)."""


def heal_fix(heal: str, source: Path) -> str:
    """How to mend a state from ``source`` that no page can make work; ``heal`` records
    the workflow again."""
    if source == GIVEN:
        return "correct that state where it is made, before it is passed to run()"
    return (
        "correct it in the file by hand, or delete that state from the file and record it "
        f"again: {heal}"
    )


def vet(
    driver: WebDriver,
    states: list[State],
    values: Mapping[str, Any],
    redact: Redactor,
    source: Path,
    heal: str,
) -> None:
    """Raise :class:`CacheError` for ``source`` (the cache file ``states`` came from) at
    the first parameter of ``states`` no page could make work; ``values`` fill the
    placeholders as the run will, ``heal`` is the command that records the workflow."""
    fix = heal_fix(heal, source)
    if (key := next(_bad_keys(states, values), None)) is not None:
        where, why = key
        raise CacheError(source, f"invalid cached states: {where}: {redact(why)}", heal=fix)
    parts = [p for p in _parts(states, values) if (p.kind, p.text) not in _PARSED]
    if not parts:  # every item after the first of a workflow: no round trip
        return
    try:
        answers = driver.execute_script(_PARSE, [[p.kind, p.text] for p in parts])
    except driver_errors():  # a page that cannot run it (or a dead browser): the run tells
        return
    if not isinstance(answers, list) or len(answers) != len(parts):
        return
    for part, why in zip(parts, answers, strict=True):
        if not why:
            _PARSED.add((part.kind, part.text))
        else:
            raise CacheError(
                source,
                f"invalid cached states: {part.where}: the browser cannot parse {part.what}: "
                f"{redact(str(why))}",
                heal=fix,
            )


def _parts(states: list[State], values: Mapping[str, Any]) -> Iterator[_Part]:
    """Every selector, pattern and script check of ``states``."""
    for state in states:
        for number, check in enumerate(state.checks, 1):
            where = f"state {state.name!r}: check {number} ({check.type})"
            p, filled = check.params, substitute(check.params, values)
            if check.type == "element":
                yield from _selector(where, p["by"], p["selector"], filled["selector"])
            elif check.type in ("url", "title") and p.get("match") == "pattern":
                text = p[check.type]
                yield _Part(where, f"its pattern {text!r}", "pattern", str(filled[check.type]))
            elif check.type == "script":
                yield _Part(where, "its script", "script", str(filled["script"]))
            elif check.type == "role":
                for name, how in (("name", "match"), ("value", "value_match")):
                    if p.get(how) == "pattern" and name in p:
                        what = f"its {name} pattern {p[name]!r}"
                        yield _Part(where, what, "pattern", str(filled[name]))
            elif check.type == "media" and "selector" in p:
                yield from _selector(where, "css selector", p["selector"], filled["selector"])
        for number, action in enumerate(state.actions, 1):
            where = f"state {state.name!r}: action {number} ({action.type})"
            p, filled = action.params, substitute(action.params, values)
            if "selector" in p:
                by = "css selector" if action.type in CSS_ONLY else p.get("by", "css selector")
                yield from _selector(where, by, p["selector"], filled["selector"])
            others = p.get("alternatives", [])
            for other, done in zip(others, filled.get("alternatives", []), strict=False):
                yield from _selector(where, other["by"], other["selector"], done["selector"])


def _selector(where: str, by: str, selector: Any, filled: Any) -> Iterator[_Part]:
    """The links of a (chained) selector the browser parses: those before the last are
    CSS, the last one is ``by`` (the others are escaped, or plain text)."""
    chain = links(str(filled))
    kinds = ["css"] * (len(chain) - 1)
    kinds.append({"xpath": "xpath", "css selector": "css", "tag name": "css"}.get(by, ""))
    what = f"its selector {selector!r} (by {by})"
    for kind, link in zip(kinds, chain, strict=True):
        if kind:
            yield _Part(where, what, kind, link)


def _bad_keys(states: list[State], values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``press_key`` actions whose key no keyboard has: where, and why."""
    for state in states:
        for number, action in enumerate(state.actions, 1):
            if action.type != "press_key":
                continue
            key = str(substitute(action.params["key"], values))
            try:
                key_chord(key)
            except ValueError as exc:
                yield f"state {state.name!r}: action {number} (press_key)", str(exc)
