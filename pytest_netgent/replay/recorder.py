"""Record mode: synthesise missing and stale states, heal broken ones, write the cache.

The engine replays the cached states that are still valid; when no state matches the
page (or a cached action finds nothing), the :class:`Recorder` asks the synthesiser which
state prompt applies, defines its triggers on the page (verified to hold there), and
resolves and executes its instructions one by one, observing the page before each. The
new state replaces the old one of its name; every other state is kept as it was. The
cache is written only after the workflow reached its end state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from ..browser.actions import ActionFailed
from ..errors import NetgentError
from ..synthesis import (
    Context,
    NothingApplies,
    NotOnPage,
    RecordReport,
    Synthesiser,
    Unresolved,
)
from ..synthesis.elements import with_alternatives
from ..synthesis.ends import also_where_made, end_guessed, skipped
from ..synthesis.observation import Observation, distinct_texts, observe
from ..synthesis.picks import Declined
from ..synthesis.words import pinned_url, varies_with
from ..workflow import store
from ..workflow.automaton import Action, Automaton, Check, State, Synthesis
from ..workflow.messages import ExecutedState, Message, Toolcall
from ..workflow.spec import StateSpec, Workflow
from .alternatives import from_alternatives
from .engine import Engine

if TYPE_CHECKING:
    from .run import RunResult

LOOK_AGAIN_S = 3.0
"""How long an instruction's target not on the page yet is looked for again."""

MODES = ("missing", "all", "propose")
"""``--netgent-record`` modes: synthesise what is missing or stale (the default),
ignore the cache, or heal into the artifacts folder and fail the item for review."""


class SynthesisFailed(NetgentError):
    """A state could not be synthesised; the cache is left untouched."""

    cause = "synthesis failure"


class StatesProposed(NetgentError):
    """``--netgent-record=propose`` healed the workflow into the artifacts folder."""


class _NotYet(SynthesisFailed):
    """The triggers synthesised from a page do not hold on it a moment later: the page
    was still changing (a kernel starting, a tab loading); looked at again until the
    state timeout."""


class Recorder:
    """The engine's :class:`~pytest_netgent.replay.engine.Healer` in record mode."""

    def __init__(
        self,
        workflow: Workflow,
        synthesiser: Synthesiser,
        ctx: Context,
        cached: set[str],
        settle: float = 1.0,
        agent_steps: int = 4,
        *,
        window: str = "",
    ) -> None:
        self.workflow = workflow
        self.synth = synthesiser
        self.ctx = ctx
        self.cached = cached
        self.settle = settle
        self.agent_steps = agent_steps
        # screenshots cost a round trip and tokens: only for models that accept images
        self.vision = bool(getattr(synthesiser, "vision", False))
        self.report = RecordReport(model=synthesiser.name)
        self.window = window
        """The browser window the states are recorded at (``1280x900``)."""
        self._waiting: tuple[int, float] = (-1, 0.0)
        """The step a wait for a state to apply began at, and when (see :meth:`_waited`)."""
        self.made_on: dict[str, str] = {}
        """The URL of the page each state made in this run was first made on."""
        self.made_from: dict[str, list[Observation]] = {}
        """The pages each state made in this run was made on (more than one for a state
        chosen again on another page), as synthesis saw them, the first first."""
        self.seen: Observation | None = None
        """The page synthesis looked at last."""
        self.declined: Declined | None = None
        """The instruction synthesis declined, if it did (the studio's step)."""
        self.context: list[Message] = []
        """What synthesis saw and did, as NetGent messages: the page at each observation
        (:class:`Metadata`, without screenshots), each action taken (:class:`Toolcall`,
        with its error if it failed) and each state made (:class:`ExecutedState`)."""

    @property
    def made(self) -> set[str]:
        """The states synthesised or healed in this run (the engine's report names them as
        synthesis failures, not UI drift)."""
        return self.report.made

    def _observe(self, engine: Engine) -> Observation:
        self.ctx.deadline = engine.t0 + engine.settings.timeout  # no model call outlives it
        page = self.seen = observe(engine.driver, screenshot=self.vision)
        meta = page.to_metadata(engine.result.steps)
        self.context.append(meta.model_copy(update={"screenshot": None}))
        return page

    # ------------------------------------------------------------------ Healer

    def no_match(self, engine: Engine) -> int | None:
        if engine.last_tick.net_error:
            # an error page (the site is down): nothing to learn there, and a state made
            # from it would be wrong; the engine's report says what the network said
            raise engine.page_error("no state can be recorded on a page that did not load")
        self.ctx.history = engine.result.states_visited
        self.ctx.looked = self._waited(engine)
        self.ctx.settle = engine.settings.state_timeout / 2
        try:
            page = self._observe(engine)
            candidates = self._candidates(engine)
            spec, checks = self._choose(page, candidates)
        except NothingApplies as exc:
            # a page still loading (a player starting, a kernel, an answer to come): ask
            # again until the state timeout, as replay waits for a state to match
            waited = self._waited(engine)
            if waited < engine.settings.state_timeout:
                return None
            raise self._failed(f"for {waited:.0f}s no cached state matched and", exc) from None
        except Unresolved as exc:
            raise self._failed("no cached state matches and", exc) from None
        try:
            index = self._adopt(engine, spec, page, checks)
        except _NotYet:
            if self._waited(engine) < engine.settings.state_timeout:
                return None  # the page changed since it was read: read it again
            raise
        assert index is not None  # strict: it holds, or SynthesisFailed was raised
        return index

    def _waited(self, engine: Engine) -> float:
        """Seconds since synthesis first looked at the page at this step: a state that
        ran since (cached or made) begins another wait."""
        now = time.monotonic()
        if self._waiting[0] != engine.result.steps:
            self._waiting = (engine.result.steps, now)
        return now - self._waiting[1]

    def _no_false_end(self, page: Observation, candidates: list[StateSpec]) -> StateSpec:
        """The state the synthesiser picks; it is asked for again without it when taking
        it is a guess: an end state nothing here confirms
        (:func:`~..synthesis.ends.end_guessed`), or any state that would skip one this
        page shows (:func:`~..synthesis.ends.skipped`)."""

        def guessed(spec: StateSpec) -> str:
            if getattr(self.synth, "vouched", "") == spec.name:
                return ""  # a person said which state this page is
            if spec.end and end_guessed(self.ctx, page, spec, candidates, self.made_from):
                return "ends the workflow and nothing on this page confirms its triggers"
            if not spec.end and (shown := skipped(self.ctx, page, spec, candidates)):
                return f"would skip {shown!r}, which this page shows"
            return ""

        spec = self.synth.select_state(self.ctx, page, candidates)
        if not guessed(spec):
            return spec
        rest = [c for c in candidates if c.name != spec.name]
        again = self.synth.select_state(self.ctx, page, rest) if rest else spec
        if why := guessed(again):
            raise Unresolved(f"the state chosen, {again.name!r}, {why}")
        return again

    def _choose(
        self, page: Observation, candidates: list[StateSpec]
    ) -> tuple[StateSpec, list[Check]]:
        """The state the synthesiser picks for ``page``, and its checks. A state made
        earlier in this run keeps only checks its first page passed too (else replay
        loses that page: :func:`~..synthesis.ends.also_where_made`), and each page it was
        chosen on since; with none, the synthesiser is asked again without it."""
        while True:
            spec = self._no_false_end(page, candidates)
            checks = self.synth.define_triggers(self.ctx, page, spec)
            before = self.made_from.get(spec.name, [])
            if not before or getattr(self.synth, "vouched", "") == spec.name:
                return spec, checks
            if kept := also_where_made(self.ctx, checks, before):
                return spec, kept
            candidates = [c for c in candidates if c.name != spec.name]
            if not candidates:
                raise Unresolved(
                    f"state {spec.name!r}, made on {', '.join(b.url for b in before)}, was "
                    f"chosen again here, and none of its checks for this page holds there: "
                    f"{[c.describe() for c in checks]}"
                )

    def preempt(self, engine: Engine, index: int) -> int | None:
        matched = self.workflow.state(engine.states[index].name)
        if matched is None:
            return None
        compiled = {s.name for s in engine.states}
        position = self.workflow.states.index(matched)
        earlier = [s for s in self.workflow.states[:position] if s.name not in compiled]
        again = matched.name in self.made and not (matched.repeat or matched.continuous)
        url = engine.last_tick.href
        if again and any(
            e.event == "state" and e.state == matched.name and e.url == url
            for e in engine.result.timeline
        ):
            # back where it already ran (its own actions may have led there): a loop,
            # unless a state not compiled yet applies
            return self._break_loop(engine, matched, compiled, url)
        if again and engine.result.states_visited[-1:] == [matched.name]:
            # a state made in this run fires again on the page its own actions led to:
            # if the state declared next applies here instead, its checks were not
            # exclusive (taking it strengthens them, see _exclusive)
            later = [s for s in self.workflow.states[position + 1 :] if s.name not in compiled]
            earlier += later[:1]
        if not earlier:
            return None  # the usual case once states exist: no cost
        self.ctx.history = engine.result.states_visited
        self.ctx.looked = self._waited(engine)
        self.ctx.settle = engine.settings.state_timeout / 2
        try:
            page = self._observe(engine)
            spec = self.synth.select_state(self.ctx, page, [*earlier, matched])
            if spec.name == matched.name:
                return None
            checks = self.synth.define_triggers(self.ctx, page, spec)
        except Unresolved:
            return None  # undecided: the compiled state fires, as in replay
        return self._adopt(engine, spec, page, checks, strict=False)

    def _break_loop(
        self, engine: Engine, matched: StateSpec, compiled: set[str], url: str
    ) -> int | None:
        """State ``matched``, made in this run, would run again on ``url`` where it ran
        before: take the state not compiled yet that applies there (``matched`` is not
        offered: it would loop), or fail naming them (a recording never loops until its
        timeout)."""
        pending = [s for s in self.workflow.states if s.name not in compiled]
        self.ctx.history = engine.result.states_visited
        why = ""
        try:
            page = self._observe(engine)
            spec = self._no_false_end(page, pending) if pending else matched
            if spec.name != matched.name:
                checks = self.synth.define_triggers(self.ctx, page, spec)
                index = self._adopt(engine, spec, page, checks, strict=False)
                if index is not None:
                    return index
        except Unresolved as exc:
            why = f": {exc}"
        names = ", ".join(repr(s.name) for s in pending) or "none"
        raise SynthesisFailed(
            f"state {matched.name!r} would run again on {url}, where it already ran (a "
            f"loop); the states not synthesised yet ({names}) could not be verified on "
            f"this page{why}. Write their triggers literally (\"The page says '...'\", "
            "\"The URL contains '...'\"), or give the state 'repeat' if it is meant to run "
            "again"
        )

    def _adopt(
        self,
        engine: Engine,
        spec: StateSpec,
        page: Observation,
        checks: list[Check],
        *,
        strict: bool = True,
    ) -> int | None:
        """Make ``spec`` a state with ``checks`` (verified in the page) and run it; checks
        that do not hold fail the synthesis, or with ``strict=False`` give ``None``.
        Checks that carry this item's value of a parameter are left out: they would not
        hold for the workflow's other items."""
        said = " ".join([spec.description, *spec.triggers])
        varying = {c.describe(): varies_with(c.params, self.ctx, said) for c in checks}
        checks = [c for c in checks if varying[c.describe()] is None]
        if not checks:
            if not strict:
                return None
            raise SynthesisFailed(
                f"the triggers synthesised for state {spec.name!r} on {page.url} hold only "
                f"for this item's value of {', '.join(sorted(set(filter(None, varying.values()))))}"
                ": describe what the page shows for every value (a heading, the search box)"
            )
        state = State(
            name=spec.name,
            description=spec.description,
            checks=checks,
            end_state=spec.end,
            repeat=spec.engine_repeat,
            prompt_hash=spec.prompt_hash(),
        )
        held = engine.evaluate_now([state])
        if not (held.ok and held.results and all(ok for ok, _ in held.results[0])):
            if not strict:
                return None
            raise _NotYet(
                f"the triggers synthesised for state {spec.name!r} do not hold on "
                f"{page.url}: {[c.describe() for c in checks]}"
            )
        self._exclusive(engine, spec, page)
        state = self._apart_from_later(engine, spec, state, page)
        self.made_on.setdefault(spec.name, page.url)
        self.made_from.setdefault(spec.name, []).append(page)
        return self._act(engine, spec, state)

    def _exclusive(self, engine: Engine, spec: StateSpec, page: Observation) -> None:
        """States made in this run and declared before ``spec`` whose checks also hold on
        ``spec``'s page, another URL than their own, would take that page in replay (the
        first declared wins): pin each to the exact URL it was made on."""
        order = [s.name for s in self.workflow.states]
        if spec.name not in order:
            return
        mine = order.index(spec.name)
        tick = engine.evaluate_now()
        if not tick.ok:
            return
        for i in tick.matched:
            other = engine.states[i]
            if other.name not in order or order.index(other.name) > mine:
                continue  # declared later: this state wins the page in replay
            made_on = self.made_on.get(other.name)
            if other.name not in self.made or made_on is None:
                continue  # the user's own cached state: theirs to keep
            if len({b.url for b in self.made_from.get(other.name, [])}) > 1:
                continue  # made on several addresses: no one URL pins it (replay judges)
            if made_on == page.url:
                # the state whose actions led here is not tried again until the page
                # changes; one made earlier on this address would take the page in replay
                if other.name not in engine.result.states_visited[-1:]:
                    self._tell_apart(engine, other, spec.name, page)
                continue
            pinned = [c for c in other.checks if c.type != "url"]
            pinned.insert(0, pinned_url(self.ctx, made_on))
            url = pinned[0].params["url"]
            engine.put_state(other.model_copy(update={"checks": pinned}))
            engine.event(
                "record",
                state=other.name,
                url=page.url,
                detail=f"pinned to {url}: its checks also held on the page of {spec.name!r}",
            )

    def _tell_apart(self, engine: Engine, other: State, name: str, page: Observation) -> None:
        """On one address (a single-page app), state ``other``, made in this run and
        declared before state ``name``, also holds on ``name``'s page: in replay it would
        take that page. Add to it a text its own page showed and this one does not."""
        before = self.made_from.get(other.name)
        if not before:
            return
        for literal, check in self._text_checks(distinct_texts(before[0], page)):
            trial = other.model_copy(update={"checks": [*other.checks, check]})
            held = engine.evaluate_now([trial])
            if held.ok and held.results and not all(ok for ok, _ in held.results[0]):
                engine.put_state(trial)
                engine.event(
                    "record",
                    state=other.name,
                    url=page.url,
                    detail=f"told apart from {name!r} by its text {literal!r}",
                )
                return

    def _apart_from_later(
        self, engine: Engine, spec: StateSpec, state: State, page: Observation
    ) -> State:
        """``spec``, declared before states made earlier in this run on the same address
        (a single-page app: an end state found after the form that leads to it), takes
        a text this page shows and theirs did not, or in replay it would take their page."""
        order = [s.name for s in self.workflow.states]
        mine = order.index(spec.name) if spec.name in order else len(order)
        for name, pages in self.made_from.items():
            here = [b for b in pages if b.url == page.url]
            if name not in order or order.index(name) < mine or not here:
                continue
            for literal, check in self._text_checks(distinct_texts(page, here[0])):
                trial = state.model_copy(update={"checks": [*state.checks, check]})
                held = engine.evaluate_now([trial])
                if held.ok and held.results and all(ok for ok, _ in held.results[0]):
                    engine.event(
                        "record",
                        state=spec.name,
                        url=page.url,
                        detail=f"told apart from {name!r} by its text {literal!r}",
                    )
                    state = trial
                    break
        return state

    def _text_checks(self, texts: list[str]) -> Iterator[tuple[str, Check]]:
        """A text check for each of ``texts`` (a var's value written as its placeholder),
        none for a text that shows a secret."""
        for literal in texts:
            if self.ctx.redact(literal) != literal:
                continue  # a secret shown on the page never goes into a check
            text = literal
            for key, value in sorted(self.ctx.values.items(), key=lambda p: -len(p[1])):
                if len(value) >= 3:
                    text = text.replace(value, "{" + key + "}")
            yield literal, Check(type="text", params={"text": text})

    def action_failed(self, engine: Engine, index: int, error: ActionFailed) -> int:
        old = engine.states[index]
        spec = self.workflow.state(old.name)
        if spec is None:
            raise error
        if (healed := from_alternatives(engine, index, self.report.healed)) is not None:
            return healed  # its element's other locators, stored with it, still hold
        # Its checks matched, so only the actions are resynthesised, on this page.
        state = old.model_copy(update={"actions": [], "prompt_hash": spec.prompt_hash()})
        engine.event("failure", state=old.name, detail=f"healing: {error}")
        return self._act(engine, spec, state)

    # ------------------------------------------------------------------ helpers

    def _candidates(self, engine: Engine) -> list[StateSpec]:
        tick = engine.evaluate_now()
        last = engine.last_tick
        same_page = tick.ok and (tick.doc, tick.href) == (last.doc, last.href)
        return [
            s
            for s in self.workflow.states
            if not (same_page and s.name == engine.last_state and not s.repeat)
        ]

    def _act(self, engine: Engine, spec: StateSpec, state: State) -> int:
        engine.event("state", state=spec.name, url=engine.last_tick.href, detail="synthesising")
        # a cached state healed: what it did before guides synthesis to the same elements
        self.ctx.before = [a for s in engine.states if s.name == spec.name for a in s.actions]
        try:
            return self._act_on(engine, spec, state)
        finally:
            self.ctx.before = []

    def _act_on(self, engine: Engine, spec: StateSpec, state: State) -> int:
        actions: list[Action] = []
        for number, instruction in enumerate(spec.actions, 1):
            taken: list[Action] = []
            self.ctx.failed = []
            finished = False
            for _step in range(self.agent_steps):
                try:
                    resolved, finished = self._resolve(engine, spec, instruction, taken)
                except Unresolved as exc:
                    self.declined = Declined(spec.name, number, instruction, exc, self.seen)
                    raise self._failed(
                        f"state {spec.name!r}, instruction {number} ({instruction!r}):", exc
                    ) from None
                try:
                    self._run(engine, spec.name, resolved, actions, taken)
                except ActionFailed as exc:
                    # an action synthesis chose that the page refuses is a wrong choice,
                    # not UI drift: the synthesiser is told, and the step taken again
                    self.ctx.failed.append(str(exc))
                    finished = False
                    continue
                if finished:
                    break
            if not finished:
                tried = [a.describe() for a in taken] + self.ctx.failed
                raise SynthesisFailed(
                    f"state {spec.name!r}, instruction {number} ({instruction!r}) was not "
                    f"finished in {self.agent_steps} agent steps: " + "; ".join(tried)
                )
        state = state.model_copy(update={"actions": actions})
        self.context.append(
            ExecutedState(
                timestamp=engine.result.steps,
                name=state.name,
                description=state.description,
                checks=[c.model_dump(mode="json") for c in state.checks],
                actions=[a.model_dump(mode="json") for a in state.actions],
            )
        )
        made = self.report.healed if spec.name in self.cached else self.report.synthesised
        if spec.name not in made:  # made again (a loop broken, a wrong guess undone)
            made.append(spec.name)
        return engine.put_state(state)

    def _resolve(
        self, engine: Engine, spec: StateSpec, instruction: str, taken: list[Action]
    ) -> tuple[list[Action], bool]:
        """The synthesiser's actions for ``instruction`` on the page as it is now; what it
        names and the page does not show yet is looked for again, for a few seconds (a
        list loading, controls fading in)."""
        until = time.monotonic() + min(LOOK_AGAIN_S, engine.settings.state_timeout)
        while True:
            page = self._observe(engine)
            try:
                return self.synth.resolve_instruction(self.ctx, page, spec, instruction, taken)
            except NotOnPage:
                if time.monotonic() >= until:
                    raise
                time.sleep(0.3)

    def _run(
        self,
        engine: Engine,
        name: str,
        resolved: list[Action],
        actions: list[Action],
        taken: list[Action],
    ) -> None:
        """Run the actions synthesis chose for state ``name``; each one that ran joins
        ``actions`` (the state's) and ``taken`` (the instruction's)."""
        for action in resolved:
            call = Toolcall(name=action.type, args=dict(action.params))
            try:
                engine.run_action(name, len(actions) + 1, action)
            except Exception as exc:  # noted in the context the model sees, then raised
                self.context.append(call.model_copy(update={"error": str(exc)}))
                raise
            self.context.append(call)
            # the state keeps its element's other locators, for a heal without synthesis
            actions.append(with_alternatives(action, self.seen, self.ctx) if self.seen else action)
            taken.append(action)

    def _failed(self, what: str, exc: Unresolved) -> SynthesisFailed:
        if self.declined is None:  # no state recognised: the studio asks which it is
            names = [s.name for s in self.workflow.states]
            self.declined = Declined("", 0, "", exc, self.seen, names)
        return SynthesisFailed(
            f"{what} the {self.synth.name} synthesiser could not decide: {exc.reason}"
        )

    # ------------------------------------------------------------------ the cache

    def document(self, engine: Engine, previous: Automaton | None) -> Automaton:
        """The cache document after a passing run: states in declared order."""
        by_name = {s.name: s for s in engine.states}
        states = []
        for spec in self.workflow.states:
            state = by_name.get(spec.name)
            if state is None and previous is not None:
                state = previous.state(spec.name)
            if state is not None:
                states.append(_scrubbed(state, self.ctx.redact))
        usage = self.synth.usage
        return Automaton(
            workflow=self.workflow.name,
            prompt_hash=self.workflow.prompt_hash(),
            window=self.window,
            states=states,
            synthesis=Synthesis(
                model=self.synth.name,
                llm_calls=usage.llm_calls,
                at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            ),
        )


def _scrubbed(state: State, redact: Callable[[str], str]) -> State:
    """``state`` with every secret value in its checks and actions (a URL check the
    page's address gave, in any encoding) written back as its ``{name}``."""
    text = state.model_dump_json()
    clean = redact(text)
    return state if clean == text else State.model_validate_json(clean)


def save(
    recorder: Recorder,
    engine: Engine,
    result: RunResult,
    previous: Automaton | None,
    path: Path,
    mode: str,
    proposal: Path,
) -> None:
    """Write the cache (or the proposal) after a run that reached its end state."""
    if not result.passed:
        return
    report = recorder.report
    if not report.changed:
        return  # nothing new: leave the file byte for byte as it is, trusted ones too
    doc = recorder.document(engine, previous)
    if mode == "propose":
        store.write(proposal, doc)
        report.proposed = str(proposal)
        return
    # Read-modify-write under the lock: only the states this run made replace the file's.
    order = [spec.name for spec in recorder.workflow.states]
    store.write(path, doc, changed={*report.synthesised, *report.healed}, order=order)
    report.written = str(path)
