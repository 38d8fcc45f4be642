"""The builtin synthesiser: offline and deterministic, for literal instructions.

It parses steps such as "Navigate to {base_url}/login", "Click the 'Sign in' button",
"Type {user} into the Email field", "Press Enter", "Wait 10 seconds", "Scroll down 3
times", "Click the first result", "Select 720p from the Quality menu" and "Go back", and
triggers such as "X is visible", "the page title contains X", "the URL contains X".
Targets are resolved against the page observation by accessible name, label,
placeholder, visible text and role, scored so that the best unique element wins; an
ambiguous or missing target raises :class:`Unresolved`, it is never guessed. The same
page and prompt always give the same answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..automaton import Action, Check
from ..browser.session import NETGENT_START_PAGE, START_PAGES
from ..spec import PLACEHOLDER, StateSpec
from . import Context, Unresolved, Usage
from .observation import Heading, Observation, ObservedElement, Selector

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
    "form": "form", "icon": "button",
}  # fmt: skip

# Words that mean the same on real sites; the first of each set is canonical.
SYNONYMS = [
    ("login", "log in", "sign in", "signin", "log on", "logon"),
    ("logout", "log out", "sign out", "signout"),
    ("search", "find", "look up", "lookup"),
    ("like", "favourite", "favorite", "heart"),
    ("username", "user name", "login name", "user id"),
    ("password", "passcode", "pass word"),
    ("submit", "send", "go"),
    ("result", "hit", "match"),
    ("next", "more", "forward"),
    ("previous", "prev"),
    ("article", "page", "entry"),
]
STOP = {"the", "a", "an", "on", "of", "to", "in", "into", "for", "with", "this", "that", "your"}

SHOWN = "(?:shown|visible|displayed|listed|present|open|there)"

GENERIC_NOUNS = {"item", "entry", "one", "link", "element", "option", "thing", "row"}

TEXT_INPUT_TYPES = {"", "text", "search", "email", "password", "url", "tel", "number"}


def canon(text: str) -> str:
    """Lower-case words with synonyms folded and light stemming."""
    words = re.sub(r"[^a-z0-9{}_]+", " ", text.lower()).split()
    text = " " + " ".join(_stem(w) for w in words) + " "
    for group in SYNONYMS:
        for member in sorted(group[1:], key=len, reverse=True):
            text = text.replace(f" {member} ", f" {group[0]} ")
    return text.strip()


def _stem(word: str) -> str:
    if word.endswith("ed") and len(word) > 4:
        return word[:-1] if word[-3] == "e" or word[:-1].endswith("e") else word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def tokens(text: str) -> set[str]:
    """The meaningful words of ``text``."""
    return {t for t in canon(text).split() if t not in STOP}


def unquote(text: str) -> tuple[str, bool]:
    """``'Sign in'`` -> (``Sign in``, True); other text unchanged."""
    text = text.strip().rstrip(".")
    match = re.fullmatch(r"""["'“‘](.+)["'”’]""", text)
    return (match.group(1), True) if match else (text, False)


class NotHolding(Unresolved):
    """A trigger that parses but does not hold on the page (the state does not apply)."""


@dataclass
class Target:
    """A parsed reference to an element: "the first 'Sign in' button"."""

    phrase: str
    quoted: bool = False
    role: str = ""
    ordinal: int | None = None


def parse_target(text: str) -> Target:
    """Split ordinal, role word and name out of a target phrase."""
    text = text.strip().rstrip(".")
    text = re.sub(r"^(on |at )?(the |a |an )", "", text, flags=re.I)
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


def _kind(el: ObservedElement) -> str:
    tag, role = el.tag, el.role
    if tag == "select" or role in ("combobox", "listbox"):
        return "select"
    if (
        tag == "textarea"
        or role in ("textbox", "searchbox")
        or el.attrs.get("contenteditable") == "true"
    ):
        return "text"
    if tag == "input":
        kind = el.attrs.get("type", "").lower()
        if kind in TEXT_INPUT_TYPES:
            return "text"
        if kind in ("checkbox", "radio"):
            return "checkbox"
        return "button"
    if tag == "a" or role == "link":
        return "link"
    return "button" if tag in ("button", "summary") or role in ("button", "tab") else "other"


def _fields(el: ObservedElement) -> list[str]:
    out = [el.name, el.label, el.text]
    for attr in ("placeholder", "aria-label", "title", "value", "name", "id", "data-testid"):
        if attr in el.attrs:
            out.append(el.attrs[attr].replace("-", " ").replace("_", " "))
    return [f for f in out if f]


def _score(target: Target, texts: list[str]) -> float:
    phrase = canon(target.phrase)
    want = tokens(target.phrase)
    best = 0.0
    for raw in texts:
        field = canon(raw)
        if not field:
            continue
        if field == phrase:
            score = 100.0
        elif phrase and re.search(rf"(^| ){re.escape(phrase)}( |$)", field):
            score = 80.0 - min(15.0, (len(field) - len(phrase)) / 4)
        elif len(field) >= 3 and re.search(rf"(^| ){re.escape(field)}( |$)", phrase):
            score = 65.0
        elif want:
            have = tokens(raw)
            score = 55.0 * len(want & have) / len(want) if want & have else 0.0
        else:
            score = 0.0
        best = max(best, score)
    return best


def _role_fit(target: Target, el: ObservedElement) -> float:
    kind = _kind(el)
    if not target.role:
        return 0.0
    if target.role == kind or (target.role == "button" and kind == "link" and el.role):
        return 15.0
    if target.role == "text" and kind != "text":
        return -40.0
    if target.role == "select" and kind != "select":
        return -40.0
    if target.role == "form":
        return 15.0 if el.region == "form" else -10.0
    return -15.0


def _pick(
    scored: list[tuple[float, ObservedElement]], what: str, page: Observation
) -> ObservedElement:
    scored = sorted(scored, key=lambda p: (-p[0], p[1].mmid))
    if not scored or scored[0][0] < 40:
        near = ", ".join(e.describe() for _, e in scored[:3]) or "no candidates"
        raise Unresolved(f"no element on {page.url} matches {what} (closest: {near})")
    best_score, best = scored[0]
    rivals = [e for s, e in scored[1:] if s >= best_score - 8]
    if rivals:
        names = ", ".join(e.describe() for e in [best, *rivals[:3]])
        raise Unresolved(f"{what} is ambiguous on {page.url}: {names}; name it more precisely")
    return best


def resolve(target: Target, page: Observation, want: str = "") -> ObservedElement:
    """The one element ``target`` names on ``page``; ``want`` filters by kind."""
    what = f"{target.phrase!r}" + (f" ({target.role})" if target.role else "")
    candidates = [e for e in page.elements if not want or _kind(e) == want]
    if target.ordinal is not None:
        return _resolve_ordinal(target, candidates, page, what)
    scored = []
    for el in candidates:
        score = _score(target, _fields(el))
        if score > 0:
            score += _role_fit(target, el)
            if target.quoted and score < 95:
                score -= 10  # a quoted name should match as written
            scored.append((score, el))
    return _pick(scored, what, page)


def _resolve_ordinal(
    target: Target, candidates: list[ObservedElement], page: Observation, what: str
) -> ObservedElement:
    groups: dict[str, list[ObservedElement]] = {}
    for el in candidates:
        if el.group is not None:
            groups.setdefault(el.group.selector, []).append(el)
    if not groups:
        raise Unresolved(f"no list of similar items on {page.url} for {what}")
    noun = tokens(target.phrase) - GENERIC_NOUNS

    def score(items: list[ObservedElement]) -> tuple[float, int]:
        sel = items[0].group.selector if items[0].group else ""
        words = tokens(re.sub(r"[^A-Za-z]+", " ", sel)) | tokens(" ".join(_fields(items[0])))
        s = 50.0 * len(noun & words) / len(noun) if noun else 30.0
        s += 20.0 if items[0].region == "main" else 0.0
        s += 10.0 if _kind(items[0]) in ("link", "button") else 0.0
        return s, len(items)

    ranked = sorted(groups.values(), key=lambda g: score(g), reverse=True)
    if score(ranked[0])[0] < 50:
        raise Unresolved(
            f"no list on {page.url} looks like {what} (lists: "
            + ", ".join(repr(g[0].group.selector) for g in ranked[:3] if g[0].group)
            + ")"
        )
    if len(ranked) > 1 and score(ranked[0]) == score(ranked[1]):
        raise Unresolved(
            f"{what} is ambiguous on {page.url}: lists "
            + ", ".join(repr(g[0].group.selector) for g in ranked[:3] if g[0].group)
        )
    items = ranked[0]
    index = target.ordinal if target.ordinal is not None else 0
    if not -len(items) <= index < len(items):
        raise Unresolved(f"{what}: the list on {page.url} has only {len(items)} items")
    return items[index]


def locator(el: ObservedElement, *, in_list: bool = False) -> dict[str, object]:
    """``by``/``selector`` params for ``el``; with ``in_list`` (an ordinal target, or an
    element without a stable selector of its own) its list's selector and ``index``."""
    if el.group is not None and (in_list or el.best is None or not el.best.stable):
        return {"by": "css selector", "selector": el.group.selector, "index": el.group.index}
    best = el.best
    if best is None:
        raise Unresolved(f"no unique selector for {el.describe()}")
    return {"by": best.by, "selector": best.selector}


def locate(target: Target, page: Observation, want: str = "") -> dict[str, object]:
    """Resolve ``target`` and return its locator params (group and index for ordinals)."""
    loc = locator(resolve(target, page, want), in_list=target.ordinal is not None)
    if target.ordinal is not None:
        loc["index"] = target.ordinal  # "the last result" stays the last one
    return loc


def _heading(target: Target, page: Observation) -> tuple[Heading, bool]:
    """The heading ``target`` names by its text (True), or for "the heading" (role only,
    or a description like "an article heading"), the page's only top heading (False)."""
    scored = [(_score(target, [h.text]), h) for h in page.headings]
    scored = [p for p in scored if p[0] >= 60]
    if scored:
        scored.sort(key=lambda p: -p[0])
        return scored[0][1], True
    tops = [h for h in page.headings if h.tag == "h1"] or page.headings[:1]
    if target.role == "heading" and len(tops) == 1:
        return tops[0], False
    raise Unresolved(f"no heading on {page.url} matches {target.phrase!r}")


# ------------------------------------------------------------------------ templates


def templatise(value: str, ctx: Context) -> str:
    """A literal equal to a var's value, or starting with the base URL, as placeholders."""
    if ctx.base_url and value.startswith(ctx.base_url):
        value = "{base_url}" + value[len(ctx.base_url) :]
    for name, literal in sorted(ctx.values.items(), key=lambda p: -len(p[1])):
        if literal and value == literal:
            return "{" + name + "}"
    return value


def _literal(text: str, ctx: Context) -> tuple[str, dict[str, str]]:
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


def _restore(params: dict[str, Any], back: dict[str, str]) -> dict[str, Any]:
    """``params`` with literals from :func:`_literal` written back as placeholders."""
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


def _with_base(url: str, ctx: Context) -> str:
    if url.startswith("/") and ctx.base_url:
        return "{base_url}" + url
    return templatise(url, ctx)


# ------------------------------------------------------------------------ the synthesiser


KEY_NAMES = r"enter|return|tab|escape|esc|space|backspace|delete|page ?down|page ?up|home|end|"
KEY_NAMES += r"arrow ?(?:up|down|left|right)|up|down|left|right|f\d{1,2}"


class BuiltinSynthesiser:
    """Offline, deterministic synthesis of literal instructions and triggers."""

    name = "builtin"

    def __init__(self) -> None:
        self.usage = Usage()

    # ---------------------------------------------------------------- actions

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        literal, back = _literal(instruction.strip(), ctx)
        actions = [
            a.model_copy(update={"params": _restore(a.params, back)})
            for a in self._actions(ctx, page, literal)
        ]
        self.usage.builtin_steps += 1
        return actions, True

    def _actions(self, ctx: Context, page: Observation, text: str) -> list[Action]:
        low = text.lower().rstrip(".")
        if re.fullmatch(r"(?:go|navigate) back|back", low):
            return [Action(type="go_back", params={})]
        if m := re.fullmatch(r"(?:navigate|go|open|visit|browse)(?: to)? (\S+)", text, re.I):
            return [Action(type="navigate", params={"url": _with_base(unquote(m[1])[0], ctx)})]
        if m := re.fullmatch(
            r"wait(?: for)? ([\d.]+) ?(ms|milliseconds?|s|secs?|seconds?|minutes?|mins?)?", low
        ):
            unit = m[2] or "s"
            factor = 0.001 if unit.startswith(("ms", "milli")) else 60.0 if unit[0] == "m" else 1.0
            seconds = float(m[1]) * factor
            return [Action(type="wait", params={"seconds": seconds})]
        if stats := _stats_logging(text):
            return [stats]
        if sampling := _video_sampling(low):
            return [sampling]
        if m := re.fullmatch(rf"press(?: the)? ({KEY_NAMES}|\S)(?: key)?(?: in (.+))?", low):
            params: dict[str, object] = {"key": _key_name(m[1])}
            if m[2]:
                params |= locate(parse_target(text[m.start(2) :]), page)
            return [Action(type="press_key", params=params)]
        if m := re.fullmatch(
            r"scroll (down|up|left|right)(?: (\d+) times?| by (\d+) ?(?:px|pixels)?)?", low
        ):
            params = {"direction": m[1]}
            if m[2]:
                params["times"] = int(m[2])
            if m[3]:
                params["amount"] = int(m[3])
            return [Action(type="scroll", params=params)]
        if m := re.fullmatch(r"scroll to(?: the)? (.+)", text, re.I):
            return [Action(type="scroll_to", params=locate(parse_target(m[1]), page))]
        if m := re.fullmatch(
            r"(?:type|enter|input|fill in|write) (.+?) (?:into|in|on) (.+)", text, re.I
        ):
            value = templatise(unquote(m[1])[0], ctx)
            loc = locate(parse_target(m[2]), page, want="text")
            return [Action(type="type", params={**loc, "text": value})]
        if m := re.fullmatch(r"(?:select|choose|pick) (.+?) (?:from|in) (.+)", text, re.I):
            option = unquote(m[1])[0]
            el = self._menu(parse_target(m[2]), option, page)
            choice = next((o for o in el.options or [] if canon(o.text) == canon(option)), None)
            if choice is None:
                names = ", ".join(o.text for o in el.options or [])
                raise Unresolved(f"{el.describe()} has no option {option!r} (options: {names})")
            return [Action(type="select", params={**locator(el), "text": choice.text})]
        if m := re.fullmatch(r"(?:hover|mouse)(?: over| on)? (.+)", text, re.I):
            return [Action(type="hover", params=locate(parse_target(m[1]), page))]
        if m := re.fullmatch(
            r"switch to(?: the)? (new|newest|last|latest|first|next|\d+)(?:st|nd|rd|th)? tab", low
        ):
            index = {"first": 0}.get(m[1], -1)
            if m[1].isdigit():
                index = int(m[1]) - 1
            return [Action(type="switch_tab", params={"index": index})]
        if m := re.fullmatch(r"(?:click|tap|press|open|select|choose)(?: on)? (.+)", text, re.I):
            return [Action(type="click", params=locate(parse_target(m[1]), page))]
        raise Unresolved(f"not a literal instruction the builtin synthesiser knows: {text!r}")

    def _menu(self, target: Target, option: str, page: Observation) -> ObservedElement:
        menus = [e for e in page.elements if _kind(e) == "select"]
        having = [e for e in menus if any(canon(o.text) == canon(option) for o in e.options or [])]
        if len(having) == 1:
            return having[0]
        return resolve(target, page, want="select")

    # ---------------------------------------------------------------- triggers

    def define_triggers(
        self, ctx: Context, page: Observation, state: StateSpec, *, only_literal: bool = False
    ) -> list[Check]:
        """Checks for ``state``'s triggers; vague ones become the page's landmarks, or,
        with ``only_literal``, :class:`Unresolved` (for an LLM to decide)."""
        checks: list[Check] = []
        vague: list[str] = []
        for trigger in state.triggers:
            literal, back = _literal(trigger, ctx)
            try:
                checks += [
                    c.model_copy(update={"params": _restore(c.params, back)})
                    for c in self._trigger(ctx, page, literal)
                ]
            except NotHolding:
                raise  # the state does not apply to this page: say so, do not guess
            except Unresolved:
                vague.append(trigger)
        if only_literal and (vague or not checks):
            raise Unresolved(f"vague triggers: {vague or state.triggers}")
        if vague or not checks:
            checks = self._landmarks(ctx, page, checks)
        landmark = self._url_landmark(ctx, page)
        if any(c.type == "url" and c != landmark for c in checks):
            # a URL trigger was written: it replaces the URL this page would pin
            checks = [c for c in checks if c != landmark]
        self.usage.builtin_steps += 1
        return _unique(checks)

    def _trigger(self, ctx: Context, page: Observation, text: str) -> list[Check]:
        text = re.sub(r"^(if|when|once)\s+", "", text.strip().rstrip("."), flags=re.I)
        low = text.lower()
        if m := re.fullmatch(r"(?:the )?(?:page )?url (?:is|equals) (.+)", text, re.I):
            value, quoted = unquote(m[1])
            if quoted or value.startswith(("http", "/", "{")):
                return [Check(type="url", params={"url": _with_base(value, ctx)})]
            return [self._url_landmark(ctx, page)]
        if m := re.fullmatch(r"(?:the )?(?:page )?url ends with (.+)", text, re.I):
            value = unquote(m[1])[0]
            return [Check(type="url", params={"url": re.escape(value) + "$", "match": "pattern"})]
        if m := re.fullmatch(
            r"(?:the )?(?:page )?url (contains|includes|has|starts with|begins with) (.+)",
            text,
            re.I,
        ):
            match = "contains" if m[1].lower() in ("contains", "includes", "has") else "prefix"
            value = unquote(m[2])[0]
            if match == "prefix":
                value = _with_base(value, ctx)
            return [Check(type="url", params={"url": value, "match": match})]
        if m := re.fullmatch(
            r"(?:the )?(?:page )?title (is|equals|contains|includes|has|mentions) (.+)", text, re.I
        ):
            match = "exact" if m[1].lower() in ("is", "equals") else "contains"
            return [Check(type="title", params={"title": unquote(m[2])[0], "match": match})]
        if m := re.fullmatch(
            r"(?:the )?(?:page|screen) (?:says|shows|displays|contains|mentions|reads) (.+)",
            text,
            re.I,
        ):
            return [self._text(ctx, page, m[1])]
        if m := re.fullmatch(
            r"""(?:the |a |an )?[\w' ]+? (?:says|shows|displays|reads|mentions) """
            r"""(["'“‘].+["'”’]|[\w.,:%-]+)""",
            text,
            re.I,
        ):
            # "The cell output shows 42", "The banner says 'Saved'": the words on the page
            return [self._text(ctx, page, m[1], exact_word=True)]
        if m := re.fullmatch(
            r"""(["'“‘].+["'”’])(?: text)? (?:is|are) (?:shown|visible|displayed|present)""",
            text,
            re.I,
        ):
            return [self._text(ctx, page, m[1])]
        if m := re.fullmatch(
            r"(?:the )?(.+?) (?:is|are) (not )?(pressed|selected|checked|liked|active)", text, re.I
        ):
            el = resolve(parse_target(m[1]), page)
            return [self._state_check(el, m[3].lower(), negative=bool(m[2]))]
        if m := re.fullmatch(
            rf"(?:at least one |some |any )(.+?) (?:is|are) {SHOWN}",
            low,
        ):
            target = parse_target(m[1])
            target.ordinal = 0
            loc = locate(target, page)
            loc.pop("index", None)
            return [Check(type="element", params=loc)]
        if m := re.fullmatch(
            rf"(?:the |a |an )?(.+?) (?:is|are) {SHOWN}|(?:the |a |an )?(.+?) appears?",
            text,
            re.I,
        ):
            target = parse_target(m[1] or m[2])
            if target.role != "heading":
                try:
                    el = resolve(target, page)
                    loc = locator(el)
                    loc.pop("index", None)
                    check = Check(type="element", params=loc)
                    if el.chrome:  # on every page of the site: pin this one by its URL
                        return [self._url_landmark(ctx, page), check]
                    return [check]
                except Unresolved:
                    if target.role:
                        raise
                    name = (m[1] or m[2]).strip()
                    if re.fullmatch(r"[A-Z0-9][\w.-]*(?: [A-Z0-9][\w.-]*){0,2}", name):
                        # a name or number ("Ruritania is listed", "City 001 is shown"):
                        # the words on the page, or the state does not apply here
                        return [self._text(ctx, page, f"'{name}'")]
            heading, named = _heading(target, page)
            if not heading.selectors:
                raise Unresolved(f"no selector for heading {heading.text!r}")
            sel = heading.selectors[0]
            check = Check(type="element", params={"by": sel.by, "selector": sel.selector})
            if not (sel.stable and named):  # "a heading" says little: pin the page by URL
                return [self._url_landmark(ctx, page), check]
            return [check]
        raise Unresolved(f"not a literal trigger: {text!r}")

    def _text(
        self, ctx: Context, page: Observation, phrase: str, *, exact_word: bool = False
    ) -> Check:
        value, quoted = unquote(phrase)
        body = page.text
        if quoted:
            if value not in body:  # quoted: exactly this text, which is not there
                raise NotHolding(f"the page does not show {value!r}")
            return Check(type="text", params={"text": templatise(value, ctx)})
        if exact_word and re.fullmatch(r"[\w.,:%-]+", value):
            # one word or number ("shows 42"): that very word, or the state does not apply
            if not re.search(rf"(?<!\w){re.escape(value)}(?!\w)", body):
                raise NotHolding(f"the page does not show {value!r}")
            return Check(type="text", params={"text": templatise(value, ctx)})
        words = [w for w in re.findall(r"[\w']+", value) if w.lower() not in {"there", "are", "is"}]
        for size in range(len(words), 1, -1):
            for start in range(len(words) - size + 1):
                piece = " ".join(words[start : start + size])
                found = re.search(re.escape(piece), body, re.I)
                if found:
                    return Check(type="text", params={"text": found.group(0)})
        raise Unresolved(f"the page does not say {value!r}")

    def _state_check(self, el: ObservedElement, word: str, *, negative: bool) -> Check:
        attr = (
            "aria-checked"
            if word == "checked"
            else "aria-selected"
            if word == "selected"
            else "aria-pressed"
        )
        if attr not in el.attrs:
            raise Unresolved(f"{el.describe()} has no {attr} to tell whether it is {word}")
        value = "false" if negative else "true"
        if el.attrs[attr] != value:
            raise NotHolding(f"{el.describe()} is {attr}={el.attrs[attr]}, not {value}")
        best = next((s for s in el.selectors if s.by == "css selector" and s.stable), None)
        if best is not None:
            return Check(
                type="element",
                params={"by": "css selector", "selector": f'{best.selector}[{attr}="{value}"]'},
            )
        xp = next((s for s in el.selectors if s.by == "xpath"), None)
        if xp is not None:
            xpath = re.sub(r"\[normalize-space\(\)=.*\]$", "", xp.selector)
            return Check(
                type="element", params={"by": "xpath", "selector": f"{xpath}[@{attr}='{value}']"}
            )
        raise Unresolved(f"no stable selector for {el.describe()}")

    def _url_landmark(self, ctx: Context, page: Observation) -> Check:
        parts = urlsplit(page.url)
        if page.url in START_PAGES:
            # written as NetGent writes it, so the repository also replays in NetGent; here
            # it holds on whichever start page the browser shows (see checks.js)
            return Check(type="url", params={"url": NETGENT_START_PAGE})
        if not parts.netloc:
            return Check(type="url", params={"url": page.url})
        base = f"{parts.scheme}://{parts.netloc}{parts.path}"
        if parts.query:
            return Check(type="url", params={"url": _with_base(base + "?", ctx), "match": "prefix"})
        if parts.path.endswith("/") or parts.path.count("/") < 2:
            return Check(type="url", params={"url": _with_base(base, ctx)})
        # /wiki/article/quic: the last segment names one item of many
        folder = base[: base.rindex("/") + 1]
        return Check(type="url", params={"url": _with_base(folder, ctx), "match": "prefix"})

    def _landmarks(self, ctx: Context, page: Observation, checks: list[Check]) -> list[Check]:
        """For vague triggers: the page's URL path plus a unique heading or control."""
        out = list(checks)
        if not any(c.type == "url" for c in out):
            out.insert(0, self._url_landmark(ctx, page))
        if not any(c.type == "element" for c in out):
            stable = _first_stable([s for h in page.headings for s in h.selectors[:1]])
            if stable is None:
                main = [e for e in page.elements if e.region == "main"] or page.elements
                stable = _first_stable([s for e in main for s in e.selectors])
            if stable is not None:
                out.append(
                    Check(type="element", params={"by": stable.by, "selector": stable.selector})
                )
        return out

    # ---------------------------------------------------------------- state selection

    def select_state(
        self,
        ctx: Context,
        page: Observation,
        candidates: list[StateSpec],
        *,
        only_verified: bool = False,
    ) -> StateSpec:
        """The state that applies; with ``only_verified``, only a state whose triggers
        all parse and hold (else :class:`Unresolved`, for an LLM to decide)."""
        verdicts = {spec.name: self._applies(ctx, page, spec) for spec in candidates}
        choice = self._choose(ctx, candidates, verdicts, only_verified)
        self.usage.builtin_steps += 1
        return choice

    def _choose(
        self,
        ctx: Context,
        candidates: list[StateSpec],
        verdicts: dict[str, str],
        only_verified: bool,
    ) -> StateSpec:
        # An end state passes the item: it is chosen only when all its triggers parse and
        # hold on this page, never on a guess (a wrong guess would be a false pass).
        guessed_ends = [s for s in candidates if s.end and verdicts[s.name] in ("unknown", "no")]
        candidates = [s for s in candidates if s not in guessed_ends]
        if not candidates:
            raise Unresolved(
                "the end state's triggers cannot be verified on this page: "
                + "; ".join(f"{s.name!r}: {', '.join(s.triggers)}" for s in guessed_ends)
                + " (write them literally: 'The page says ...', \"'text' is shown\")"
            )
        # Workflows are written in order: the state declared after the last one that ran
        # (the first, at the start) wins when its triggers may hold.
        upcoming = _next_in_order(candidates, ctx)
        verified = [s for s in candidates if verdicts[s.name] == "yes"]
        if upcoming is not None and verdicts[upcoming.name] == "yes":
            return upcoming
        if only_verified:
            if len(verified) == 1:
                return verified[0]
            if not verified and upcoming is not None and verdicts[upcoming.name] == "weak":
                return upcoming  # its triggers parse and hold, and nothing contradicts it
            raise Unresolved("no single state is verified by literal triggers")
        if upcoming is not None and verdicts[upcoming.name] != "no":
            return upcoming
        for level in ("yes", "weak", "unknown"):
            options = [s for s in candidates if verdicts[s.name] == level]
            if options:
                return _after_history(options, ctx)
        raise Unresolved(
            "no state's triggers hold on the page: "
            + "; ".join(
                f"{s.name!r}: {', '.join(s.triggers) or '(no triggers)'}" for s in candidates
            )
        )

    def _applies(self, ctx: Context, page: Observation, spec: StateSpec) -> str:
        """``yes`` (triggers parse and hold), ``weak`` (they hold only by landmarks taken
        from this very page), ``unknown`` (some do not parse) or ``no``."""
        if not spec.triggers:
            return "unknown"
        landmark = self._url_landmark(ctx, page)
        levels = set()
        for trigger in spec.triggers:
            try:
                checks = self._trigger(ctx, page, _literal(trigger, ctx)[0])
            except NotHolding:
                return "no"
            except Unresolved:
                levels.add("unknown")
                continue
            if not all(_holds_on(c, page, ctx) for c in checks):
                return "no"
            levels.add("weak" if landmark in checks else "yes")
        for level in ("unknown", "weak"):
            if level in levels:
                return level
        return "yes"


def _later(options: list[StateSpec], ctx: Context) -> list[StateSpec]:
    """``options`` declared after the last state that ran, in declared order."""
    if not ctx.history or ctx.history[-1] not in ctx.order:
        return options
    position = ctx.order.index(ctx.history[-1])
    return [s for s in options if s.name in ctx.order and ctx.order.index(s.name) > position]


def _next_in_order(candidates: list[StateSpec], ctx: Context) -> StateSpec | None:
    later = _later(candidates, ctx)
    return later[0] if later else None


def _after_history(options: list[StateSpec], ctx: Context) -> StateSpec:
    """Prefer the first option declared after the last state that ran."""
    later = _later(options, ctx)
    return later[0] if later else options[0]


def _holds_on(check: Check, page: Observation, ctx: Context) -> bool:
    """Cheap static verdict used to rank candidates; the recorder verifies in the page."""
    values = {**ctx.values, "base_url": ctx.base_url}
    p = {
        k: PLACEHOLDER.sub(lambda m: values.get(m[1], m[0]), v) if isinstance(v, str) else v
        for k, v in check.params.items()
    }
    url = str(p.get("url", ""))
    if check.type == "url":
        match = p.get("match", "exact")
        if match == "exact":
            return page.url == url
        if match == "prefix":
            return page.url.startswith(url)
        if match == "pattern":
            return re.search(url, page.url) is not None
        return url in page.url
    if check.type == "title":
        return str(p["title"]) in page.title
    if check.type == "text":
        return str(p["text"]) in page.text
    return True  # elements were resolved on this very page


def _first_stable(selectors: list[Selector]) -> Selector | None:
    return next((s for s in selectors if s.stable), None)


def _unique(checks: list[Check]) -> list[Check]:
    out: list[Check] = []
    for c in checks:
        if c not in out:
            out.append(c)
    return out


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


def _stats_logging(text: str) -> Action | None:
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


def _video_sampling(text: str) -> Action | None:
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


def _key_name(text: str) -> str:
    text = text.strip()
    if len(text) == 1:
        return text
    return "".join(w.capitalize() for w in text.split())
