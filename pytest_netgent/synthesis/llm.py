"""Synthesis with any langchain-core chat model, in NetGent's three stages.

1. select the state prompt that applies to the page (history, URL, title, landmarks);
2. define triggers by choosing among candidate checks observed on the page, each of
   which holds now (elements: their unique selectors);
3. a web-agent loop per instruction: observe the numbered elements, the model picks an
   action, element and parameters, the recorder executes it, observe again, until the
   model says the instruction is done or the step limit is reached.

Replies are validated with pydantic: through ``with_structured_output`` where the model
supports it, else by parsing JSON from the reply. Invalid replies are retried a bounded
number of times, then the step is :class:`~pytest_netgent.synthesis.Unresolved` with
what the model said. Every call and its tokens are counted in :attr:`usage`.

The :class:`TieredSynthesiser` asks the builtin rules first: the model is asked only
what they decline.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import weakref
from collections.abc import Callable
from functools import cache
from importlib import resources
from string import Template
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from ..errors import ModelError
from ..workflow.automaton import CSS_ONLY, Action, Check
from ..workflow.messages import ActionOutput, Toolcall, format_context
from ..workflow.spec import StateSpec
from . import Context, NothingApplies, Unresolved, Usage
from .answers import (
    ON_ELEMENT,
    action_output,
    instruction_answer,
    likeliest_first,
    relevant,
    secret_into_search,
    state_answer,
    trigger_answer,
)
from .builtin import BuiltinSynthesiser
from .candidates import candidate_checks, listing, short_of
from .elements import locator, previously
from .observation import Observation
from .triggers import TriggerReader
from .words import literal_form, templatise

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

Model = TypeVar("Model", bound=BaseModel)


class Refused(Exception):
    """An answer that validates but cannot be used; its message is shown to the model."""


class Overran(Exception):
    """A call outlived the time it was given (:func:`call_within`)."""


class _Unsupported(Exception):
    """A structured-output method the backend refused at run time: the next is tried."""


_METHODS = ("json_schema", "function_calling", "json_mode", "default", "plain")
"""Structured-output methods, in the order tried: a schema the backend decodes under
(a grammar, OpenAI's strict mode), a forced tool call, JSON mode, whatever the model
class picks, then plain text with the JSON read from it."""

_WORKING: dict[int, tuple[weakref.ref[Any], str]] = {}
"""The method that worked, per model object (models are made once a session); the weak
reference tells a model from a later one that got the id of a collected one."""


def _working(model: Any) -> str | None:
    entry = _WORKING.get(id(model))
    return entry[1] if entry is not None and entry[0]() is model else None


def _remember(model: Any, method: str) -> None:
    _WORKING[id(model)] = (weakref.ref(model), method)


def prefer_method(model: Any, method: str) -> None:
    """Ask ``model`` for structured output by ``method`` from its first call (one of
    ``json_schema``, ``function_calling``, ``json_mode``, ``default``, ``plain``), where
    it is known to be the one that works."""
    if method not in _METHODS:
        raise ValueError(f"unknown structured-output method {method!r}: one of {_METHODS}")
    _remember(model, method)


@cache
def prompt_template(name: str) -> Template:
    """A Markdown prompt template from ``synthesis/prompts``."""
    text = resources.files(__package__).joinpath("prompts", f"{name}.md").read_text("utf-8")
    return Template(text)


def _json_from(text: str) -> Any:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1)
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("no JSON object in the reply")
    return json.JSONDecoder().raw_decode(text[start:])[0]


def normalised(data: Any) -> Any:
    """NetGent's flat :class:`ActionOutput` (``action``, ``mmid``, ``params``) as the
    nested answer :func:`action_answer` asks for; anything else as it is."""
    if not isinstance(data, dict) or "action" not in data or "step" in data:
        return data
    step = {"action": data["action"], **(data.get("params") or {})}
    if data.get("mmid") is not None:
        step["mmid"] = data["mmid"]
    return {"reasoning": data.get("reasoning", ""), "step": step, "done": data.get("done", True)}


def _error_text(exc: Any) -> str:
    """A validation error whole, in a few lines, without pydantic's links."""
    lines = [
        line.strip()
        for line in str(exc).splitlines()
        if line.strip() and "errors.pydantic.dev" not in line
    ]
    return "; ".join(lines)[:1500] or type(exc).__name__


def _text(message: Any) -> str:
    content = getattr(message, "content", message)
    if isinstance(content, list):  # content blocks
        return " ".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def _said(raw: Any) -> str:
    """What a structured call's raw message said: its text, else its tool call's arguments."""
    said = _text(raw) if raw is not None else ""
    calls = getattr(raw, "tool_calls", None) or []
    if not said.strip() and calls:
        said = json.dumps(calls[0].get("args", {}))
    return said


def call_within(fn: Callable[[Any], Any], arg: Any, seconds: float | None) -> Any:
    """``fn(arg)``, or :class:`Overran` after ``seconds`` (the call is left to end
    on its own in a daemon thread: a model client cannot be interrupted from outside)."""
    if seconds is None:
        return fn(arg)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn(arg)
        except BaseException as exc:  # handed to the caller's thread as it is
            box["error"] = exc

    worker = threading.Thread(target=run, name="netgent-model-call", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise Overran(seconds)
    if "error" in box:
        raise box["error"]
    return box["value"]


class LLMSynthesiser:
    """Synthesis by a langchain-core ``BaseChatModel``."""

    def __init__(
        self,
        model: BaseChatModel,
        *,
        retries: int = 2,
        images: bool | None = None,
        max_calls: int = 100,
        max_tokens: int = 200_000,
        max_elements: int = 40,
    ) -> None:
        self.model = model
        self.retries = retries
        self._reader = TriggerReader()
        self.max_calls = max_calls
        """Most model calls this synthesiser makes (one item's budget)."""
        self.max_tokens = max_tokens
        """Most tokens (in and out) this synthesiser spends."""
        self.max_elements = max_elements
        """Most page elements one action prompt lists (the instruction's likeliest)."""
        profile = getattr(model, "profile", None) or {}
        self.vision = bool(profile.get("image_inputs")) if images is None else images
        """Whether page screenshots are sent (default: the model's profile says it
        accepts images)."""
        self.usage = Usage()
        self.name = _model_name(model)

    # ------------------------------------------------------------------ calling

    def ask(
        self,
        prompt: str,
        schema: type[Model],
        ctx: Context,
        page: Observation | None = None,
        accept: Callable[[Model], Any] | None = None,
    ) -> Any:
        """Send ``prompt`` (secrets redacted, with the page's screenshot for models that
        accept images) and return the validated ``schema`` answer, or what ``accept``
        makes of it. An answer that does not validate, or that ``accept`` refuses (raising
        :class:`Refused`), is shown to the model with the whole error and asked again, at
        most :attr:`retries` times; then :class:`Unresolved` with the last answer. Every
        invalid answer is counted in :attr:`usage`."""
        from langchain_core.messages import AIMessage, HumanMessage

        content: Any = ctx.redact(prompt)
        if self.vision and page is not None and page.screenshot:
            content = [
                {"type": "text", "text": content},
                {
                    "type": "image_url",
                    "image_url": {"url": f"data:image/png;base64,{page.screenshot}"},
                },
            ]
        messages: list[Any] = [HumanMessage(content)]
        said = ""
        for _attempt in range(self.retries + 1):
            self._within_budget(ctx)
            said, parsed, error = self._answer(messages, schema, ctx)
            if parsed is not None:
                try:
                    return accept(parsed) if accept is not None else parsed
                except Refused as exc:
                    error = str(exc)
            self.usage.invalid_answers += 1
            messages += [
                AIMessage(said or "(no answer)"),
                HumanMessage(
                    f"That answer cannot be used: {ctx.redact(error)}\nAnswer again with "
                    "one JSON object that fixes this, choosing only among the listed values."
                ),
            ]
        flat = " ".join(said.split())
        raise Unresolved(
            f"the model gave no usable {schema.__name__} in {self.retries + 1} answers; "
            f"last answer: {ctx.redact(flat)[:300]!r}"
        )

    def _answer(
        self, messages: list[Any], schema: type[Model], ctx: Context
    ) -> tuple[str, Model | None, str]:
        """One model call: what it said, the answer if it validates, else why not. The
        structured-output methods are tried in turn until one works for this model (a
        backend may refuse one at run time: llama.cpp's server answers HTTP 500 to
        ``json_schema``); the one that worked is kept for the model's later calls."""
        known = _working(self.model)
        methods = [known] if known is not None else list(_METHODS)
        refused: set[str] = set()
        for position, method in enumerate(methods):
            runnable = self._runnable(schema, method)
            if runnable is None:
                continue
            self.usage.llm_calls += 1
            last = position == len(methods) - 1
            try:
                out = self._invoke(runnable, messages, schema, ctx, last=last, refused=refused)
            except _Unsupported:
                continue
            _remember(self.model, method)
            if method == "plain":
                said = _text(out)
                self._count(out, messages, said)
                try:
                    return said, schema.model_validate(normalised(_json_from(said))), ""
                except (ValueError, ValidationError) as exc:
                    return said, None, _error_text(exc)
            raw = out.get("raw")
            said = _said(raw)
            self._count(raw, messages, said)
            parsed = out.get("parsed")
            if isinstance(parsed, schema):
                return said, parsed, ""
            try:  # a reply the method's parser missed (prose around it, a flat action)
                return said, schema.model_validate(normalised(_json_from(said))), ""
            except (ValueError, ValidationError) as exc:
                return said, None, _error_text(out.get("parsing_error") or exc)
        raise ModelError(f"the model {self.name} takes no structured output and no plain chat")

    def _runnable(self, schema: type[BaseModel], method: str) -> Any:
        """The model asked for ``schema`` by ``method`` (``plain``: the model itself, the
        JSON read from its text); None where the model does not offer that method."""
        if method == "plain":
            return self.model
        kwargs = {} if method == "default" else {"method": method}
        try:
            return self.model.with_structured_output(schema, include_raw=True, **kwargs)
        except (NotImplementedError, ValueError, TypeError):
            return None  # not this method (or none at all: a plain chat model)

    def _within_budget(self, ctx: Context) -> None:
        tokens = self.usage.input_tokens + self.usage.output_tokens
        if self.usage.llm_calls >= self.max_calls or tokens >= self.max_tokens:
            raise ModelError(
                f"the LLM budget of workflow {ctx.workflow!r} is spent ({self.usage.llm_calls} "
                f"calls, {tokens} tokens; limits {self.max_calls} calls, {self.max_tokens} "
                "tokens): the model keeps answering without reaching the end; check the "
                "state prompts, or raise --netgent-llm-calls / --netgent-llm-tokens"
            )

    def _invoke(
        self,
        runnable: Any,
        messages: list[Any],
        schema: type[BaseModel],
        ctx: Context,
        *,
        last: bool = True,
        refused: set[str] | None = None,
    ) -> Any:
        """One model call, within the time the workflow has left; whatever the model
        raises becomes a :class:`ModelError` that names the model and what it was asked
        (or :class:`_Unsupported` while other methods remain to be tried and the error
        is not one an earlier method met too)."""
        left = None if ctx.deadline is None else ctx.deadline - time.monotonic()
        if left is not None and left <= 0:
            raise ModelError(
                f"the workflow {ctx.workflow!r} ran out of time before the model was asked "
                f"for {schema.__name__}: raise the workflow's 'timeout'"
            )
        try:
            return call_within(runnable.invoke, messages, left)
        except Overran:
            raise ModelError(
                f"the model {self.name} gave no {schema.__name__} for workflow "
                f"{ctx.workflow!r} within the {left or 0:.0f}s the workflow had left: use a "
                "faster model, or raise the workflow's 'timeout'"
            ) from None
        except Exception as exc:  # any provider's own error, told with the model and question
            said = " ".join(str(exc).split())
            # another method may work where this one was refused; the same error twice
            # (a rate limit, a network error) is not about the method
            timed_out = "timeout" in type(exc).__name__.lower()
            if refused is not None and not last and not timed_out and said not in refused:
                refused.add(said)
                raise _Unsupported from None
            raise ModelError(
                f"the model {self.name} failed while answering {schema.__name__} for workflow "
                f"{ctx.workflow!r}: {type(exc).__name__}: {ctx.redact(said)[:1000]}"
            ) from None

    def _count(self, message: Any, messages: list[Any], said: str) -> None:
        """Tokens as the model reports them (LangChain's ``usage_metadata``, else the
        provider's ``token_usage``); estimated at 4 characters a token when it reports
        none, so that the token budget always holds."""
        meta = getattr(message, "usage_metadata", None) or {}
        sent, got = meta.get("input_tokens"), meta.get("output_tokens")
        if sent is None:
            usage = (getattr(message, "response_metadata", None) or {}).get("token_usage") or {}
            sent, got = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if sent is None:
            sent = sum(len(str(m.content)) for m in messages) // 4
            got = len(said) // 4
        self.usage.input_tokens += int(sent)
        self.usage.output_tokens += int(got or 0)

    def _prompt(self, name: str, **fields: str) -> str:
        """The prompt ``name`` filled in. The answer's shape is shown by example, not as
        a JSON Schema: a small model copies a schema's titles and descriptions back as
        values; the schema itself goes to the backend, which decodes under it."""
        return prompt_template(name).substitute(**fields)

    # ------------------------------------------------------------------ stages

    def select_state(
        self, ctx: Context, page: Observation, candidates: list[StateSpec]
    ) -> StateSpec:
        candidates = likeliest_first(candidates, ctx)
        states = "\n".join(
            f"- {s.name}: {s.description} Triggers: {'; '.join(s.triggers) or '-'}. "
            f"Actions: {'; '.join(s.actions) or '-'}."
            for s in candidates
        )
        schema = state_answer([s.name for s in candidates])
        prompt = self._prompt(
            "SELECT_STATE",
            workflow=ctx.workflow,
            description=ctx.description,
            states=states,
            history="\n".join(f"- {h}" for h in ctx.history) or "(none yet)",
            page=described(ctx, page),
        )
        by_name = {s.name: s for s in candidates}
        chosen: StateSpec = self.ask(
            prompt, schema, ctx, page, lambda answer: by_name[answer.model_dump()["state"]]
        )
        self.usage.llm_steps += 1
        return chosen

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        candidates = candidate_checks(ctx, page, " ".join([state.description, *state.triggers]))
        for trigger in state.triggers:  # the rules' own reading of a trigger, on offer too
            with contextlib.suppress(Unresolved):
                for check in self._reader.read(ctx, page, literal_form(trigger, ctx)[0]):
                    if check not in candidates.values():
                        candidates[f"c{len(candidates) + 1}"] = check
        schema = trigger_answer(list(candidates))
        prompt = self._prompt(
            "DEFINE_TRIGGERS",
            state=state.name,
            triggers="\n".join(f"- {t}" for t in state.triggers) or "- (none given)",
            candidates=listing(candidates, page),
            page=described(ctx, page),
        )
        if unfit := short_of(state, list(candidates.values()), page, ctx):
            # no choice among these checks could mean what the trigger says: not asked
            raise Unresolved(
                "; ".join(g.reason() for g in unfit)
                + ": none of the checks this page offers stands for those words"
            )

        def accept(answer: BaseModel) -> list[Check]:
            chosen = [candidates[c] for c in dict.fromkeys(answer.model_dump()["checks"])]
            # the same rule as the builtin's: the checks chosen stand for every word of
            # every trigger, or the answer is refused with the words left over
            if short := short_of(state, chosen, page, ctx):
                raise Refused(
                    "; ".join(g.reason() for g in short)
                    + ": add the checks that stand for those words"
                )
            return chosen

        checks: list[Check] = self.ask(prompt, schema, ctx, page, accept)
        self.usage.llm_steps += 1
        return checks

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        """One web-agent step: the next action for ``instruction`` and whether it ends it."""
        page = relevant(page, instruction, self.max_elements)
        values = "\n".join(f"{{{k}}} = {v}" for k, v in ctx.values.items())
        values += "".join(f"\n{{{name}}} = (secret, never shown)" for name in ctx.secrets)
        schema = instruction_answer(page, instruction, ctx.secrets)
        prompt = self._prompt(
            "ACTION",
            values=values or "(none)",
            state=state.name,
            instruction=instruction,
            done=format_context(Toolcall(name=a.type, args=a.params) for a in done) or "(none yet)",
            failed="\n".join(f"- {ctx.redact(f)}" for f in ctx.failed[-3:]) or "(none)",
            before=previously(ctx),
            page=described(ctx, page),
        )

        def accept(answer: BaseModel) -> tuple[list[Action], bool]:
            output = action_output(answer)
            if output.action == "terminate":
                if not done:
                    raise Refused(
                        f"'terminate' says instruction {instruction!r} is complete, but no "
                        "action was taken for it yet: choose the action that carries it out"
                    )
                return [], True
            return [self._to_action(ctx, page, output)], output.done

        step: tuple[list[Action], bool] = self.ask(prompt, schema, ctx, page, accept)
        if step[0]:
            self.usage.llm_steps += 1
        return step

    def _to_action(self, ctx: Context, page: Observation, output: ActionOutput) -> Action:
        params = {k: v for k, v in output.params.items() if k not in ("by", "selector")}
        for key in ("text", "url"):
            if isinstance(params.get(key), str):
                params[key] = templatise(params[key], ctx)
        if output.action == "navigate":
            url = str(params.get("url", ""))
            scheme = urlsplit(url).scheme.lower()
            if not (url.startswith("{base_url}") or scheme in ("http", "https")):
                # a data: or javascript: page would run what the model wrote, anywhere
                raise Refused(
                    f"the model chose to open {url[:60]!r}: only http(s) pages may be opened"
                )
        if output.action in ON_ELEMENT or output.mmid is not None:
            if output.mmid is None:
                raise Refused(f"the model gave no element for {output.action!r}")
            el = page.element(output.mmid)
            if el is None:
                raise Refused(f"the model chose element {output.mmid}, which is not listed")
            params.update(locator(el))
            by = params.pop("by") if output.action in CSS_ONLY else "css selector"
            if by != "css selector":  # play_video's selector is CSS by definition
                raise Refused(f"element {output.mmid} has no CSS selector")
            if output.action == "type" and (why := secret_into_search(ctx, params, el)):
                raise Refused(why)
            if el.box is not None and output.action == "click":
                params.setdefault("x", el.box.x)  # kept only as a last resort
                params.setdefault("y", el.box.y)
        try:
            return Action.model_validate({"type": output.action, "params": params})
        except ValidationError as exc:
            raise Refused(f"the model's {output.action!r} action is invalid: {exc}") from None


def described(ctx: Context, page: Observation) -> str:
    """The page as a prompt shows it, the base URL written ``{base_url}`` (as the checks
    and actions a model picks keep it; a local site's port changes from run to run)."""
    text = page.describe()
    return text.replace(ctx.base_url, "{base_url}") if ctx.base_url else text


def _model_name(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


class TieredSynthesiser:
    """Builtin rules first; only what they decline goes to the LLM. The builtin decides
    whatever it would decide alone (its landmarks for a vague trigger, the state declared
    next), so an item records at least as well as with the builtin alone."""

    def __init__(self, builtin: BuiltinSynthesiser, llm: LLMSynthesiser) -> None:
        self.builtin = builtin
        self.llm = llm
        self.name = llm.name
        self.vision = llm.vision

    @property
    def usage(self) -> Usage:
        """The builtin's and the LLM's counts together."""
        total = Usage()
        total.add(self.builtin.usage)
        total.add(self.llm.usage)
        return total

    def select_state(
        self, ctx: Context, page: Observation, candidates: list[StateSpec]
    ) -> StateSpec:
        try:
            return self.builtin.select_state(ctx, page, candidates)
        except NothingApplies:
            if ctx.looked < ctx.settle:
                raise  # the page may still be loading: read it again before asking
            return self.llm.select_state(ctx, page, candidates)
        except Unresolved:
            return self.llm.select_state(ctx, page, candidates)

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        try:
            return self.builtin.define_triggers(ctx, page, state)
        except Unresolved:
            return self.llm.define_triggers(ctx, page, state)

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        try:
            if done:  # the LLM started this instruction: it finishes it
                return self.llm.resolve_instruction(ctx, page, state, instruction, done)
            return self.builtin.resolve_instruction(ctx, page, state, instruction, done)
        except Unresolved:
            return self.llm.resolve_instruction(ctx, page, state, instruction, done)
