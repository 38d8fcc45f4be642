"""Synthesis with any langchain-core chat model, in NetGent's three stages.

1. select the state prompt that applies to the page (history, URL, title, landmarks);
2. define triggers by choosing among candidate checks observed on the page, each of
   which holds now (elements: their unique selectors);
3. a web-agent loop per instruction: observe the numbered elements, the model picks an
   action, element and parameters, the recorder executes it, observe again, until the
   model says the instruction is done or the step limit is reached.

Each stage fills in its prompt (``synthesis/prompts``) and asks for an answer whose
choices are the ones on offer (:mod:`.answers`); the model is asked, its replies
validated and retried, and its calls and tokens counted by the model transport
(:mod:`.transport`). The default policy asks the builtin rules first
(:class:`~pytest_netgent.synthesis.tiered.TieredSynthesiser`).
"""

from __future__ import annotations

import contextlib
from functools import cache
from importlib import resources
from string import Template
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from ..workflow.automaton import CSS_ONLY, Action, Check
from ..workflow.messages import ActionOutput, Toolcall, format_context
from ..workflow.spec import StateSpec
from . import Context, Unresolved, Usage
from .answers import (
    ON_ELEMENT,
    action_output,
    instruction_answer,
    likeliest_first,
    relevant,
    secret_into_search,
    state_answer,
    suggested,
    trigger_answer,
)
from .candidates import candidate_checks, listing, short_of
from .elements import locator, previously
from .observation import Observation
from .transport import ChatTransport, Refused
from .triggers import TriggerReader
from .words import literal_form, templatise

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from . import Synthesiser


@cache
def prompt_template(name: str) -> Template:
    """A Markdown prompt template from ``synthesis/prompts``."""
    text = resources.files(__package__).joinpath("prompts", f"{name}.md").read_text("utf-8")
    return Template(text)


class LLMSynthesiser:
    """Synthesis by a langchain-core ``BaseChatModel``, asked through a
    :class:`~.transport.ChatTransport`."""

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
        self.transport = ChatTransport(
            model, retries=retries, images=images, max_calls=max_calls, max_tokens=max_tokens
        )
        """Asks the model, within the budget (``max_calls``, ``max_tokens``)."""
        self._reader = TriggerReader()
        self.max_elements = max_elements
        """Most page elements one action prompt lists (the instruction's likeliest)."""
        self.name = self.transport.name

    @property
    def model(self) -> BaseChatModel:
        """The chat model asked."""
        return self.transport.model

    @property
    def usage(self) -> Usage:
        """Stages resolved, model calls and tokens so far."""
        return self.transport.usage

    @property
    def vision(self) -> bool:
        """Whether page screenshots are sent to the model."""
        return self.transport.vision

    @property
    def retries(self) -> int:
        """Times an unusable answer is asked for again."""
        return self.transport.retries

    @retries.setter
    def retries(self, value: int) -> None:
        self.transport.retries = value

    @property
    def max_calls(self) -> int:
        """Most model calls this synthesiser makes (one item's budget)."""
        return self.transport.max_calls

    @max_calls.setter
    def max_calls(self, value: int) -> None:
        self.transport.max_calls = value

    @property
    def max_tokens(self) -> int:
        """Most tokens (in and out) this synthesiser spends."""
        return self.transport.max_tokens

    @max_tokens.setter
    def max_tokens(self, value: int) -> None:
        self.transport.max_tokens = value

    def _prompt(self, name: str, **fields: str) -> str:
        """The prompt ``name`` filled in. The answer's shape is shown by example, not as
        a JSON Schema: a small model copies a schema's titles and descriptions back as
        values; the schema itself goes to the backend, which decodes under it."""
        return prompt_template(name).substitute(**fields)

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
        chosen: StateSpec = self.transport.ask(
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
            page=described(ctx, page, " ".join(state.triggers)),
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

        checks: list[Check] = self.transport.ask(prompt, schema, ctx, page, accept)
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
            suggested=suggested(instruction),
            done=format_context(Toolcall(name=a.type, args=a.params) for a in done) or "(none yet)",
            failed="\n".join(f"- {ctx.redact(f)}" for f in ctx.failed[-3:]) or "(none)",
            before=previously(ctx),
            page=described(ctx, page, instruction),
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

        step: tuple[list[Action], bool] = self.transport.ask(prompt, schema, ctx, page, accept)
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


def described(ctx: Context, page: Observation, near: str = "") -> str:
    """The page as a prompt shows it (the parts sharing words with ``near`` kept first),
    the base URL written ``{base_url}`` (as the checks and actions a model picks keep it;
    a local site's port changes from run to run)."""
    text = page.describe(near)
    return text.replace(ctx.base_url, "{base_url}") if ctx.base_url else text


if TYPE_CHECKING:
    _implements: type[Synthesiser] = LLMSynthesiser
