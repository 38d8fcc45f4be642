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

The :class:`TieredSynthesiser` asks the builtin rules first, so literal steps cost no
LLM call.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from string import Template
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, ValidationError

from ..errors import ModelError
from ..workflow.automaton import CSS_ONLY, Action, Check
from ..workflow.messages import ActionOutput, Toolcall, format_context
from ..workflow.spec import StateSpec
from . import Context, Unresolved, Usage
from .builtin import BuiltinSynthesiser
from .elements import locator
from .observation import Observation
from .words import templatise

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

Model = TypeVar("Model", bound=BaseModel)


class StateChoice(BaseModel):
    """Stage 1: which state applies."""

    state: str = Field(description="The name of the state that applies now, exactly.")
    reasoning: str = Field("", description="Why, in one sentence.")


class TriggerChoice(BaseModel):
    """Stage 2: which candidate checks recognise the state."""

    checks: list[str] = Field(description="Ids of the chosen candidate checks, e.g. ['c1'].")
    reasoning: str = Field("", description="Why, in one sentence.")


_ELEMENT_ACTIONS = {"click", "type", "select", "hover", "scroll_to", "play_video"}


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
    ) -> None:
        self.model = model
        self.retries = retries
        self.max_calls = max_calls
        """Most model calls this synthesiser makes (one item's budget)."""
        self.max_tokens = max_tokens
        """Most tokens (in and out) this synthesiser spends."""
        profile = getattr(model, "profile", None) or {}
        self.vision = bool(profile.get("image_inputs")) if images is None else images
        """Whether page screenshots are sent (default: the model's profile says it
        accepts images)."""
        self.usage = Usage()
        self.name = _model_name(model)

    # ------------------------------------------------------------------ calling

    def ask(
        self, prompt: str, schema: type[Model], ctx: Context, page: Observation | None = None
    ) -> Model:
        """Send ``prompt`` (secrets redacted, with the page's screenshot for models that
        accept images); a validated ``schema`` object, or :class:`Unresolved` after the
        retries."""
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
        structured = self._structured(schema)
        last = ""
        for _attempt in range(self.retries + 1):
            self._within_budget(ctx)
            self.usage.llm_calls += 1
            if structured is not None:
                out = self._invoke(structured, messages, schema, ctx)
                self._count(out.get("raw"))
                parsed = out.get("parsed")
                if isinstance(parsed, schema):
                    return parsed
                last = str(out.get("parsing_error") or out.get("raw"))
                error = last
            else:
                reply = self._invoke(self.model, messages, schema, ctx)
                self._count(reply)
                last = str(reply.content)
                try:
                    return schema.model_validate(_json_from(last))
                except (ValueError, ValidationError) as exc:
                    error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                messages += [
                    AIMessage(last),
                    HumanMessage(
                        f"That reply was not valid: {error}. Reply again with JSON only, "
                        "matching the schema."
                    ),
                ]
        said = last.strip().replace("\n", " ")
        raise Unresolved(
            f"the model gave no valid {schema.__name__} in {self.retries + 1} replies; "
            f"last reply: {said[:300]!r}"
        )

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
        self, runnable: Any, messages: list[Any], schema: type[BaseModel], ctx: Context
    ) -> Any:
        """One model call; whatever the model raises becomes a :class:`ModelError` that
        names the model and what it was asked."""
        try:
            return runnable.invoke(messages)
        except Exception as exc:  # any provider's own error, told with the model and question
            text = str(exc).strip().splitlines()
            raise ModelError(
                f"the model {self.name} failed while answering {schema.__name__} for workflow "
                f"{ctx.workflow!r}: {type(exc).__name__}: {ctx.redact(text[0]) if text else ''}"
            ) from None

    def _structured(self, schema: type[BaseModel]) -> Any:
        try:
            return self.model.with_structured_output(schema, include_raw=True)
        except NotImplementedError:
            return None  # plain chat model: JSON in the reply

    def _count(self, message: Any) -> None:
        meta = getattr(message, "usage_metadata", None) or {}
        self.usage.input_tokens += int(meta.get("input_tokens", 0))
        self.usage.output_tokens += int(meta.get("output_tokens", 0))

    def _prompt(self, name: str, schema: type[BaseModel], **fields: str) -> str:
        schema_text = json.dumps(schema.model_json_schema(), indent=1)
        return prompt_template(name).substitute(schema=schema_text, **fields)

    # ------------------------------------------------------------------ stages

    def select_state(
        self, ctx: Context, page: Observation, candidates: list[StateSpec]
    ) -> StateSpec:
        states = "\n".join(
            f"- {s.name}: {s.description} Triggers: {'; '.join(s.triggers) or '-'}. "
            f"Actions: {'; '.join(s.actions) or '-'}."
            for s in candidates
        )
        prompt = self._prompt(
            "SELECT_STATE",
            StateChoice,
            workflow=ctx.workflow,
            description=ctx.description,
            states=states,
            history="\n".join(f"- {h}" for h in ctx.history) or "(none yet)",
            page=page.describe(),
        )
        choice = self.ask(prompt, StateChoice, ctx, page)
        by_name = {s.name: s for s in candidates}
        if choice.state not in by_name:
            raise Unresolved(
                f"the model chose {choice.state!r}, which is not one of "
                + ", ".join(repr(n) for n in by_name)
            )
        self.usage.llm_steps += 1
        return by_name[choice.state]

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        candidates = candidate_checks(ctx, page)
        listing = "\n".join(f"{key}: {check.describe()}" for key, check in candidates.items())
        prompt = self._prompt(
            "DEFINE_TRIGGERS",
            TriggerChoice,
            state=state.name,
            triggers="\n".join(f"- {t}" for t in state.triggers) or "- (none given)",
            candidates=listing,
            page=page.describe(),
        )
        choice = self.ask(prompt, TriggerChoice, ctx, page)
        unknown = [c for c in choice.checks if c not in candidates]
        if unknown or not choice.checks:
            raise Unresolved(f"the model chose unknown or no candidate checks: {choice.checks}")
        self.usage.llm_steps += 1
        return [candidates[c] for c in choice.checks]

    def resolve_instruction(
        self,
        ctx: Context,
        page: Observation,
        state: StateSpec,
        instruction: str,
        done: list[Action],
    ) -> tuple[list[Action], bool]:
        """One web-agent step: the next action for ``instruction`` and whether it ends it."""
        values = "\n".join(f"{{{k}}} = {v}" for k, v in ctx.values.items())
        values += "".join(f"\n{{{name}}} = (secret, never shown)" for name in ctx.secrets)
        prompt = self._prompt(
            "ACTION",
            ActionOutput,
            values=values or "(none)",
            state=state.name,
            instruction=instruction,
            done=format_context(Toolcall(name=a.type, args=a.params) for a in done) or "(none yet)",
            page=page.describe(),
        )
        output = self.ask(prompt, ActionOutput, ctx, page)
        if output.action == "terminate":
            if not done:
                raise Unresolved(
                    f"the model ended instruction {instruction!r} before any action: "
                    f"{output.reasoning!r}"
                )
            return [], True
        action = self._to_action(ctx, page, output)
        self.usage.llm_steps += 1
        return [action], output.done

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
                raise Unresolved(
                    f"the model chose to open {url[:60]!r}: only http(s) pages may be opened"
                )
        if output.action in _ELEMENT_ACTIONS or output.mmid is not None:
            if output.mmid is None:
                raise Unresolved(f"the model gave no element for {output.action!r}")
            el = page.element(output.mmid)
            if el is None:
                raise Unresolved(f"the model chose element {output.mmid}, which is not listed")
            params.update(locator(el))
            by = params.pop("by") if output.action in CSS_ONLY else "css selector"
            if by != "css selector":  # play_video's selector is CSS by definition
                raise Unresolved(f"element {output.mmid} has no CSS selector")
            if el.box is not None and output.action == "click":
                params.setdefault("x", el.box.x)  # kept only as a last resort
                params.setdefault("y", el.box.y)
        try:
            return Action.model_validate({"type": output.action, "params": params})
        except ValidationError as exc:
            raise Unresolved(f"the model's {output.action!r} action is invalid: {exc}") from None


def candidate_checks(ctx: Context, page: Observation) -> dict[str, Check]:
    """Checks that hold on ``page``, numbered ``c1``, ``c2``... for the model to choose."""
    out: list[Check] = []
    url = templatise(page.url, ctx)
    out.append(Check(type="url", params={"url": url}))
    path = urlsplit(page.url).path
    if "?" in url:
        out.append(Check(type="url", params={"url": url.split("?")[0] + "?", "match": "prefix"}))
    elif path.count("/") >= 2 and not path.endswith("/"):
        folder = url[: url.rindex("/") + 1]
        out.append(Check(type="url", params={"url": folder, "match": "prefix"}))
    if page.title:
        out.append(Check(type="title", params={"title": page.title, "match": "exact"}))
    for heading in page.headings[:8]:
        if heading.selectors:
            sel = heading.selectors[0]
            out.append(Check(type="element", params={"by": sel.by, "selector": sel.selector}))
        out.append(Check(type="text", params={"text": heading.text}))
    for el in page.elements[:60]:
        loc = locator(el)
        loc.pop("index", None)
        out.append(Check(type="element", params=loc))
    unique: list[Check] = []
    for check in out:
        if check not in unique:
            unique.append(check)
    return {f"c{i}": c for i, c in enumerate(unique, 1)}


def _model_name(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


class TieredSynthesiser:
    """Builtin rules first; only what they cannot resolve goes to the LLM."""

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
            return self.builtin.select_state(ctx, page, candidates, only_verified=True)
        except Unresolved:
            return self.llm.select_state(ctx, page, candidates)

    def define_triggers(self, ctx: Context, page: Observation, state: StateSpec) -> list[Check]:
        try:
            return self.builtin.define_triggers(ctx, page, state, only_literal=True)
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
