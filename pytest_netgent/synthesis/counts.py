"""Count triggers: "One user is listed", "3 results are shown", "There are 2 rows".

Sites say how many items a list holds in words ("1 user", "3 results", "2 rows
selected"); a count trigger holds where the page says that number of those items. The
check is a ``script`` with a regular expression, so that "1 user" does not hold on a
page saying "11 users".
"""

from __future__ import annotations

import json
import re

from ..workflow.automaton import Check
from .observation import Observation

NUMBERS = {
    "zero": 0, "one": 1, "a single": 1, "two": 2, "three": 3, "four": 4,
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12,
}  # fmt: skip
_NUMBER = r"(\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"
_SHOWN = r"(?:listed|shown|found|displayed|visible|present|returned)"
PATTERNS = [
    rf"(?:only |exactly |just )?{_NUMBER} ([a-z]+) (?:is|are) {_SHOWN}",
    rf"there (?:is|are) (?:only |exactly |just )?{_NUMBER} ([a-z]+)(?: {_SHOWN})?",
    rf"(?:the )?(?:page|list|table) (?:shows|lists|has) (?:only |exactly )?{_NUMBER} ([a-z]+)",
]


class WrongCount(Exception):
    """The page says another number of those items."""


def count_trigger(text: str, page: Observation) -> Check | None:
    """The check for a count trigger, ``None`` when ``text`` is not one or the page
    gives no count of those items (the trigger may name an element: "One user is
    listed"). Raises :class:`WrongCount` when the page gives another count of them."""
    low = text.lower().strip().rstrip(".")
    for pattern in PATTERNS:
        if m := re.fullmatch(pattern, low):
            break
    else:
        return None
    number = int(m[1]) if m[1].isdigit() else NUMBERS[m[1]]
    noun = m[2][:-3] + "y" if m[2].endswith("ies") else re.sub(r"(?:es|s)$", "", m[2])
    if len(noun) < 2:
        return None
    plural = noun[:-1] + "(?:y|ies)" if noun.endswith("y") else re.escape(noun) + "(?:es|s)?"
    said = re.compile(rf"(?<![\w.,])(\d[\d,]*) {plural}\b", re.I)
    counts = {int(n.replace(",", "")) for n in said.findall(page.text)}
    if number not in counts:
        if counts:
            shown = ", ".join(str(n) for n in sorted(counts))
            raise WrongCount(f"the page counts {shown} of '{noun}', not {number}")
        return None
    regex = rf"(?<![\w.,]){number} {plural}\b"
    script = f"new RegExp({json.dumps(regex)}, 'i').test(document.body.innerText)"
    return Check(type="script", params={"script": script})
