"""Reading the builtin synthesiser's sentences: words and their stems, quoted text,
targets ("the first result", "the 'Sign in' button"), placeholders, key names, and the
video sampling and stats logging sentences."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, quote_plus

from ..workflow.automaton import Action, Check
from ..workflow.spec import PLACEHOLDER
from . import Context

ORDINALS = {
    "first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3,
    "4th": 3, "fifth": 4, "5th": 4, "sixth": 5, "seventh": 6, "eighth": 7, "ninth": 8,
    "tenth": 9, "last": -1,
}  # fmt: skip

ROLE_WORDS = {
    "button": "button", "btn": "button", "link": "link", "field": "text", "box": "text",
    "input": "text", "textbox": "text", "textarea": "text", "menu": "select",
    "dropdown": "select", "selector": "select", "picker": "select", "checkbox": "checkbox",
    "tab": "tab", "heading": "heading", "title": "heading", "header": "heading",
    "form": "form", "icon": "button", "editor": "text",
}  # fmt: skip

# Words that mean the same on real sites; the first of each set is canonical.
SYNONYMS = [
    ("login", "log in", "sign in", "signin", "log on", "logon"),
    ("logout", "log out", "sign out", "signout"),
    ("search", "find", "finder", "look up", "lookup"),
    ("like", "favourite", "favorite", "heart"),
    ("username", "user name", "login name", "user id"),
    ("password", "passcode", "pass word"),
    ("submit", "send", "go"),
    ("result", "hit", "match"),
    ("next", "more", "forward"),
    ("previous", "prev"),
    ("article", "page", "entry"),
    ("welcome", "hello", "greeting"),
]
STOP = {"the", "a", "an", "on", "of", "to", "in", "into", "for", "with", "this", "that", "your"}

SHOWN = "(?:shown|visible|displayed|listed|present|open|there)"

GENERIC_NOUNS = {"item", "entry", "one", "link", "element", "option", "thing", "row"}

TEXT_INPUT_TYPES = {"", "text", "search", "email", "password", "url", "tel", "number"}


def canon(text: str) -> str:
    """Lower-case words, each reduced to its Snowball English stem, with synonyms folded:
    "Signed in" and "sign-in" both read ``login``, "Searching" reads ``search``."""
    return " ".join(_canon(text))


def tokens(text: str) -> set[str]:
    """The meaningful words of ``text``: :func:`canon`'s, less the stop words."""
    stop = _folding()[1]
    return {t for t in _canon(text) if t not in stop}


def stem(word: str) -> str:
    """The Snowball English stem of a lower-case word; a word with digits, braces or
    underscores (``720p``, ``{query}``) is a name, kept as written."""
    return _stem(word) if word.isalpha() else word


# Page text is canonised once per target the synthesiser resolves, and the same words
# recur across pages, so stems and whole texts are memoised.
@functools.lru_cache(maxsize=16384)
def _stem(word: str) -> str:
    # The module itself, not the package's stemmer() factory, which hands back PyStemmer's
    # C stemmer when that is installed; its own Snowball release could stem differently.
    from snowballstemmer.english_stemmer import EnglishStemmer  # type: ignore[import-untyped]

    # a stemmer keeps the word it works on in itself: one per word, so threads never
    # share one (a cache miss is rare; construction costs a third of a stem)
    return str(EnglishStemmer().stemWord(word))


def _words(text: str) -> list[str]:
    return [stem(w) for w in re.sub(r"[^a-z0-9{}_]+", " ", text.lower()).split()]


@functools.lru_cache(maxsize=1)
def _folding() -> tuple[list[tuple[re.Pattern[str], str]], frozenset[str]]:
    """SYNONYMS and STOP in stemmed form, so a synonym written in any inflection folds
    ("Signed in", "entries") and a stop word is known whatever its stem."""
    groups = []
    for group in SYNONYMS:
        canonical, *members = (" ".join(_words(m)) for m in group)
        longest = sorted(set(members) - {canonical}, key=lambda m: (-len(m), m))
        # whole words only; the spaces around a member are looked at, not taken, so
        # "hits hits" folds twice
        alternatives = "|".join(re.escape(m) for m in longest)
        groups.append((re.compile(rf"(?<![^ ])(?:{alternatives})(?![^ ])"), canonical))
    return groups, frozenset(stem(w) for w in STOP)


@functools.lru_cache(maxsize=4096)
def _canon(text: str) -> tuple[str, ...]:
    joined = " ".join(_words(text))
    for members, canonical in _folding()[0]:  # in order: "log in name" -> "login name" -> …
        joined = members.sub(canonical, joined)
    return tuple(joined.split())


def unquote(text: str) -> tuple[str, bool]:
    """``'Sign in'`` -> (``Sign in``, True); other text unchanged."""
    text = text.strip().rstrip(".")
    match = re.fullmatch(r"""["'“‘](.+)["'”’]""", text)
    return (match.group(1), True) if match else (text, False)


@dataclass
class Target:
    """A parsed reference to an element: "the first 'Sign in' button"."""

    phrase: str
    quoted: bool = False
    role: str = ""
    ordinal: int | None = None
    owner: str = ""
    """What the element belongs to, in "the first row's View link" (``row``): the
    ordinal counts the elements named, in page order."""
    container: str = ""
    """Where it is, in "the 'Docs' link in the navigation" (``navigation``)."""

    @property
    def role_only(self) -> bool:
        """The target names only a kind of element ("the editor", "the field")."""
        return self.phrase.lower() in ROLE_WORDS


QUOTED = re.compile(r"""(?:(?<=\s)|^)(?:'[^']+'|"[^"]+"|“[^”]+”|‘[^’]+’)(?=[\s.,;:]|$)""")
"""A quoted name (an apostrophe inside a word, as in "row's", opens none)."""


def _masked(text: str) -> str:
    """``text`` with its quoted names blanked out, the same length."""
    return QUOTED.sub(lambda m: "x" * len(m[0]), text)


def parse_target(text: str) -> Target:
    """Split ordinal, owner ("the first row's ..."), role word, name and container
    ("... in the navigation") out of a target phrase."""
    text = text.strip().rstrip(".")
    text = re.sub(r"^(on |at )?(the |a |an )", "", text, flags=re.I)
    container = ""
    if m := re.search(r" (?:in|inside|within|under) (?:the|this|its) ", _masked(text)):
        text, container = text[: m.start()], text[m.end() :]
    m = re.fullmatch(r"([\w .-]+?)['’]s (.+)", _masked(text))
    ordinal = ORDINALS.get(text.split(" ", 1)[0].lower()) if m and " " in m[1] else None
    owner = m[1].split(" ", 1)[1] if m and ordinal is not None else m[1] if m else ""
    if m and (ordinal is not None or re.fullmatch(r"[a-z]+", owner)):
        # "the first row's View link", "the cell's editor" (not a name: "Today's picks")
        inner = parse_target(text[m.start(2) :])
        inner.ordinal, inner.owner, inner.container = ordinal, owner, container
        return inner
    target = _parse_named(text)
    target.container = container
    return target


def _parse_named(text: str) -> Target:
    ordinal = None
    first = text.split(" ", 1)
    if first[0].lower() in ORDINALS and len(first) == 2:
        ordinal = ORDINALS[first[0].lower()]
        text = first[1]
    role = ""
    quoted_text, quoted = unquote(text)
    if not quoted:
        match = re.fullmatch(r"""(["'“‘].+["'”’])\s+(\w+)""", text)
        if match and match.group(2).lower() in ROLE_WORDS:
            role = ROLE_WORDS[match.group(2).lower()]
            quoted_text, quoted = unquote(match.group(1))
    if not quoted:
        words = text.split()
        while len(words) > 1 and words[-1].lower() in ROLE_WORDS:
            word = words.pop().lower()  # "product title heading": both role words go
            role = role or ROLE_WORDS[word]
        if len(words) == 1 and words[0].lower() in ROLE_WORDS and not role:
            role = ROLE_WORDS[words[0].lower()]
        quoted_text = " ".join(words)
    return Target(quoted_text, quoted, role, ordinal)


# ------------------------------------------------------------------------ resolution


def templatise(value: str, ctx: Context) -> str:
    """A literal equal to a var's value, or starting with the base URL, as placeholders."""
    if ctx.base_url and value.startswith(ctx.base_url):
        value = "{base_url}" + value[len(ctx.base_url) :]
    for name, literal in sorted(ctx.values.items(), key=lambda p: -len(p[1])):
        if literal and value == literal:
            return "{" + name + "}"
    return value


def varies_with(params: dict[str, Any], ctx: Context, said: str = "") -> str | None:
    """The parameter (of ``ctx.varying``) whose value this item has and another item does
    not, if ``params`` carry it literally (as typed, or encoded in an address): a check
    made of it would hold for this item only. A value the state's own words ``said``
    name (a trigger "The URL contains /wiki/login") is the user's choice, not a guess."""
    strings = [str(v).lower() for v in params.values() if isinstance(v, str)]
    for name in ctx.varying:
        value = str(ctx.values.get(name, ""))
        if len(value) < 3 or value.lower() in said.lower():
            continue  # too short to tell apart from the rest of a text, or asked for
        forms = {value, quote(value, safe=""), quote_plus(value), quote(value)}
        if any(form.lower() in text for form in forms for text in strings):
            return name
    return None


def literal_form(text: str, ctx: Context) -> tuple[str, dict[str, str]]:
    """``text`` with its placeholders filled from ``ctx.values``, and what to write back
    in what is stored: each quoted fragment's and each used value's literal → template."""
    used = {n for n in PLACEHOLDER.findall(text) if n in ctx.values}
    if not used:
        return text, {}

    def fill(fragment: str) -> str:
        return PLACEHOLDER.sub(lambda m: ctx.values[m[1]] if m[1] in used else m[0], fragment)

    back = {ctx.values[n]: "{" + n + "}" for n in sorted(used, key=lambda n: len(ctx.values[n]))}
    for fragment in re.findall(r"""['"“‘]([^'"”’]*\{\w+\}[^'"”’]*)['"”’]""", text):
        back[fill(fragment)] = fragment
    return fill(text), back


_VERBATIM = ("by", "index", "x", "y", "match", "visible", "direction", "key")


def restore(params: dict[str, Any], back: dict[str, str]) -> dict[str, Any]:
    """``params`` with literals from :func:`literal` written back as placeholders."""
    if not back:
        return params
    out = dict(params)
    for key, value in params.items():
        if key in _VERBATIM or isinstance(value, bool) or value is None:
            continue
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        if shown in back:
            out[key] = back[shown]
        elif isinstance(value, str) and key in ("text", "url", "title"):
            for literal, template in sorted(back.items(), key=lambda p: -len(p[0])):
                if len(literal) >= 3 and literal in value:
                    out[key] = value.replace(literal, template)
                    break
    return out


def with_base(url: str, ctx: Context) -> str:
    if url.startswith("/") and ctx.base_url:
        return "{base_url}" + url
    return templatise(url, ctx)


# ------------------------------------------------------------------------ the synthesiser


KEY_NAMES = r"enter|return|tab|escape|esc|space|backspace|delete|page ?down|page ?up|home|end|"
KEY_NAMES += r"arrow ?(?:up|down|left|right)|up|down|left|right|f\d{1,2}"
KEY_NAMES = rf"(?:(?:shift|ctrl|control|alt|option|meta|cmd|command) ?\+ ?)*(?:{KEY_NAMES}|\S)"
"""A key as written, with its modifiers: "Enter", "Shift+Enter", "Ctrl + K"."""


_EVERY = r"(?: (?:every|each) ([\d.]+) ?(ms|milliseconds?|s|secs?|seconds?))?"
_SAMPLING = (
    re.compile(
        r"(start|begin|stop|end|finish) (?:sampling|recording|logging|measuring|monitoring|"
        r"collecting) (?:the )?(?:videos?|playback)(?: quality| stats| statistics| metrics)?"
        + _EVERY
    ),
    re.compile(
        r"(start|begin|stop|end|finish) (?:the )?video(?: quality)? (?:sampling|sampler|"
        r"stats|statistics|logging)" + _EVERY
    ),
    re.compile(r"(sample) (?:the )?(?:videos?|video quality|playback)" + _EVERY),
)


_STATS = (
    r"(?:video |playback )?(?:stats|statistics|quality stats|qoe|qoe stats)(?: for nerds)?"
    r"|stats for nerds"
)
_STATS_EVERY = r"(?: (?:every|each) (?P<n{0}>[\d.]+) ?(?P<u{0}>ms|milliseconds?|s|secs?|seconds?))?"
_STATS_START = re.compile(
    rf"(?:start |begin )?(?:logging|log|recording|record|writing|write) (?:the )?(?:{_STATS})"
    + _STATS_EVERY.format(1)
    + r"(?: (?:to|into|in) (?:the file )?['\"]?(?P<path>[^\s'\"]+?)['\"]?)?"
    + _STATS_EVERY.format(2)
    + r"\.?",
    re.I,
)
_STATS_STOP = re.compile(
    rf"(?:stop|end|finish) (?:logging|recording|writing) (?:the )?(?:{_STATS})\.?"
    rf"|(?:stop|end|finish) (?:the )?(?:{_STATS}) (?:logging|log|logger)\.?",
    re.I,
)


def stats_logging(text: str) -> Action | None:
    """NetGent's "Stats for Nerds" log: 'Log video stats every 2 seconds to stats.jsonl',
    'Start logging stats for nerds', 'Stop logging video stats'."""
    text = text.strip()
    if _STATS_STOP.fullmatch(text):
        return Action(type="stop_stats_logging", params={})
    m = _STATS_START.fullmatch(text)
    if m is None:
        return None
    params: dict[str, object] = {}
    for n in "12":
        if m.group(f"n{n}"):
            factor = 0.001 if m.group(f"u{n}").lower().startswith("m") else 1.0
            params["interval"] = float(m.group(f"n{n}")) * factor
    if m.group("path"):
        params["out_path"] = m.group("path")
    return Action(type="start_stats_logging", params=params)


_WEBRTC_START = re.compile(
    r"(?:start |begin )?(?:tracking|track|measuring|measure|sampling|sample|monitoring|monitor) "
    r"(?:the )?(?:webrtc|peer connections?|call)(?: (?:quality|metrics|stats|statistics|"
    r"connections?))?\.?",
    re.I,
)
_WEBRTC_COLLECT = re.compile(
    r"(?:collect|write|save|store|dump) (?:the )?webrtc (?:metrics|stats|statistics|totals)"
    r" (?:to|into|in) (?:the file )?['\"]?(?P<path>[^\s'\"]+?)['\"]?\.?",
    re.I,
)


def webrtc_tracking(text: str) -> Action | None:
    """NetGent's WebRTC actions: 'Start tracking WebRTC quality', 'Write the WebRTC
    metrics to meeting.json'."""
    text = text.strip()
    if _WEBRTC_START.fullmatch(text):
        return Action(type="start_webrtc_tracking", params={})
    if m := _WEBRTC_COLLECT.fullmatch(text):
        return Action(type="collect_webrtc_metrics", params={"out_path": m["path"]})
    return None


def video_sampling(text: str) -> Action | None:
    """The sampler actions: 'Start sampling video quality every 0.5 seconds', 'Stop the
    video sampler'."""
    for pattern in _SAMPLING:
        if m := pattern.fullmatch(text):
            if m[1] in ("stop", "end", "finish"):
                return Action(type="stop_video_sampling", params={})
            params: dict[str, object] = {}
            if m[2]:
                params["interval"] = float(m[2]) * (0.001 if m[3].startswith("m") else 1.0)
            return Action(type="start_video_sampling", params=params)
    return None


def key_name(text: str) -> str:
    """A key as NetGent names it: "page down" -> ``PageDown``, "shift+enter" ->
    ``Shift+Enter``."""
    parts = [p.strip() for p in text.strip().split("+")] if len(text.strip()) > 1 else [text]
    return "+".join(p if len(p) == 1 else "".join(w.capitalize() for w in p.split()) for p in parts)


def pinned_url(ctx: Context, made_on: str) -> Check:
    """A URL check for ``made_on``, the address a state was made on, as it holds for
    every item: a parameter's value in it as its placeholder; where the address encodes
    the value (spaces, symbols), the address up to its query."""
    url = made_on
    if ctx.base_url and url.startswith(ctx.base_url):
        url = "{base_url}" + url[len(ctx.base_url) :]
    for name in ctx.varying:
        value = str(ctx.values.get(name, ""))
        if len(value) >= 3 and value in url:
            url = url.replace(value, "{" + name + "}")
    if varies_with({"url": url}, ctx) is not None:
        return Check(type="url", params={"url": url.split("?")[0], "ignore_query": True})
    return Check(type="url", params={"url": url})
