"""Status triggers: "The kernel is idle", "The call is connected".

Applications keep what a thing is doing in an attribute (``data-status="idle"``,
``data-state="connected"``), often on an indicator that shows only an icon. A status
trigger holds where an element whose words (labels, classes, text) name the subject
carries that value; the check is that element with that value, shown or not.
"""

from __future__ import annotations

import re

from ..workflow.automaton import Check
from .observation import Observation
from .words import tokens

NOT_STATES = {
    "shown",
    "visible",
    "displayed",
    "listed",
    "present",
    "open",
    "there",
    "pressed",
    "selected",
    "checked",
    "liked",
    "active",
    "playing",
    "paused",
    "muted",
    "on",
    "off",
}
"""Words other readings take ("is shown", "is pressed", "is playing")."""


class OtherStatus(Exception):
    """The subject's element carries another value."""


def status_trigger(text: str, page: Observation) -> Check | None:
    """The check for "the <subject> is <state>", ``None`` when ``text`` is not one or no
    element's words name the subject. Raises :class:`OtherStatus` when it carries
    another value."""
    m = re.fullmatch(r"(?:the |its |a |an )?(.+?) (?:is|are) (?:now )?([a-z][a-z-]+)", text.lower())
    if not m or m[2] in NOT_STATES:
        return None
    subject = tokens(m[1])
    named = [s for s in page.statuses if subject and subject <= tokens(s.label.replace("-", " "))]
    if not named:
        return None
    holding = [s for s in named if s.value.lower() == m[2]]
    if not holding:
        values = ", ".join(sorted({s.value for s in named}))
        raise OtherStatus(f"the {m[1]} is {values}, not {m[2]}")
    status = holding[0]
    selector = f'{status.selector}[{status.attr}="{status.value}"]'
    return Check(
        type="element", params={"by": "css selector", "selector": selector, "visible": False}
    )
