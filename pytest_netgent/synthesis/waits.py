"""Waits as people write them: "Watch for 10 seconds", "Let it play for a minute", "Stay
in the call 30 s", "Keep watching for half a minute", "Idle for 5s", "wait for ten
seconds".

A wait is read by its kind, never by one site's words: a verb of staying (wait, stay,
remain, idle, linger, hang around...) or of playback (watch, listen, keep watching, let
it play...), and a definite amount of time (digits, or number words up to sixty, "a
minute", "half a minute", "a minute and a half", "1.5 minutes", "1 minute 30 seconds"),
with what is watched or where one stays around them ("the stream", "in the call", "on
the page"). A playback wait on a page with a ``<video>`` or ``<audio>`` first makes it
play (``play_video``, which leaves a video that already plays as it is) and then
waits; on a page without media, and for staying, it is a plain ``wait``.

A wait of no definite amount ("a few seconds", "a while", "5 to 10 seconds", "until the
video ends", "Wait" alone) is declined with :class:`~pytest_netgent.synthesis.Unresolved`,
saying what is missing; words that are no wait ("Watch the 'Intro' video": a video to
open; "Stay signed in": a checkbox; "Pause the video") are left to the other readings.
"""

from __future__ import annotations

import re

from ..workflow.automaton import Action
from . import Unresolved
from .observation import Observation

# ------------------------------------------------------------------------ amounts of time

_UNITS = (
    (r"milliseconds?|millisecs?|msecs?|ms", 0.001),
    (r"seconds?|secs?|s", 1.0),
    (r"minutes?|mins?|m", 60.0),
    (r"hours?|hrs?|h", 3600.0),
)
UNIT = r"(?:" + "|".join(u for u, _ in _UNITS) + r")(?![\w'’])"
"""A unit of time, as written: "ms", "s", "sec", "seconds", "min", "minutes", "h"."""

_ONES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_TEENS = [
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}

NUMBER_WORDS: dict[str, int] = {w: i + 1 for i, w in enumerate(_ONES)}
"""The number words a wait may be written in: one to sixty ("twenty-five", "forty two")."""
NUMBER_WORDS |= {w: i + 10 for i, w in enumerate(_TEENS)}
NUMBER_WORDS |= {**_TENS, "sixty": 60}
NUMBER_WORDS |= {
    f"{tens}{joint}{one}": ten + i + 1
    for tens, ten in _TENS.items()
    for i, one in enumerate(_ONES)
    for joint in "- "
}

_SINGLE = (
    "a",
    "an",
    "one",
    "another",
    "a single",
    "a full",
    "one full",
    "a whole",
    "one whole",
    "a good",
    "the next",
    "one more",
)
"""What counts one of a unit: "a minute", "another minute", "a full minute"."""

_QUALIFIERS = (
    "at least",
    "about",
    "around",
    "roughly",
    "approximately",
    "approx.",
    "approx",
    "exactly",
    "precisely",
    "just",
    "only",
    "another",
    "a further",
    "an additional",
    "an extra",
    "a full",
    "a whole",
    "a good",
    "full",
    "the next",
)
"""Words before a definite amount that leave it one: "another 10 seconds", "about a minute"."""


def _either(words: tuple[str, ...] | dict[str, int]) -> str:
    """An alternation of ``words``, longest first (so "twenty-one" is not read "twenty")."""
    return "|".join(re.escape(w).replace(r"\ ", " ") for w in sorted(words, key=len, reverse=True))


_E = r"(?![\w'’])"  # a word ends here
DIGITS = r"\d+(?:\.\d+)?|\.\d+"
NUMBER = rf"(?:{DIGITS}|(?:{_either(NUMBER_WORDS)}){_E})"
_HALF = r" and a half"
_PART = (
    rf"(?P<half_of>half (?:a|an) (?P<u1>{UNIT}))"  # half a minute
    rf"|(?P<a_half>(?:a|an|one) half[- ](?P<u2>{UNIT}))"  # a half minute, a half-hour
    rf"|(?:(?P<n>{NUMBER})|(?P<one>{_either(_SINGLE)}))(?P<h1>{_HALF})?"
    r"(?: (?:more|additional|extra|further|full|whole))?"
    rf"(?: |(?<=\d))(?P<u3>{UNIT})(?P<h2>{_HALF})?"  # 10 s, 5s, ten more s, a minute and a half
)
PART = re.compile(_PART)
"""One amount of one unit."""
_SEPARATOR = re.compile(r",? and |, | plus | ")
_QUALIFIER = re.compile(rf"(?:{_either(_QUALIFIERS)}) ")
_UNNAMED = re.sub(r"\(\?P<\w+>", "(?:", _PART)
DURATION = (
    rf"(?:(?:{_either(_QUALIFIERS)}) )?(?:{_UNNAMED})(?:(?:{_SEPARATOR.pattern})(?:{_UNNAMED}))*"
)
"""A definite amount of time, as a pattern: parts of units, summed ("1 minute 30 seconds")."""


def seconds_of(amount: str) -> float | None:
    """The seconds ``amount`` (in lower case) says: "ten seconds" 10, "half a minute" 30,
    "a minute and a half" 90, "1 min 30 s" 90; ``None`` when it is no definite amount."""
    if not re.fullmatch(DURATION, amount):
        return None
    total = _sum(amount)
    if total is None and (qualified := _QUALIFIER.match(amount)):
        total = _sum(amount[qualified.end() :])
    return total


def _sum(amount: str) -> float | None:
    total, pos = 0.0, 0
    while pos < len(amount):
        if pos:
            sep = _SEPARATOR.match(amount, pos)
            if sep is None:
                return None
            pos = sep.end()
        m = PART.match(amount, pos)
        if m is None:
            return None
        total += _value(m)
        pos = m.end()
    return total


def _value(m: re.Match[str]) -> float:
    unit = m["u1"] or m["u2"] or m["u3"]
    factor = next(f for pattern, f in _UNITS if re.fullmatch(pattern, unit))
    if m["half_of"] or m["a_half"]:
        return 0.5 * factor
    count = 1.0
    if m["n"]:
        count = float(NUMBER_WORDS[m["n"]] if m["n"] in NUMBER_WORDS else m["n"])
    if m["h1"] or m["h2"]:
        count += 0.5
    return count * factor  # as the builtin has always computed it: float(n) * factor


_VAGUE_COUNT = (
    r"a few|few|several|some|a couple(?: of)?|couple of|many|a number of|a handful of|"
    r"quite a few|a good few|a lot of|lots of|a bunch of"
)
VAGUE = (
    rf"(?:(?:{_either(_QUALIFIERS)}) )?(?:{_VAGUE_COUNT})(?: more)?(?: {UNIT}| moments?)"
    r"|(?:a |another |one |a little |a short |a long |a good |some |little )?"
    r"(?:bit|while|moment|tick|jiffy|time|sec(?:ond)? or two|minute or two)(?: longer| more)?"
    r"|a little(?: longer| more)?|awhile|briefly|shortly|forever|longer"
    rf"|(?:between )?(?:{NUMBER}|a|an)(?: (?:more )?{UNIT})? ?(?:to|or|and|-|–) ?"
    rf"(?:{NUMBER}|a|an)(?: (?:more )?{UNIT})?"
    rf"|(?:more than|less than|over|under|up to|no more than|no less than|at most|almost|"
    rf"nearly|a little over|just over|just under) {DURATION}"
)
"""An amount of time that is no definite one: "a few seconds", "a while", "5 to 10 s"."""
UNTIL = (
    r"(?:until|till|til|unless|as long as|while|so long as) .+"
    r"|(?:to|till|until|through) the (?:very )?end(?: .+)?|(?:the )?(?:whole|entire|full) .+"
)
"""A wait for something to happen: "until the video ends", "the whole video"."""

# ------------------------------------------------------------------------ the verbs

_ARTICLE = r"(?:the|this|that|these|those|a|an|my|our|your|its|his|her|their) "
_QUOTED = r"""['"“‘][^'"“”‘’]+['"”’]"""
_WORD = (
    r"(?!(?:a|an|for|until|till|unless|while|during|and|then|or|another|about|around|at|in|on|"
    rf"of|to|with|inside|within|into|here|there|before|after|the|whole|entire){_E})"
    r"[a-z][\w'’-]*"
)
NOUN = rf"(?:{_ARTICLE})?(?:{_QUOTED}|{_WORD})(?: (?:{_QUOTED}|{_WORD})){{0,3}}"
"""What is watched, or where one stays: "it", "the stream", "the 'Intro' video"."""
PLACE = rf"(?:in|on|at|inside|within|with|into) {NOUN}|here|there"
"""Where one stays: "in the call", "on the page", "here"."""

_PLAYING = r"watching|viewing|listening(?: to)?|playing|streaming"
PLAYBACK = (
    rf"(?:(?:keep|continue|go on|carry on) (?:{_PLAYING})|continue to (?:watch|view|listen|play)"
    r"|(?:stay|wait|sit back|sit) and (?:watch|listen)"
    r"|watch|view|listen|play|stream)"
)
"""Verbs of playback: what is watched or listened to is made to play first."""
_GOING_ON = ("keep", "continue", "go on", "carry on", "stay and", "wait and", "sit")
"""Playback verbs that say a wait even with no amount ("Keep watching"); "Watch the
video" alone may be a click."""
LET_PLAY = r"(?:play|run|roll|stream|go on|continue|keep playing|keep running|play on)"
KEEP_PLAYING = r"(?:playing|running|going|rolling|streaming)"

WAITING = r"(?:wait|keep waiting|continue waiting|continue to wait|wait around)"
"""Verbs that are only ever a wait: whatever follows them, a wait is meant."""
STAYING = (
    r"(?:stay|remain|idle|linger|pause|sleep|rest|stick around|stand by|do nothing|"
    r"keep still|hang (?:around|on|out|tight|about)|sit (?:tight|still|idle|back|there|here)|"
    r"hold (?:on|still|tight))"
)
"""Verbs of staying: a plain wait, whatever the page plays."""
_STAY_HOW = rf"(?:{PLACE}|put|around|still|idle|connected|online|quiet|silent|active)"
_STAY_IS_A_WAIT = r"(?:stay|remain|idle|linger|stick around|stand by|hang around)"
"""Verbs of staying that say a wait even with no amount ("Stay on the page"); "Pause"
or "Sleep" alone may be something else."""
LET_STAY = r"(?:load|settle|sit|rest|idle|finish loading|breathe)"

_LEAD = r"(?:(?:please|now|then|and|just|simply|next|finally|also|so),? )*"
_FOR = r"(?:(?:for|during|over) )?"
_PURPOSE = r"to (?:load|settle|finish|buffer|start|play|run|appear|show|connect|begin)"
_TRAIL = rf"(?: (?:{PLACE}|of {NOUN}|(?:for {NOUN} )?{_PURPOSE}))?"

_READINGS = (
    rf"(?P<wait>{WAITING})(?: {_STAY_HOW})?",
    rf"(?P<stay>{STAYING})(?: {_STAY_HOW})?",
    rf"let (?P<settle>{NOUN}) {LET_STAY}",
    rf"give (?P<give>{NOUN})",
    rf"let (?P<let>{NOUN}) {LET_PLAY}",
    rf"keep (?P<keep>{NOUN}) {KEEP_PLAYING}",
    rf"(?P<play>{PLAYBACK})(?: (?:to )?(?P<what>{NOUN}))?(?: {PLACE})?",
)
VERB = "(?:" + "|".join(_READINGS) + ")"
"""A verb of staying or of playback, with what is watched or where one stays."""

_DEFINITE = re.compile(rf"{_LEAD}{VERB} {_FOR}(?P<amount>{DURATION}){_TRAIL}")
_BARE_DIGITS = re.compile(rf"{_LEAD}wait(?: for)? (?P<n>{DIGITS})")  # "Wait 10": seconds
_NOT_DEFINITE = re.compile(
    rf"{_LEAD}{VERB} {_FOR}(?:(?P<vague>{VAGUE})|(?P<until>{UNTIL})){_TRAIL}"
)
_ANY = re.compile(rf"{_LEAD}{VERB}(?: (?P<rest>.+))?")


def wait_actions(text: str, page: Observation) -> list[Action] | None:
    """The actions of the wait ``text`` says on ``page``: ``play_video`` then ``wait``
    when it speaks of playback and the page has a video or audio element, else ``wait``;
    ``None`` when ``text`` is no wait. Raises :class:`Unresolved` for a wait of no
    definite amount, saying what is missing."""
    said = " ".join(text.split()).rstrip(".!")
    low = said.lower()
    if len(low) != len(said):  # a letter whose lower case is longer: quote it lower-cased
        said = low
    if m := _BARE_DIGITS.fullmatch(low):
        return [Action(type="wait", params={"seconds": float(m["n"])})]
    m = _DEFINITE.fullmatch(low)
    seconds = None if m is None else seconds_of(m["amount"])
    if m is None or seconds is None:
        _declined(said, low)
        return None
    wait = Action(type="wait", params={"seconds": seconds})
    if m["play"] is None and m["let"] is None and m["keep"] is None:
        return [wait]  # staying: whatever the page plays, it is left as it is
    if m["what"] and re.search(_QUOTED, m["what"]):
        what = said[m.start("what") : m.end("what")]
        raise Unresolved(
            f"{said!r} names what to watch ({what}), which a wait does not open: open it "
            f"in a step of its own (\"Click {what}\"), then 'Watch for {m['amount']}'"
        )
    play = _play(page)
    return [wait] if play is None else [play, wait]


def _declined(said: str, low: str) -> None:
    """Raise :class:`Unresolved`, saying what is missing, when ``low`` (``said`` in lower
    case) is a wait of no definite amount of time; return when it is no wait."""
    if m := _NOT_DEFINITE.fullmatch(low):
        if m["until"]:
            why = (
                f"{m['until']!r} waits for something to happen, not for a definite amount of "
                "time: say how long, or make what it waits for the next state's trigger"
            )
        else:
            why = f"{m['vague']!r} is no definite amount of time: say how long"
        raise Unresolved(f"{said!r}: {why}, e.g. 'Wait 10 seconds'")
    m = _ANY.fullmatch(low)
    if m is None:
        return
    rest = m["rest"]
    if m["wait"] and rest:
        first = re.match(rf"{_FOR}(?P<amount>{DURATION}),? (?:(?:and )?then )?(?P<more>.+)", rest)
        if first and seconds_of(first["amount"]) is not None:
            more = said[m.start("rest") + first.start("more") :]
            raise Unresolved(
                f"{said!r}: a wait of {first['amount']}, then {more!r}, which is no part of "
                "a wait: give that a step of its own"
            )
        if re.match(r"(?:for|until|till|on) ", rest):
            why = (
                f"{rest!r} waits for something to happen, not for a definite amount of time: "
                "say how long, or make what it waits for the next state's trigger"
            )
        else:
            why = f"{rest!r} is no definite amount of time: say how long"
        raise Unresolved(f"{said!r}: {why}, e.g. 'Wait 10 seconds'")
    going_on = (m["play"] or "").startswith(_GOING_ON) or m["let"] or m["keep"] or m["settle"]
    staying = m["stay"] and re.fullmatch(_STAY_IS_A_WAIT, m["stay"])
    if not rest and (m["wait"] or going_on or staying):
        raise Unresolved(
            f"{said!r} does not say how long: give a definite amount of time, e.g. "
            "'Wait 10 seconds'"
        )
    # "Watch the 'Intro' video", "Stay signed in", "Pause the video": another reading


def _play(page: Observation) -> Action | None:
    """``play_video`` for the page's player: its one visible ``<video>``, else its one
    media element; ``None`` when it has none, or several of which some already play
    (nothing to start; which one is meant is not for these rules to guess)."""
    if not page.media:
        return None
    videos = [e for e in page.elements if e.tag == "video"]
    if len(videos) == 1:
        css = [s for s in videos[0].selectors if s.by == "css selector"]
        best = next((s for s in css if s.stable), css[0] if css else None)
        if best is not None:
            return Action(type="play_video", params={"selector": best.selector})
    if len(page.media) == 1:
        (media,) = page.media
        selector = f"{media.within} >> {media.tag}" if media.within else media.tag
        return Action(type="play_video", params={"selector": selector})
    if any(not m.paused and not m.ended for m in page.media):
        return None
    raise Unresolved(
        f"{page.url} has {len(page.media)} media elements and none plays: say which to "
        "play (\"Click the 'Play' button\"), then 'Wait 10 seconds'"
    )
