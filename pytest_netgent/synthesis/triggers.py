"""The builtin trigger rules: a state's triggers become the checks that recognise it.

"The URL contains /watch", "the page says 'Saved'", "the Like button is pressed", "a
video is playing", "the 'QUIC' heading is shown": each reading parses the whole
sentence, finds what it names on the observed page, and gives checks that stand for
all its words (:mod:`.grounding`); a trigger that reads and does not hold raises
:class:`NotHolding`, one that does not read or would not be grounded :class:`Unresolved`.
A state's checks are those of all its triggers (:meth:`TriggerReader.state_checks`).
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import urlsplit

from ..browser.session import NETGENT_START_PAGE, START_PAGES
from ..workflow.automaton import Check
from ..workflow.spec import PLACEHOLDER, StateSpec
from . import Context, Unresolved
from .clauses import clauses
from .counts import WrongCount, count_trigger
from .elements import heading_for, locate, locator, resolve
from .grounding import ground, names_only, shown_words
from .media import NoMedia, media_trigger
from .observation import Observation, ObservedElement, Selector
from .perceived import NotShown, perceived_trigger
from .places import NoSuchThing, parse_place, placed
from .statuses import OtherStatus, status_trigger
from .words import (
    SHOWN,
    Target,
    literal_form,
    parse_target,
    restore,
    templatise,
    unquote,
    with_base,
)


class NotHolding(Unresolved):
    """A trigger that parses but does not hold on the page (the state does not apply)."""


class TriggerReader:
    """Reads triggers into checks (see the module's doc); it keeps no state."""

    def state_checks(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        """Checks for ``state``'s triggers, each trigger grounded whole by them (see
        :mod:`.grounding`); a trigger these rules do not read, or whose checks would not
        stand for all its words, raises :class:`Unresolved` naming those words (a model,
        when there is one, decides it), never a guess from the page's landmarks."""
        checks: list[Check] = []
        vague: list[str] = []
        for trigger in state.triggers:
            literal, back = literal_form(trigger, ctx)
            try:
                checks += [
                    c.model_copy(update={"params": restore(c.params, back)})
                    for c in self.read(ctx, page, literal)
                ]
            except NotHolding:
                raise  # the state does not apply to this page: say so, do not guess
            except Unresolved as exc:
                vague.append(exc.reason)
        if vague or not checks:
            raise Unresolved(
                "; ".join(vague or [f"state {state.name!r} has no triggers"])
                + ". Write the trigger as the page says it (\"The page says '...'\", "
                "\"The URL contains '...'\", \"The 'Sign in' button is shown\")"
            )
        landmark = self.url_landmark(ctx, page)
        if any(c.type == "url" and c != landmark for c in checks):
            # a URL trigger was written: it replaces the URL this page would pin
            checks = [c for c in checks if c != landmark]
        return _unique(checks)

    def read(self, ctx: Context, page: Observation, text: str) -> list[Check]:
        """Checks for one trigger (its placeholders filled) that stand for all its words;
        :class:`NotHolding` when it reads and does not hold, :class:`Unresolved` when it
        does not read or would not be grounded. A trigger of several sentences ("... and
        ...") that does not read whole is read clause by clause (:mod:`.clauses`): every
        clause must read, or the sentence's own reason is given."""
        text = re.sub(r"^(if|when|once)\s+", "", text.strip().rstrip("."), flags=re.I)
        try:
            return self._sentence(ctx, page, text)
        except NotHolding:
            raise
        except Unresolved as whole:
            parts = clauses(text)
            if parts is None:
                raise
            try:
                return _unique([c for part in parts for c in self.read(ctx, page, part)])
            except NotHolding:
                raise
            except Unresolved as part:
                raise Unresolved(f"{whole.reason}; read clause by clause: {part.reason}") from None

    def _sentence(self, ctx: Context, page: Observation, text: str) -> list[Check]:
        """:meth:`read` of one sentence."""
        try:
            readings = (media_trigger, count_trigger, status_trigger)
            if check := next(filter(None, (read(text, page) for read in readings)), None):
                return [check]  # these readings parse the whole sentence: nothing is left
        except (NoMedia, WrongCount, OtherStatus) as exc:
            raise NotHolding(str(exc)) from None
        if page.aria and (perceived := self._perceived(text, page)) is not None:
            checks, granted = [perceived[0]], perceived[1]
            if ground(text, checks, page, granted=granted, values=check_values(ctx)).whole:
                return checks
        for parse in (
            self._address_trigger,
            self._place_trigger,
            self._words_trigger,
            self._element_trigger,
        ):
            if (reading := parse(ctx, page, text)) is not None:
                checks, granted = reading if isinstance(reading, tuple) else (reading, set())
                grounding = ground(text, checks, page, granted=granted, values=check_values(ctx))
                if grounding.whole:
                    return checks
                if (pinned := self._said_by_page(ctx, page, text, checks, granted)) is not None:
                    return pinned
                raise Unresolved(grounding.reason())
        raise Unresolved(
            f"not a literal trigger: {text!r} (not grounded: no reading of these rules "
            "gives checks that stand for its words)"
        )

    def _address_trigger(
        self, ctx: Context, page: Observation, text: str
    ) -> list[Check] | tuple[list[Check], set[str]] | None:
        """The page's URL or title: "the URL contains /watch", "the title is Home"; the
        browser's own blank page, where NetGent's workflows start ("If the browser shows
        a blank page"): the start page, whichever the browser shows."""
        if re.fullmatch(
            r"(?:the )?(?:browser|tab|window|page|screen)(?: (?:shows|displays|is on|has|is))?"
            r" (?:a |an |the )?(?:blank|empty|new)(?: (?:tab|page|window))?",
            text,
            re.I,
        ):
            if page.url not in START_PAGES:
                raise NotHolding(f"the browser shows {page.url}, not a blank page")
            return [self.url_landmark(ctx, page)], set(text.split())
        if m := re.fullmatch(r"(?:the )?(?:page )?url (?:is|equals) (.+)", text, re.I):
            value, quoted = unquote(m[1])
            if quoted or value.startswith(("http", "/", "{")):
                return [Check(type="url", params={"url": with_base(value, ctx)})]
            return self._described_url(ctx, page, text)
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
                value = with_base(value, ctx)
            return [Check(type="url", params={"url": value, "match": match})]
        if m := re.fullmatch(
            r"(?:the )?(?:page )?title (is|equals|contains|includes|has|mentions) (.+)", text, re.I
        ):
            match = "exact" if m[1].lower() in ("is", "equals") else "contains"
            return [Check(type="title", params={"title": unquote(m[2])[0], "match": match})]
        if m := re.fullmatch(
            r"(?:the )?(?:page|tab|window|document) is (?:titled|called|named) (.+)", text, re.I
        ):
            titled = self._titled(page, unquote(m[1])[0])
            return (titled, {"titled", "called", "named"}) if titled else None
        return None

    @staticmethod
    def _titled(page: Observation, title: str) -> list[Check] | None:
        """ "The page is titled Shop": the document's title, as a whole or a part of it,
        in the page's own letter case (the check compares as written); None when the
        title does not hold it (the other readings may find it, a heading say)."""
        shown = " ".join(page.title.split())
        said = " ".join(title.split())
        at = shown.casefold().find(said.casefold())
        if said and at >= 0 and len(shown.casefold()) == len(shown):
            part = shown[at : at + len(said)]
            match = "exact" if part == page.title else "contains"
            return [Check(type="title", params={"title": part, "match": match})]
        return None

    def _described_url(self, ctx: Context, page: Observation, text: str) -> list[Check]:
        """ "The URL is the dashboard": this page's address, with what it does not say of
        the description said by the page itself (see :meth:`_said_by_page`)."""
        landmark = self.url_landmark(ctx, page)
        return self._said_by_page(ctx, page, text, [landmark], set()) or [landmark]

    def _said_by_page(
        self, ctx: Context, page: Observation, text: str, checks: list[Check], granted: set[str]
    ) -> list[Check] | None:
        """``checks`` with what they do not say of ``text`` said by the page as a whole:
        its address ("the search results" on ``/search``; "the cities table" on
        ``/atlas/cities``, its exact path), its title ("the Django administration login
        form": the title "Log in | Django site admin"), its main heading; each added only
        for words it stands for. ``None`` when the words are not all stood for so."""
        values = check_values(ctx)
        added: list[Check] = []
        left = ground(text, checks, page, granted=granted, values=values).missing
        exact = templatise(page.url.split("?")[0].split("#")[0], ctx)
        pins: list[Check | None] = [
            self.url_landmark(ctx, page),
            Check(type="url", params={"url": exact}),
        ]
        for heading in page.headings[:3]:
            if not heading.selectors:
                continue
            sel = heading.selectors[0]
            if not sel.stable and " >> " not in sel.selector:  # the heading by its words
                sel = Selector(
                    by="xpath",
                    selector=f"//{heading.tag}[normalize-space()={_xq(heading.text)}]",
                    stable=True,
                )
            pins.append(Check(type="element", params={"by": sel.by, "selector": sel.selector}))
        pins += [self._title_words(page, w) for w in left]
        if names := shown_words(left, page):
            # the names as the page writes them, in a row ("Django administration")
            run = r"\W+".join(re.escape(w) for w in names)
            if found := re.search(rf"(?<!\w){run}(?!\w)", page.text):
                pins.append(Check(type="text", params={"text": templatise(found[0], ctx)}))
        for pin in pins:
            if not left:
                break
            if pin is None or pin in checks or pin in added:
                continue
            if pin.type != "url" and not names_only(left):
                # the address says what the page is ("/wiki/article/"); a kind, a state or
                # a count left over is the thing's own checks' to say (a heading elsewhere
                # is not "the article titled 'QUIC'"), or nothing's
                return None
            fewer = ground(text, [*added, pin, *checks], page, granted=granted, values=values)
            if len(fewer.missing) < len(left):
                added, left = [*added, pin], fewer.missing
        return None if left else [*added, *checks]

    @staticmethod
    def _title_words(page: Observation, word: str) -> Check | None:
        """A title check for ``word`` as the page's title writes it, if it does."""
        found = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", page.title, re.I)
        return (
            Check(type="title", params={"title": found[0], "match": "contains"}) if found else None
        )

    def _place_trigger(
        self, ctx: Context, page: Observation, text: str
    ) -> tuple[list[Check], set[str]] | None:
        """Words by a thing: "the caption under the table says 24 of 24 towns"
        (:mod:`.places`); the words are this page's or the state does not apply."""
        if not page.aria or (place := parse_place(text)) is None:
            return None
        said = self._text(ctx, page, place.said, exact_word=True)
        values = check_values(ctx)
        shown = PLACEHOLDER.sub(lambda m: values.get(m[1], m[0]), str(said.params["text"]))
        try:
            thing, granted = placed(place, shown, page)
        except NoSuchThing as exc:
            raise NotHolding(exc.reason) from None
        return [said, thing], granted

    def _words_trigger(self, ctx: Context, page: Observation, text: str) -> list[Check] | None:
        """Words on the page: "the page says X", "the banner shows 'Saved'"."""
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
            r"""(?:the |a |an )?[\w' ]+? (?:says|shows|displays|reads|confirms) (?:that )?(.+)""",
            text,
            re.I,
        ):
            # "A message says the group was added successfully": the longest run of its
            # words the page shows (three at least); else another reading may apply (a
            # number the page does not show: the state does not apply, see _text)
            try:
                run = self._text(ctx, page, m[1], least=3)
            except NotHolding:
                raise
            except Unresolved:
                pass
            else:
                # and each other name of the sentence the page shows ("group"): its words,
                # never a kind, a count, a state or a negation (see shown_words)
                left = ground(text, [run], page, values=check_values(ctx)).missing
                return [
                    run,
                    *(Check(type="text", params={"text": w}) for w in shown_words(left, page)),
                ]
        if m := re.fullmatch(
            r"""(?:the )?([\w' ]+?) (?:is|are|equals) (-?\d[\d.,]*%?|["'“‘].+["'”’])""",
            text,
            re.I,
        ):
            # a value by its label ("Towns shown is 4", a metric): the label as the page
            # writes it, then the value; a label the page does not show is no such reading
            label = r"\W+".join(re.escape(w) for w in m[1].split())
            if re.search(rf"(?<!\w){label}(?!\w)", page.text, re.I):
                return [self._text(ctx, page, f"{m[1]} {unquote(m[2])[0]}")]
        if m := re.fullmatch(
            r"""(["'“‘].+["'”’])(?: text)? (?:is|are) (?:shown|visible|displayed|present)""",
            text,
            re.I,
        ):
            return [self._text(ctx, page, m[1])]
        return None

    @staticmethod
    def _perceived(text: str, page: Observation) -> tuple[Check, set[str]] | None:
        """An element's state or value as the page model reads it (:mod:`.perceived`);
        None where that reading does not apply (the attribute readings may)."""
        try:
            return perceived_trigger(text, page)
        except NotShown as exc:
            raise NotHolding(exc.reason) from None
        except Unresolved:
            return None

    def _element_trigger(
        self, ctx: Context, page: Observation, text: str
    ) -> tuple[list[Check], set[str]] | None:
        """An element, or its state: "the Like button is pressed", "a video is shown";
        the checks, and the words of the sentence the reading itself stands for."""
        if m := re.fullmatch(
            r"(?:the )?(.+?) (shows|indicates|says|tells) (?:that )?([\w' ]+?) (?:is|are) "
            r"(not )?(pressed|selected|checked|liked|active)",
            text,
            re.I,
        ):
            # "The Like button shows the article is liked": the state its element carries
            el = resolve(parse_target(m[1]), page)
            check = self._state_check(el, m[5].lower(), negative=bool(m[4]))
            return [check], {m[2], m[5], *(m[4] or "").split(), *m[3].split()}
        if m := re.fullmatch(
            r"(?:the )?(.+?) (?:is|are) (not )?(pressed|selected|checked|liked|active)", text, re.I
        ):
            el = resolve(parse_target(m[1]), page)
            check = self._state_check(el, m[3].lower(), negative=bool(m[2]))
            return [check], {m[3], *(m[2] or "").split()}
        if m := re.fullmatch(
            rf"(at least one |some |any )(.+?) (?:is|are) {SHOWN}",
            text.lower(),
        ):
            target = parse_target(m[2])
            target.ordinal = 0
            loc = locate(target, page)
            loc.pop("index", None)
            return [Check(type="element", params=loc)], set(m[1].split())
        if m := re.fullmatch(
            rf"(?:the |a |an )?(.+?) (?:is|are) {SHOWN}|(?:the |a |an )?(.+?) appears?",
            text,
            re.I,
        ):
            return self._shown(ctx, page, (m[1] or m[2]).strip(), text), set()
        return None

    def _shown(self, ctx: Context, page: Observation, name: str, said: str) -> list[Check]:
        """Checks that the element ``name`` is shown, grounding the whole trigger ``said``
        (see :mod:`.grounding`): the element, else its words (a name or a number), else a
        heading by that name; the first of these that stands for all of ``said``."""
        target = parse_target(name)
        readings: list[list[Check]] = []
        why: list[str] = []
        if target.role != "heading":
            try:
                readings.append(self._element_reading(ctx, page, target))
            except Unresolved as exc:
                if target.role:
                    raise
                why.append(exc.reason)
            if re.fullmatch(r"[A-Z0-9][\w.-]*(?: [A-Z0-9][\w.-]*){0,2}", name):
                # a name or number ("Ruritania is listed", "City 001 is shown"): the
                # words on the page, or the state does not apply here
                readings.append([self._text(ctx, page, f"'{name}'")])
        with contextlib.suppress(Unresolved):
            readings.append(self._heading_reading(ctx, page, target))
        # the page itself, by its address, where that says every word ("the homepage" on
        # the browser's start page, "the wiki home page" on /wiki/)
        readings.append([self.url_landmark(ctx, page)])
        for checks in readings:
            grounding = ground(said, checks, page, values=check_values(ctx))
            if grounding.whole:
                return checks
            # "the search result", "the user's avatar": what the element's words do not
            # say, the page's address or title may ("/search", "/users/4/")
            if (pinned := self._said_by_page(ctx, page, said, checks, set())) is not None:
                return pinned
            why.append(grounding.reason())
        raise Unresolved("; ".join(dict.fromkeys(why)) or f"nothing on the page is {name!r}")

    def _element_reading(self, ctx: Context, page: Observation, target: Target) -> list[Check]:
        el = resolve(target, page)
        loc = locator(el)
        loc.pop("index", None)
        check = Check(type="element", params=loc)
        if el.chrome:  # on every page of the site: pin this one by its URL
            return [self.url_landmark(ctx, page), check]
        return [check]

    def _heading_reading(self, ctx: Context, page: Observation, target: Target) -> list[Check]:
        heading, named = heading_for(target, page)
        if not heading.selectors:
            raise Unresolved(f"no selector for heading {heading.text!r}")
        sel = heading.selectors[0]
        if named and not sel.stable and " >> " not in sel.selector:
            # the heading the trigger names, by its words (the page's other headings are
            # its content: never taken by their words unasked)
            sel = Selector(
                by="xpath",
                selector=f"//{heading.tag}[normalize-space()={_xq(heading.text)}]",
                stable=True,
            )
        check = Check(type="element", params={"by": sel.by, "selector": sel.selector})
        if not (sel.stable and named):  # "a heading" says little: pin the page by URL
            return [self.url_landmark(ctx, page), check]
        return [check]

    def _text(
        self,
        ctx: Context,
        page: Observation,
        phrase: str,
        *,
        exact_word: bool = False,
        least: int = 2,
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
        words = [
            w.strip("'")
            for w in re.findall(r"[\w']+", value)
            if w.lower() not in {"there", "are", "is"}
        ]
        numbered = any(c.isdigit() for w in words for c in w)
        if numbered:
            # a number is a value: the words with it, or the page does not say them (yet:
            # a count that is still to update)
            least = len(words)
        for size in range(len(words), max(2, min(least, len(words))) - 1, -1):
            for start in range(len(words) - size + 1):
                # the words in this order, whatever the page puts between them (quotes,
                # "=", a line break): "100 rows where country = \"Genovia\""
                piece = r"\W+".join(re.escape(w) for w in words[start : start + size])
                found = re.search(rf"(?<!\w){piece}(?!\w)", body, re.I)
                if found:
                    return Check(type="text", params={"text": found.group(0)})
        if numbered:
            raise NotHolding(f"the page does not say {value!r}")
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

    def url_landmark(self, ctx: Context, page: Observation) -> Check:
        """The check that pins ``page``'s address as it stands for the state: the start
        page, a record's path with any id, a prefix for one item of many."""
        parts = urlsplit(page.url)
        if page.url in START_PAGES:
            # written as NetGent writes it, so the repository also replays in NetGent; here
            # it holds on whichever start page the browser shows (see checks.js)
            return Check(type="url", params={"url": NETGENT_START_PAGE})
        if not parts.netloc:
            return Check(type="url", params={"url": page.url})
        segments = parts.path.split("/")
        if any(map(_is_id, segments)):
            # /admin/auth/user/4/change/: the record's number is this item's, any will do
            path = "/".join("[^/]+" if _is_id(seg) else re.escape(seg) for seg in segments)
            return Check(type="url", params={"url": f"{path}(?:[?#]|$)", "match": "pattern"})
        base = f"{parts.scheme}://{parts.netloc}{parts.path}"
        if parts.query:
            return Check(type="url", params={"url": with_base(base + "?", ctx), "match": "prefix"})
        if parts.path.endswith("/") or parts.path.count("/") < 2:
            return Check(type="url", params={"url": with_base(base, ctx)})
        # /wiki/article/quic: the last segment names one item of many
        folder = base[: base.rindex("/") + 1]
        return Check(type="url", params={"url": with_base(folder, ctx), "match": "prefix"})


def _unique(checks: list[Check]) -> list[Check]:
    """``checks`` without repeats, in their order (checks are not hashable)."""
    return [c for i, c in enumerate(checks) if c not in checks[:i]]


def check_values(ctx: Context) -> dict[str, str]:
    """What the placeholders of a check synthesised for ``ctx`` stand for."""
    return {**ctx.values, "base_url": ctx.base_url}


def _xq(text: str) -> str:
    """``text`` as an XPath string literal."""
    if "'" not in text:
        return f"'{text}'"
    if '"' not in text:
        return f'"{text}"'
    return "concat(" + ', "\'", '.join(f"'{part}'" for part in text.split("'")) + ")"


def _is_id(segment: str) -> bool:
    """A path segment naming one record: a number, or a hexadecimal id or UUID."""
    return segment.isdigit() or bool(
        re.fullmatch(r"[0-9a-f]{8,}(?:-[0-9a-f]{4,})*", segment, re.I) and re.search(r"\d", segment)
    )
