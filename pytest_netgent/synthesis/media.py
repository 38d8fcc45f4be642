"""Media triggers: what a player is doing, read from the page's ``<video>`` and ``<audio>``.

"The video is playing", "The player has not started", "The player is paused after
starting", "The video has played 2 seconds", "The volume is on", "The volume control
shows muted": a player's skin draws these states in its own way (a class, an icon, a
label that changes), but every player drives a media element, whose state the page
can read. Each trigger becomes a ``script`` check over the page's media elements (those
in shadow roots and readable frames too), decided first on the observed page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..workflow.automaton import Check
from .observation import Media, Observation

SUBJECT = (
    r"(?:the |a |an |its )?(?:video|player|media|audio|clip|stream|movie|film|song|track|"
    r"music|sound|volume|playback)(?: player| control| element| bar| button)?"
)

LIGHT = "[...document.querySelectorAll('video, audio')]"
"""The media elements of the document itself."""

DEEP = (
    "(function all(r) { const out = [...r.querySelectorAll('video, audio')]; "
    "for (const e of r.querySelectorAll('*')) { if (e.shadowRoot) out.push(...all(e.shadowRoot)); "
    "if (e.contentDocument) out.push(...all(e.contentDocument)); } return out; })(document)"
)
"""The media elements of the document, its open shadow roots and its readable frames."""


@dataclass(frozen=True)
class Condition:
    """One playback state: in the page (``js``, over ``m``) and on an observation."""

    words: str
    js: str
    holds: Callable[[Media], bool]
    every: bool = False
    """All media elements must be in this state (else: at least one)."""


def _played(seconds: float) -> Condition:
    return Condition(
        f"has played {seconds:g} s",
        f"m.currentTime >= {seconds:g}",
        lambda m: m.current_time >= seconds,
    )


PLAYING = Condition("is playing", "!m.paused && !m.ended", lambda m: not m.paused and not m.ended)
NOT_STARTED = Condition(
    "has not started",
    "m.paused && m.played.length === 0",
    lambda m: m.paused and not m.started,
    every=True,
)
PAUSED = Condition(
    "is paused after starting",
    "m.paused && m.played.length > 0",
    lambda m: m.paused and m.started,
)
STOPPED = Condition("is not playing", "m.paused || m.ended", lambda m: m.paused or m.ended, True)
ENDED = Condition("has ended", "m.ended", lambda m: m.ended)
MUTED = Condition("is muted", "m.muted || m.volume === 0", lambda m: m.muted or m.volume == 0)
SOUND = Condition("has sound", "!m.muted && m.volume > 0", lambda m: not m.muted and m.volume > 0)

PREDICATES: list[tuple[str, Callable[[re.Match[str]], Condition]]] = [
    (
        r"(?:is|are) (?:now |still )?(?:playing|running)|plays|(?:has|have) started playing",
        lambda _: PLAYING,
    ),
    (
        r"(?:has|have)(?: not|n't)(?: yet)? (?:started|begun|played|been (?:started|played))"
        r"|(?:is|are) not (?:yet )?started",
        lambda _: NOT_STARTED,
    ),
    (
        r"(?:is|are) (?:now )?paused(?: after (?:starting|playing|it (?:started|played)))?"
        r"|(?:has|have) been paused",
        lambda _: PAUSED,
    ),
    (r"(?:is|are) (?:not playing|stopped)", lambda _: STOPPED),
    (
        r"(?:has|have) (?:ended|finished)|(?:is|are) (?:over|finished)|ended|finished",
        lambda _: ENDED,
    ),
    (
        r"(?:has|have) (?:played|been playing)(?: for)?(?: at least| more than| over)? "
        r"([\d.]+) ?(?:s|secs?|seconds?)",
        lambda m: _played(float(m[1])),
    ),
    (
        r"(?:is|are) (?:muted|silent|off)|shows? (?:as )?muted|(?:has|have) no sound",
        lambda _: MUTED,
    ),
    (r"(?:is|are) (?:on|unmuted|not muted|audible)|(?:has|have) sound", lambda _: SOUND),
]


class NoMedia(Exception):
    """The trigger speaks of media the page does not have, or does not hold on it."""


def media_trigger(text: str, page: Observation) -> Check | None:
    """The ``script`` check for a media trigger ``text``, or ``None`` when ``text`` is not
    about media. Raises :class:`NoMedia` (with the reason) when it does not hold on
    ``page``."""
    low = text.lower().strip().rstrip(".")
    for pattern, make in PREDICATES:
        if m := re.fullmatch(rf"{SUBJECT} (?:{pattern})", low):
            cond = make(m)
            break
    else:
        return None
    if not page.media:
        raise NoMedia(f"{page.url} has no video or audio element")
    states = [_state(x) for x in page.media]
    held = all(map(cond.holds, page.media)) if cond.every else any(map(cond.holds, page.media))
    if not held:
        raise NoMedia(f"no media element {cond.words} on {page.url} ({'; '.join(states)})")
    found = LIGHT if all(not x.within for x in page.media) else DEEP
    test = "every" if cond.every else "some"
    script = f"((v) => v.length > 0 && v.{test}((m) => {cond.js}))({found})"
    return Check(type="script", params={"script": script})


def _state(m: Media) -> str:
    if m.ended:
        now = "ended"
    elif not m.paused:
        now = "playing"
    else:
        now = "paused" if m.started else "not started"
    sound = "muted" if m.muted or m.volume == 0 else "sound on"
    return f"<{m.tag}> {now} at {m.current_time:.1f} s, {sound}"
