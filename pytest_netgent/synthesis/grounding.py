"""Whether checks mean what a trigger says: every word of it stands for something checked.

A trigger becomes checks only when the checks cover it whole. Each check stands for the
words that replay would test with it: a URL check for the words of its address, a title
check for the title's, a text check for its text (and for "says", "shows"), an element
check for the element's name, label and text, the words of its locator, and the kind of
element it is (a ``link``, a ``heading``, a ``form``). The words that only frame the
sentence ("is shown", "the page") need nothing; every other word of the trigger (a name,
a kind of element, a value, a state such as "playing", a count such as "single", a
negation) must be stood for by one of the checks, or the trigger is *not grounded*: the
state is declined naming those words, never replaced by "some element exists".

The builtin synthesiser judges its own readings so, and the same rule judges the checks
a model chooses (:mod:`.llm`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote as url_unquote

from ..browser.session import START_PAGES
from ..workflow.automaton import Check
from ..workflow.spec import PLACEHOLDER
from .observation import Observation, ObservedElement
from .words import stem, tokens

FRAME = (
    "is are be been being was were am shown visible displayed listed present there appear "
    "appears appeared loaded open opened now currently still already page screen view site "
    "website app application window see seen has have had with of for from by to at as and "
    "or it its their they which where whose that this these those titled named called if when once "
    "labelled labeled entitled user you we can"
)
"""Words that frame a trigger: they say that something is there, or where, and stand for
nothing a check must test."""

APPEARANCE = (
    "big small large little tiny huge wide narrow round square blue red green yellow orange "
    "purple grey gray white black bold"
)
"""How a thing looks: a page's styles are not its state, and a check of them would break
on a new theme; they frame the sentence too (the thing itself is still to be grounded)."""

NEGATION = "not no none never without nothing nobody hidden gone disappeared absent empty"
COUNT = "single only one two three four five several many all every each exactly least most"
STATE = (
    "playing paused muted unmuted stopped started selected checked unchecked pressed active "
    "inactive enabled disabled expanded collapsed closed loading sorted filtered focused "
    "highlighted liked followed subscribed fullscreen logged signed"
)

KINDS: dict[str, str] = {
    "link": "link anchor",
    "button": "button btn icon control toggle",
    "tab": "tab button",
    "text": "field box input textbox textarea editor",
    "select": "menu dropdown selector picker select list",
    "checkbox": "checkbox box toggle switch option",
    "heading": "heading title header headline article section",
    "table": "table grid",
    "row": "row record",
    "video": "video player stream clip movie film",
    "audio": "audio player track song sound",
    "image": "image picture photo thumbnail avatar logo",
    "dialog": "dialog modal popup",
    "navigation": "navigation nav menu bar",
    "form": "form",
    "list": "list item results",
}
"""The words that name each kind of element."""

TAG_KINDS = {
    "a": "link", "button": "button", "input": "text", "textarea": "text", "select": "select",
    "h1": "heading", "h2": "heading", "h3": "heading", "h4": "heading", "h5": "heading",
    "h6": "heading", "table": "table", "tr": "row", "video": "video", "audio": "audio",
    "img": "image", "dialog": "dialog", "nav": "navigation", "form": "form", "li": "list",
    "ul": "list", "ol": "list",
}  # fmt: skip
"""The kind of element an HTML tag (in a locator or an observation) is."""

ROLE_KINDS = {
    "link": "link", "button": "button", "tab": "tab", "textbox": "text", "searchbox": "text",
    "combobox": "select", "listbox": "select", "checkbox": "checkbox", "switch": "checkbox",
    "radio": "checkbox", "heading": "heading", "table": "table", "grid": "table",
    "row": "row", "dialog": "dialog", "navigation": "navigation", "img": "image",
    "list": "list", "listitem": "list", "form": "form",
}  # fmt: skip

TEXT_WORDS = (
    "say says said show shows display displays read reads mention mentions contain contains "
    "include includes confirm confirms tell tells message text word words banner notice "
    "alert label caption notification toast line sentence paragraph summary subtitle hint"
)
"""What a text check stands for besides its words: that the page says them."""

URL_WORDS = "url address link location path"
PREDICATES = (
    "contain contains include includes end ends start starts begin begins equal equals match "
    "matches mention mentions"
)
"""What a URL or title check stands for once the trigger names the address or the title
("the URL ends with", "the title contains"); elsewhere these words are the trigger's own
("We are at the beginning" is not a URL that begins with something)."""
HOME_WORDS = "home main start front landing index root"
"""What a URL at the root of a site or of a section (``/``, ``/wiki/``) stands for."""
TITLE_WORDS = "title tab heading"


@functools.lru_cache(maxsize=1)
def _vocabulary() -> dict[str, frozenset[str]]:
    """Each word list above as canonical tokens (stemmed, synonyms folded)."""
    plain = {
        "frame": FRAME,
        "negation": NEGATION,
        "count": COUNT,
        "state": STATE,
        "text": TEXT_WORDS,
        "url": URL_WORDS,
        "home": HOME_WORDS,
        "title": TITLE_WORDS,
        "predicates": PREDICATES,
    }
    out = {name: frozenset(_tokens(words)) for name, words in plain.items()}
    # the frame by each word's own stem: synonyms are folded ("page" reads as "article"),
    # and a word that frames a sentence must not make its synonym a frame too
    out["frame"] = frozenset(stem(w) for w in f"{FRAME} {APPEARANCE}".split())
    out |= {f"kind:{kind}": frozenset(_tokens(words)) for kind, words in KINDS.items()}
    return out


def _tokens(text: str) -> set[str]:
    """:func:`~.words.tokens` of ``text`` with its identifiers split (``searchInput``,
    ``country__exact``, ``/atlas/cities``), a URL's escapes undone."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", url_unquote(text))
    return tokens(re.sub(r"[^\w']+|_", " ", spaced))


def _kind_words(*kinds: str) -> set[str]:
    vocabulary = _vocabulary()
    out: set[str] = set()
    for kind in kinds:
        out |= vocabulary.get(f"kind:{kind}", frozenset())
    return out


@dataclass
class Grounding:
    """How the checks of one trigger stand for its words."""

    trigger: str
    stands_for: list[tuple[str, list[str]]] = field(default_factory=list)
    """Each check (described) and the words of the trigger it stands for."""
    missing: list[str] = field(default_factory=list)
    """The words of the trigger no check stands for, as written."""

    @property
    def whole(self) -> bool:
        """Every word of the trigger is stood for."""
        return not self.missing

    def reason(self) -> str:
        """Why the trigger is not grounded, naming the words and what they are."""
        vocabulary = _vocabulary()
        kinds = []
        for word in self.missing:
            canon = _tokens(word)
            for name, what in (
                ("negation", "a negation"),
                ("count", "a count"),
                ("state", "a state"),
            ):
                if canon & vocabulary[name]:
                    kinds.append(f"{word!r} ({what})")
                    break
            else:
                kinds.append(f"{word!r} (a value)" if re.search(r"\d", word) else repr(word))
        checks = "; ".join(d for d, _ in self.stands_for) or "none"
        return (
            f"trigger {self.trigger!r} is not grounded: no check stands for "
            f"{', '.join(kinds)} (checks found: {checks})"
        )


def covered(check: Check, page: Observation) -> set[str]:
    """The canonical words ``check`` stands for on ``page`` (see the module's doc); a
    negated check for the words of a negation too, and a count for its number."""
    out = _covered(check, page)
    p = check.params
    if p.get("negate") is True:
        out |= _vocabulary()["negation"]
    for key, words in (("count", "exactly only"), ("at_least", "least")):
        if key in p:
            out |= _tokens(f"{p[key]} {words} {_NUMBER_WORDS.get(str(p[key]), '')}")
    return out


_NUMBER_WORDS: dict[str, str] = {
    str(n): word
    for n, word in enumerate(("no", "one", "two", "three", "four", "five", "six", "seven",
                              "eight", "nine", "ten"))
}  # fmt: skip
"""A count's number as a trigger may spell it."""

STATE_WORDS = {
    "checked": "checked ticked", "unchecked": "unchecked unticked", "mixed": "mixed",
    "selected": "selected current", "unselected": "unselected", "expanded": "expanded open",
    "collapsed": "collapsed closed", "pressed": "pressed on", "unpressed": "unpressed off",
    "disabled": "disabled greyed", "enabled": "enabled", "focused": "focused",
    "busy": "busy loading", "required": "required", "readonly": "readonly read-only",
    "modal": "modal", "invalid": "invalid error",
    "playing": "playing plays", "paused": "paused", "ended": "ended finished",
    "buffering": "buffering loading",
}  # fmt: skip
"""The words each state of a role or media check stands for."""


def _role_words(p: dict[str, Any]) -> set[str]:
    """What a role check stands for: its role's kind, its name, states, value, text and
    region."""
    role = str(p.get("role", ""))
    out = _tokens(role) | _kind_words(ROLE_KINDS.get(role, ""))
    states = p.get("state") or []
    for state in [states] if isinstance(states, str) else states:
        out |= _tokens(STATE_WORDS.get(state, state))
    for key in ("name", "value", "within"):
        if key in p:
            out |= _tokens(str(p[key]))
    if "text" in p:
        out |= _tokens(str(p["text"])) | _vocabulary()["text"]
    return out


def _covered(check: Check, page: Observation) -> set[str]:
    vocabulary = _vocabulary()
    p = check.params
    if check.type == "role":
        return _role_words(p)
    if check.type == "media":
        out = _kind_words("video", "audio") | _tokens(STATE_WORDS.get(p.get("state", ""), ""))
        if "min_height" in p:
            out |= _tokens(f"{p['min_height']} height high resolution quality")
        if "advanced" in p:
            out |= _tokens(f"{p['advanced']} advancing advances playing plays seconds")
        return out
    if check.type == "url":
        url = str(p.get("url", "")).replace("{base_url}", " ")
        out = _tokens(url) | vocabulary["url"]
        if url in START_PAGES:  # the browser's own start page: its homepage, a new tab
            out |= _tokens("blank empty new tab homepage home start browser")
        path = re.sub(r"^\w+://[^/]*|\{base_url\}", "", str(p.get("url", "")))
        path = path.split("?")[0].split("#")[0]
        if (
            p.get("match", "exact") in ("exact", "prefix")
            and path.count("/") <= 2
            and (path.endswith("/") or path == "")
        ):
            out |= vocabulary["home"]
        return out
    if check.type == "title":
        return _tokens(str(p.get("title", ""))) | vocabulary["title"]
    if check.type == "text":
        return _tokens(str(p.get("text", ""))) | vocabulary["text"]
    if check.type == "element":
        selector = str(p.get("selector", ""))
        out = _tokens(selector)
        for tag in re.findall(r"(?<![\w-])([a-z][a-z0-9]*)(?=[\[.#:\s>/)]|$)", selector):
            out |= _kind_words(TAG_KINDS.get(tag, ""))
        element = element_of(check, page)
        if element is not None:
            out |= element_words(element)
        if "text" in p:
            out |= _tokens(str(p["text"])) | vocabulary["text"]
        return out
    return set()  # a script says nothing by itself: the reading that wrote it vouches


def element_words(el: ObservedElement) -> set[str]:
    """The words an element stands for: its name, label, text and naming attributes, its
    region (``form``) and the kind of element it is."""
    from .elements import element_kind

    out: set[str] = set()
    for text in (el.name, el.label, el.text, el.region):
        out |= _tokens(text)
    for attr in ("placeholder", "aria-label", "title", "value", "name", "id", "data-testid"):
        if attr in el.attrs:
            out |= _tokens(el.attrs[attr])
    kind = element_kind(el)
    out |= _kind_words(kind, TAG_KINDS.get(el.tag, ""), ROLE_KINDS.get(el.role, ""))
    if el.group is not None:
        out |= _kind_words("list")
    return out


def heading_words(tag: str, text: str) -> set[str]:
    """What a heading stands for: its words and the words that name a heading."""
    return _tokens(text) | _kind_words(TAG_KINDS.get(tag, "heading"))


def element_of(check: Check, page: Observation) -> ObservedElement | None:
    """The observed element ``check`` locates, by one of its locators."""
    by, selector = check.params.get("by"), check.params.get("selector")
    for el in page.elements:
        if any(s.by == by and s.selector == selector for s in el.selectors):
            return el
    return None


def _heading_of(check: Check, page: Observation) -> set[str]:
    by, selector = check.params.get("by"), check.params.get("selector")
    for heading in page.headings:
        if any(s.by == by and s.selector == selector for s in heading.selectors):
            return heading_words(heading.tag, heading.text)
    return set()


def ground(
    trigger: str,
    checks: list[Check],
    page: Observation,
    *,
    granted: set[str] | None = None,
    values: dict[str, str] | None = None,
) -> Grounding:
    """How ``checks`` stand for ``trigger`` (its placeholders filled) on ``page``; the
    checks' own placeholders are read as ``values`` fill them.

    ``granted``: words the reading that wrote the checks understood itself (the
    predicate of "X is not pressed": ``not``, ``pressed``), as written in the trigger."""
    vocabulary = _vocabulary()
    frame = vocabulary["frame"]
    filled = [_filled(c, values or {}) for c in checks]
    said = _tokens(trigger)
    by_check = []
    for check, full in zip(checks, filled, strict=True):
        words = covered(full, page) | _heading_of(full, page) | _own_words(full)
        if check.type in ("url", "title") and said & vocabulary[check.type]:
            words |= vocabulary["predicates"]  # "the URL ends with", "the title contains"
        by_check.append((check, words))
    allowed = _tokens(" ".join(granted or ()))
    result = Grounding(trigger)
    stood: dict[int, list[str]] = {}
    for word in _words(trigger):
        canon = _tokens(word)
        if not canon or stem(word.lower()) in frame or canon <= allowed:
            continue
        hits = [i for i, (_, words) in enumerate(by_check) if canon & words]
        if not hits:
            if word not in result.missing:
                result.missing.append(word)
            continue
        for i in hits:
            stood.setdefault(i, []).append(word)
    result.stands_for = [(c.describe(), stood.get(i, [])) for i, (c, _) in enumerate(by_check)]
    return result


def _meaningful(vocabulary: dict[str, frozenset[str]]) -> set[str]:
    """The words that name a kind of element, a count, a state or a negation."""
    return set().union(
        *(
            v
            for k, v in vocabulary.items()
            if k.startswith("kind:") or k in ("negation", "count", "state")
        )
    )


def names_only(words: list[str]) -> bool:
    """Whether ``words`` only name things: none is a kind of element ("article", "table"),
    a count, a state or a negation, which only the checks of the thing itself stand for
    (a heading elsewhere on the page is not "the article titled 'QUIC'")."""
    vocabulary = _vocabulary()
    meaningful = _meaningful(vocabulary)
    return not any(_tokens(w) & meaningful for w in words)


def shown_words(words: list[str], page: Observation) -> list[str]:
    """Those of ``words`` that name something and that ``page`` shows as whole words: not
    a kind of element ("table"), a count, a state or a negation, which a text on the
    page would not stand for."""
    vocabulary = _vocabulary()
    meaningful = _meaningful(vocabulary)
    out = []
    for word in words:
        if _tokens(word) & meaningful or len(word) < 3:
            continue
        if re.search(rf"(?<!\w){re.escape(word)}(?!\w)", page.text):
            out.append(word)
    return out


def _filled(check: Check, values: dict[str, str]) -> Check:
    """``check`` with the ``{name}`` placeholders of its strings filled from ``values``."""
    if not values:
        return check
    params = {
        k: PLACEHOLDER.sub(lambda m: str(values.get(m[1], m[0])), v) if isinstance(v, str) else v
        for k, v in check.params.items()
    }
    return Check.model_construct(type=check.type, params=params)


def _own_words(check: Check) -> set[str]:
    """The words, one by one, of the text, name or title ``check`` compares: it stands
    for each ("Log" of 'Log in'), which their tokens as one phrase ("login") would not."""
    out: set[str] = set()
    for key in ("text", "name", "title"):
        if isinstance(value := check.params.get(key), str):
            for word in _words(value):
                out |= _tokens(word)
    return out


def _words(trigger: str) -> list[str]:
    """The trigger's words as written (quotes dropped), in order."""
    unquoted = re.sub(r"""(?:(?<=\s)|^)['"“‘]|['"”’](?=[\s.,;:]|$)""", " ", trigger)
    words = (w.strip(".'’-") for w in re.findall(r"[\w'’.-]+", unquoted))
    return [w for w in words if w]
