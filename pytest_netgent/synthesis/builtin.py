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

from ..browser.session import NETGENT_START_PAGE, START_PAGES
from ..workflow.automaton import Action, Check
from ..workflow.spec import PLACEHOLDER, StateSpec
from . import Context, NothingApplies, Unresolved, Usage
from .elements import element_kind, locate, locator, resolve
from .grounding import ground
from .observation import Observation, ObservedElement
from .triggers import NotHolding, TriggerReader, check_values
from .waits import wait_actions
from .words import (
    KEY_NAMES,
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


class BuiltinSynthesiser(TriggerReader):
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
        if (waits := wait_actions(text, page)) is not None:  # "Watch for 10 seconds"
            return waits
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

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
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
        self.usage.builtin_steps += 1
        return _unique(checks)

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
        read: list[tuple[str, str, str]] = []
        for trigger in spec.triggers:
            try:
                checks = self.read(ctx, page, literal_form(trigger, ctx)[0])
            except NotHolding as exc:
                return [*read, (trigger, "no", f"{trigger!r}: {exc.reason}")]
            except Unresolved as exc:
                read.append((trigger, "unknown", f"{trigger!r}: {exc.reason}"))
                continue
            if failing := [c.describe() for c in checks if not holds_on(c, page, ctx)]:
                return [*read, (trigger, "no", f"{trigger!r}: {', '.join(failing)} does not hold")]
            read.append(
                (trigger, "weak" if self._pinned(ctx, page, trigger, checks) else "yes", trigger)
            )
        return read

    def _pinned(self, ctx: Context, page: Observation, trigger: str, checks: list[Check]) -> bool:
        """Whether ``checks`` hold on ``page`` partly by its own address, a pin that says
        none of ``trigger``'s words (the other checks stand for them all): such a trigger
        holds on this page because it was read here."""
        landmark = self.url_landmark(ctx, page)
        if landmark not in checks:
            return False
        rest = [c for c in checks if c != landmark]
        text = literal_form(trigger, ctx)[0]
        return not rest or ground(text, rest, page, values=check_values(ctx)).whole

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
        if url == NETGENT_START_PAGE and match == "exact":
            return href in START_PAGES  # whichever start page the browser shows (checks.js)
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


def _unique(checks: list[Check]) -> list[Check]:
    """``checks`` without repeats, in their order (checks are not hashable)."""
    return [c for i, c in enumerate(checks) if c not in checks[:i]]
