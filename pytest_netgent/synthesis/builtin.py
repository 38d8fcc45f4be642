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

import contextlib
import re
from urllib.parse import urlsplit

from ..browser.session import NETGENT_START_PAGE, START_PAGES
from ..workflow.automaton import Action, Check
from ..workflow.spec import PLACEHOLDER, StateSpec
from . import Context, NothingApplies, Unresolved, Usage
from .counts import WrongCount, count_trigger
from .elements import element_kind, first_stable, heading_for, locate, locator, resolve
from .media import NoMedia, media_trigger
from .observation import Observation, ObservedElement, Selector
from .statuses import OtherStatus, status_trigger
from .words import (
    KEY_NAMES,
    SHOWN,
    Target,
    canon,
    key_name,
    literal_form,
    parse_target,
    restore,
    stats_logging,
    templatise,
    unquote,
    video_sampling,
    webrtc_tracking,
    with_base,
)


class NotHolding(Unresolved):
    """A trigger that parses but does not hold on the page (the state does not apply)."""


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
        literal, back = literal_form(instruction.strip(), ctx)
        actions = [
            a.model_copy(update={"params": restore(a.params, back)})
            for a in self._actions(ctx, page, literal)
        ]
        self.usage.builtin_steps += 1
        return actions, True

    def _actions(self, ctx: Context, page: Observation, text: str) -> list[Action]:
        low = text.lower().rstrip(".")
        if re.fullmatch(r"(?:go|navigate) back|back", low):
            return [Action(type="go_back", params={})]
        if m := re.fullmatch(r"(?:navigate|go|open|visit|browse)(?: to)? (\S+)", text, re.I):
            return [Action(type="navigate", params={"url": with_base(unquote(m[1])[0], ctx)})]
        if m := re.fullmatch(
            r"wait(?: for)? ([\d.]+) ?(ms|milliseconds?|s|secs?|seconds?|minutes?|mins?)?", low
        ):
            unit = m[2] or "s"
            factor = 0.001 if unit.startswith(("ms", "milli")) else 60.0 if unit[0] == "m" else 1.0
            seconds = float(m[1]) * factor
            return [Action(type="wait", params={"seconds": seconds})]
        if stats := stats_logging(text):
            return [stats]
        if sampling := video_sampling(low):
            return [sampling]
        if webrtc := webrtc_tracking(text):
            return [webrtc]
        if m := re.fullmatch(rf"press(?: the)? ({KEY_NAMES})(?: keys?)?(?: in (.+))?", low):
            params: dict[str, object] = {"key": key_name(m[1])}
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
        return self._element_actions(ctx, page, text)

    def _element_actions(self, ctx: Context, page: Observation, text: str) -> list[Action]:
        """Instructions that name an element: type, search, select, hover, switch, click."""
        low = text.lower().rstrip(".")
        if m := re.fullmatch(
            r"(?:search(?: for)?|look up) (.+?)(?: (?:in|on|using|with) (the .+))?", text, re.I
        ):
            # a search is typed into the page's search field (or the one named) and sent
            value = templatise(unquote(m[1])[0], ctx)
            loc = locate(parse_target(m[2] or "the search box"), page, want="text")
            return [
                Action(type="type", params={**loc, "text": value}),
                Action(type="press_key", params={"key": "Enter"}),
            ]
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
        menus = [e for e in page.elements if element_kind(e) == "select"]
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
            literal, back = literal_form(trigger, ctx)
            try:
                checks += [
                    c.model_copy(update={"params": restore(c.params, back)})
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
        try:
            readings = (media_trigger, count_trigger, status_trigger)
            if check := next(filter(None, (read(text, page) for read in readings)), None):
                return [check]
        except (NoMedia, WrongCount, OtherStatus) as exc:
            raise NotHolding(str(exc)) from None
        for parse in (self._address_trigger, self._words_trigger, self._element_trigger):
            if (checks := parse(ctx, page, text)) is not None:
                return checks
        raise Unresolved(f"not a literal trigger: {text!r}")

    def _address_trigger(self, ctx: Context, page: Observation, text: str) -> list[Check] | None:
        """The page's URL or title: "the URL contains /watch", "the title is Home"."""
        if m := re.fullmatch(r"(?:the )?(?:page )?url (?:is|equals) (.+)", text, re.I):
            value, quoted = unquote(m[1])
            if quoted or value.startswith(("http", "/", "{")):
                return [Check(type="url", params={"url": with_base(value, ctx)})]
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
                value = with_base(value, ctx)
            return [Check(type="url", params={"url": value, "match": match})]
        if m := re.fullmatch(
            r"(?:the )?(?:page )?title (is|equals|contains|includes|has|mentions) (.+)", text, re.I
        ):
            match = "exact" if m[1].lower() in ("is", "equals") else "contains"
            return [Check(type="title", params={"title": unquote(m[2])[0], "match": match})]
        return None

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
            # words the page shows (three at least); else another reading may apply
            with contextlib.suppress(NotHolding, Unresolved):
                return [self._text(ctx, page, m[1], least=3)]
        if m := re.fullmatch(
            r"""(["'“‘].+["'”’])(?: text)? (?:is|are) (?:shown|visible|displayed|present)""",
            text,
            re.I,
        ):
            return [self._text(ctx, page, m[1])]
        return None

    def _element_trigger(self, ctx: Context, page: Observation, text: str) -> list[Check] | None:
        """An element, or its state: "the Like button is pressed", "a video is shown"."""
        if m := re.fullmatch(
            r"(?:the )?(.+?) (?:is|are) (not )?(pressed|selected|checked|liked|active)", text, re.I
        ):
            el = resolve(parse_target(m[1]), page)
            return [self._state_check(el, m[3].lower(), negative=bool(m[2]))]
        if m := re.fullmatch(
            rf"(?:at least one |some |any )(.+?) (?:is|are) {SHOWN}",
            text.lower(),
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
            return self._shown(ctx, page, (m[1] or m[2]).strip())
        return None

    def _shown(self, ctx: Context, page: Observation, name: str) -> list[Check]:
        """Checks that the element ``name`` is shown: the element, else its words (a name
        or a number), else a heading by that name."""
        target = parse_target(name)
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
                if re.fullmatch(r"[A-Z0-9][\w.-]*(?: [A-Z0-9][\w.-]*){0,2}", name):
                    # a name or number ("Ruritania is listed", "City 001 is shown"):
                    # the words on the page, or the state does not apply here
                    return [self._text(ctx, page, f"'{name}'")]
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
            return [self._url_landmark(ctx, page), check]
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
        words = [w for w in re.findall(r"[\w']+", value) if w.lower() not in {"there", "are", "is"}]
        for size in range(len(words), max(2, min(least, len(words))) - 1, -1):
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

    def _landmarks(self, ctx: Context, page: Observation, checks: list[Check]) -> list[Check]:
        """For vague triggers: the page's URL path plus a unique heading or control."""
        out = list(checks)
        if not any(c.type == "url" for c in out):
            out.insert(0, self._url_landmark(ctx, page))
        if not any(c.type == "element" for c in out):
            stable = first_stable([s for h in page.headings for s in h.selectors[:1]])
            if stable is None:
                main = [e for e in page.elements if e.region == "main"] or page.elements
                stable = first_stable([s for e in main for s in e.selectors])
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
    ) -> StateSpec:
        """The state that applies (:class:`NothingApplies` when none does, or when a
        guess would run a state again while the page may still settle)."""
        verdicts = {spec.name: self._applies(ctx, page, spec) for spec in candidates}
        choice = self._choose(ctx, page, candidates, verdicts)
        self.usage.builtin_steps += 1
        return choice

    def _choose(
        self,
        ctx: Context,
        page: Observation,
        candidates: list[StateSpec],
        verdicts: dict[str, tuple[str, str]],
    ) -> StateSpec:
        level = {name: verdict for name, (verdict, _) in verdicts.items()}
        # An end state passes the item: it is chosen only when its triggers hold on this
        # page (all, or those that parse), never on a guess (that would be a false pass).
        guessed_ends = [s for s in candidates if s.end and level[s.name] in ("unknown", "no")]
        rest = [s for s in candidates if s not in guessed_ends]
        weighed = "; ".join(
            f"{s.name!r} ({level[s.name]}{', an end state' if s.end else ''}: "
            f"{verdicts[s.name][1]})"
            for s in candidates
        )
        # Workflows are written in order: the state declared after the last one that ran
        # (the first, at the start) wins when its triggers may hold.
        upcoming = _next_in_order(rest, ctx)
        if upcoming is not None and level[upcoming.name] == "yes":
            return upcoming
        if upcoming is not None and level[upcoming.name] != "no":
            # unless none of its triggers could be read and a state declared later is
            # verified (its triggers hold, all or those that parse)
            later = _later(rest, ctx)
            better = [s for v in ("yes", "partial") for s in later if level[s.name] == v]
            return better[0] if level[upcoming.name] == "unknown" and better else upcoming
        for verdict in ("yes", "partial", "weak", "unknown"):
            options = [s for s in rest if level[s.name] == verdict]
            if options:
                choice = _after_history(options, ctx)
                back = ctx.history and choice not in _later(candidates, ctx)
                if verdict != "yes" and back and ctx.looked < ctx.settle:
                    raise NothingApplies(
                        f"{choice.name!r} would run again on {page.url} ({verdict}) while "
                        f"the page may still settle; weighed {weighed}"
                    )
                return choice
        raise NothingApplies(
            f"no state applies on {page.url}; weighed {weighed} (an end state is taken only "
            "when its triggers hold: write them literally, \"The page says '...'\")"
        )

    def verdict(self, ctx: Context, page: Observation, spec: StateSpec) -> str:
        """Whether ``spec``'s triggers hold on ``page``, as far as these rules read them:
        ``yes``, ``partial``, ``weak``, ``unknown`` or ``no`` (see :meth:`_applies`)."""
        return self._applies(ctx, page, spec)[0]

    def confirmed(self, ctx: Context, page: Observation, spec: StateSpec) -> list[str]:
        """The triggers of ``spec`` that these rules read and that hold on ``page`` by
        what it shows (an address that holds only because it was taken from this very
        page confirms nothing); none if a trigger is read and does not hold."""
        read = self._read(ctx, page, spec)
        if any(level == "no" for _, level, _ in read):
            return []
        return [trigger for trigger, level, _ in read if level == "yes"]

    def _read(self, ctx: Context, page: Observation, spec: StateSpec) -> list[tuple[str, str, str]]:
        """Each trigger of ``spec`` as read on ``page``, with why: ``yes`` (it holds),
        ``weak`` (only by this very page's address), ``unknown`` (it does not parse) or
        ``no`` (it does not hold; the last one read)."""
        landmark = self._url_landmark(ctx, page)
        read: list[tuple[str, str, str]] = []
        for trigger in spec.triggers:
            try:
                checks = self._trigger(ctx, page, literal_form(trigger, ctx)[0])
            except NotHolding as exc:
                return [*read, (trigger, "no", f"{trigger!r}: {exc.reason}")]
            except Unresolved as exc:
                read.append((trigger, "unknown", f"{trigger!r}: {exc.reason}"))
                continue
            if failing := [c.describe() for c in checks if not holds_on(c, page, ctx)]:
                return [*read, (trigger, "no", f"{trigger!r}: {', '.join(failing)} does not hold")]
            read.append((trigger, "weak" if landmark in checks else "yes", trigger))
        return read

    def _applies(self, ctx: Context, page: Observation, spec: StateSpec) -> tuple[str, str]:
        """``yes`` (triggers parse and hold), ``partial`` (some hold, the others do not
        parse), ``weak`` (they hold only by landmarks taken from this very page),
        ``unknown`` (none parses) or ``no``; and why, naming the trigger."""
        if not spec.triggers:
            return "unknown", "it has no triggers"
        levels: dict[str, str] = {}
        for _, level, why in self._read(ctx, page, spec):
            if level == "no":
                return "no", why
            levels.setdefault(level, why)
        if "unknown" in levels:
            level = "partial" if "yes" in levels else "unknown"
            return level, f"{levels['unknown']}"
        if "weak" in levels:
            return "weak", f"{levels['weak']!r} holds only by this page's own address"
        return "yes", "its triggers hold"


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


def holds_on(check: Check, page: Observation, ctx: Context) -> bool:
    """Whether ``check`` holds on ``page`` as read (not in a browser): URL, title and text
    checks judged; any other (an element's) taken to hold, as synthesis found its element
    on that very page. Ranks candidates; the recorder verifies in the page."""
    values = {**ctx.values, "base_url": ctx.base_url}
    p = {
        k: PLACEHOLDER.sub(lambda m: values.get(m[1], m[0]), v) if isinstance(v, str) else v
        for k, v in check.params.items()
    }
    if check.type == "url":
        url, href, match = str(p["url"]), page.url, str(p.get("match", "exact"))
        if p.get("ignore_query") is True and match != "pattern":
            url, href = url.split("?")[0], href.split("?")[0]
        return _compare(href, url, match)
    if check.type == "title":
        return _compare(page.title, str(p["title"]), str(p.get("match", "contains")))
    if check.type == "text":
        return str(p["text"]) in page.text
    return True  # elements were resolved on this very page


def _compare(actual: str, expected: str, match: str) -> bool:
    """``actual`` against ``expected`` as the engine compares them (``checks.js``)."""
    if match == "exact":
        return actual == expected
    if match == "prefix":
        return actual.startswith(expected)
    if match == "pattern":
        return re.search(expected, actual) is not None
    return expected in actual


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


def _unique(checks: list[Check]) -> list[Check]:
    """``checks`` without repeats, in their order (checks are not hashable)."""
    return [c for i, c in enumerate(checks) if c not in checks[:i]]
