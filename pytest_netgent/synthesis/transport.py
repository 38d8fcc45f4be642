"""Model transport: asking a langchain-core chat model for an answer that validates.

An answer is a pydantic model: asked for through ``with_structured_output`` by the
first method the backend takes (a schema it decodes under, a forced tool call, JSON
mode, the model class's default), else read as JSON from the reply's text. The method
that worked is kept for the model's later calls. An answer that does not validate, or
that the caller refuses (:class:`Refused`), is shown to the model with the whole error
and asked again a bounded number of times; then the step is
:class:`~pytest_netgent.synthesis.Unresolved` with what the model said. Every call and
its tokens are counted in a :class:`~pytest_netgent.synthesis.Usage`, within a budget of
calls and tokens and the time the workflow has left.
"""

from __future__ import annotations

import json
import re
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import ModelError
from . import Context, Unresolved, Usage
from .observation import Observation

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


class ChatTransport:
    """Asks one chat model for validated answers, within a budget (see the module's doc)."""

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
        """Times an unusable answer is asked for again."""
        self.max_calls = max_calls
        """Most model calls made through this transport (one item's budget)."""
        self.max_tokens = max_tokens
        """Most tokens (in and out) spent through this transport."""
        profile = getattr(model, "profile", None) or {}
        self.vision = bool(profile.get("image_inputs")) if images is None else images
        """Whether page screenshots are sent (default: the model's profile says it
        accepts images)."""
        self.usage = Usage()
        self.name = _model_name(model)

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


def _model_name(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
