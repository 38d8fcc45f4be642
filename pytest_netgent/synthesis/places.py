"""Where words stand on the page: "The caption under the table says 24 of 24 towns", "the
line below the player reads 'Press play'", "the summary above the results says 20 match".

Such a trigger names the words (the page must show them: a ``text`` check) and a thing
they stand next to, by its kind (a table, a player, a form, a list, a heading, a chart),
perhaps by its name ("the Plants table"). It reads when the page model shows that thing
and the words outside it, after it (``under``, ``below``, ``beneath``, ``after``) or
before it (``above``, ``over``, ``before``) in the page model's order: the order in which
a screen reader reads the page, which is how a page laid out top to bottom draws it.
Replay checks the words and the thing (a ``role`` check, a ``media`` check for a player):
the relation itself is judged where the trigger is read, as nothing in replay could test
it without the page's layout; a place that does not hold declines the reading (a model,
when there is one, decides it), never guesses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..workflow.automaton import Check
from . import Unresolved
from .observation import Observation
from .words import tokens

AFTER = ("under", "below", "beneath", "after", "underneath")
BEFORE = ("above", "over", "before", "atop")

_SENTENCE = re.compile(
    r"(?:the |a |an )?(?P<what>[\w' ]+?) (?P<relation>{}) (?:the |a |an )?(?P<thing>[\w' ]+?) "
    r"(?P<verb>says|reads|shows|displays|states) (?:that )?(?P<said>.+)".format(
        "|".join((*AFTER, *BEFORE))
    ),
    re.I,
)

THINGS: dict[str, tuple[str, ...]] = {
    "table": ("table", "grid", "treegrid"),
    "grid": ("grid", "table", "treegrid"),
    "results": ("table", "grid", "list"),
    "list": ("list", "listbox"),
    "form": ("form",),
    "heading": ("heading",),
    "title": ("heading",),
    "player": ("video", "audio"),
    "video": ("video",),
    "audio": ("audio",),
    "chart": ("img", "figure"),
    "graph": ("img", "figure"),
    "plot": ("img", "figure"),
    "image": ("img", "figure"),
    "picture": ("img", "figure"),
    "map": ("img", "figure", "application"),
    "button": ("button",),
}
"""The kinds of thing a trigger may place its words by, and the roles that are each."""


class NoSuchThing(Unresolved):
    """The page model shows no thing of the kind and name the sentence places its words
    by: the state does not apply to this page (or not yet: a grid drawn after its
    caption)."""


@dataclass(frozen=True)
class Place:
    """One reading of a sentence that places words by a thing."""

    what: str
    """What holds the words ("caption", "line", "summary")."""
    relation: str
    thing: str
    """The thing, as written ("table", "Plants table")."""
    said: str
    """The words, as written (quoted or not)."""


def parse_place(text: str) -> Place | None:
    """The sentence as words placed by a thing, or None when it is not written so."""
    m = _SENTENCE.fullmatch(text.strip())
    if m is None or m["thing"].split()[-1].lower() not in THINGS:
        return None
    return Place(m["what"], m["relation"].lower(), m["thing"], m["said"])


def placed(place: Place, shown: str, page: Observation) -> tuple[Check, set[str]]:
    """The check for the thing ``place`` names, once the page model shows ``shown`` (the
    words, as the page writes them) on that side of it, outside it; and the words the
    place itself stands for (its relation, judged here). :class:`NoSuchThing` when the
    page model holds no such thing (the state does not apply, or not yet),
    :class:`Unresolved` when the words are on the other side of it."""
    entries = page.aria
    noun = place.thing.split()[-1].lower()
    named = tokens(" ".join(place.thing.split()[:-1]))
    things = [
        i
        for i, e in enumerate(entries)
        if e.get("role") in THINGS[noun] and named <= tokens(str(e.get("name", "")))
    ]
    if not things:  # not yet, perhaps (a grid drawn after its caption): the page is read again
        raise NoSuchThing(f"the page model shows no {place.thing} ({' or '.join(THINGS[noun])})")
    holders = [i for i, e in enumerate(entries) if _says(e, shown)]
    after = place.relation in AFTER
    for thing in things:
        for holder in holders:
            outside = thing not in page.around(holder)
            if outside and (holder > thing if after else holder < thing):
                return _check(entries[thing], named), {place.relation}
    side = "after" if after else "before"
    raise Unresolved(f"{shown!r} is not {place.relation} the {place.thing} ({side} it, outside it)")


def _says(entry: dict[str, Any], shown: str) -> bool:
    return any(shown in str(entry.get(key, "")) for key in ("name", "content"))


def _check(entry: dict[str, Any], named: set[str]) -> Check:
    role = str(entry["role"])
    if role in ("video", "audio"):
        return Check(type="media", params={})
    params: dict[str, Any] = {"role": role}
    if named and entry.get("name"):
        params["name"] = entry["name"]
    return Check(type="role", params=params)
