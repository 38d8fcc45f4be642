"""A trigger made of several sentences: "The page is titled 'Shop' and the Cart tab is
selected", "A username field and a password field are shown".

Such a trigger holds when each of its clauses holds; the builtin reads each clause on its
own (:meth:`~.triggers.TriggerReader.read`) only when the sentence as a whole does not
read, and only when every clause reads and is grounded whole, so the checks of all
clauses together stand for every word of the trigger. A clause without a verb of its own
("A username field") shares the last clause's predicate ("are shown" becomes "is shown").
Quoted text is never split ("The page says 'Terms and conditions'").
"""

from __future__ import annotations

import re

from .words import QUOTED

_JOINS = re.compile(r"\s*;\s*|,?\s+and\s+|,\s+but\s+|\s+but\s+", re.I)
_VERB = re.compile(
    r"\b(?:is|are|was|were|has|have|says|say|shows|show|reads|read|lists|list|contains|"
    r"contain|holds|hold|plays|play|displays|display|mentions|mention|ends|starts|begins|"
    r"appears|appear|matches)\b",
    re.I,
)
_PREDICATE = re.compile(
    r"\b(?:is|are)\s+((?:not\s+)?(?:shown|visible|displayed|present|listed|there|"
    r"on the page|on screen|enabled|disabled|checked|unchecked|selected|empty|open|"
    r"expanded|collapsed|pressed|focused))$",
    re.I,
)
_SUBJECT = re.compile(r"(?:a|an|the|its|their|one|some)\s|\0\d+\0(?:\s|$)", re.I)
"""How the subject of a clause that shares its predicate begins: a determiner or a quote."""
MOST_CLAUSES = 4
"""More clauses than this are no conjunction a trigger makes: the sentence is left whole."""


def clauses(text: str) -> list[str] | None:
    """The clauses of ``text`` joined by "and", "but" or ";" (quotes kept whole), each a
    sentence of its own; None when ``text`` is one sentence."""
    kept: list[str] = []

    def keep(m: re.Match[str]) -> str:
        kept.append(m[0])
        return f"\0{len(kept) - 1}\0"

    masked = QUOTED.sub(keep, text.strip())
    parts = [p.strip(" ,") for p in _JOINS.split(masked)]
    if not 2 <= len(parts) <= MOST_CLAUSES or not all(parts):
        return None
    shared = _PREDICATE.search(parts[-1])
    verbless = [i for i, p in enumerate(parts) if not _VERB.search(p)]
    if verbless:
        if shared is None:
            return None  # "Apples and pears": one name, no sentences
        if not all(_SUBJECT.match(p) for p in parts):
            return None  # "The Terms and Conditions link is shown": one name
        predicate = f"is {shared[1]}"
        parts = [f"{p} {predicate}" if i in verbless else p for i, p in enumerate(parts)]
        parts[-1] = parts[-1][: shared.start()] + predicate  # its subject is one of several
    if any(len(p.split()) < 3 for p in parts):
        return None
    return [re.sub(r"\0(\d+)\0", lambda m: kept[int(m[1])], p) for p in parts]
