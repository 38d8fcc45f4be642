"""NetGent's Python SDK, on pytest-netgent's engine.

People who scripted NetGent keep their code::

    from pytest_netgent import NetGent, StatePrompt

    agent = NetGent(llm=llm, llm_enabled=True)          # generate (record)
    results = agent.run(state_prompts=prompts)
    agent = NetGent(llm=None, llm_enabled=False)        # replay a saved repository
    results = agent.run(state_prompts=[], state_repository=results.state_repository)

Config keys keep NetGent's meaning with event-driven defaults: ``action_period`` and
``transition_period`` (fixed pauses between actions and between states, default 0),
``recursion_limit`` (most states a run may take; a run in a continuous state that
reaches it ends normally, as in NetGent), ``allow_multiple_states``, ``state_timeout``,
and ``duration`` (seconds after which a run in a continuous state ends with success).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..browser.pool import BrowserPool
from ..browser.session import BrowserOptions
from ..errors import NetgentError
from ..replay.run import RunResult, RunSettings, TimelineEvent
from ..replay.wiring import Recording, run_states
from ..synthesis import Synthesiser, Usage, build_synthesiser
from ..system.redaction import Secret
from ..workflow.automaton import Automaton, State, parse_automaton
from ..workflow.messages import ExecutedState, Message, StatePrompt
from ..workflow.secrets import env_values
from ..workflow.spec import Workflow

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from selenium.webdriver.remote.webdriver import WebDriver

DEFAULT_CONFIG: dict[str, Any] = {
    "action_period": 0.0,
    "transition_period": 0.0,
    "recursion_limit": 200,
    "allow_multiple_states": True,
    "state_timeout": 10.0,
    "duration": None,
}


@dataclass
class NetGentResult:
    """What :meth:`NetGent.run` returns."""

    state_repository: list[dict[str, Any]]
    """The states after the run, in NetGent's repository format and field names (save it
    to replay it here or in NetGent)."""
    reached_end: bool
    end_state: str = ""
    final_url: str = ""
    timeline: list[TimelineEvent] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    """The parsed results of the run's measurement steps (``ping``, ``iperf``, ``ndt``,
    ``wget``), in order."""
    usage: Usage = field(default_factory=Usage)
    error: NetgentError | None = None
    context: list[Message] = field(default_factory=list)
    """What happened, as NetGent messages: when generating, what synthesis saw and did
    (:class:`Metadata`, :class:`Toolcall`, :class:`ExecutedState`); when replaying, an
    :class:`ExecutedState` per state that ran. Save it with
    :func:`~pytest_netgent.workflow.messages.save_context_to_file`."""


class NetGent:
    """Generate (``llm_enabled``) or replay a workflow of :class:`StatePrompt` states."""

    def __init__(
        self,
        llm: BaseChatModel | None = None,
        llm_enabled: bool = False,
        config: dict[str, Any] | None = None,
        user_data_dir: str | None = None,
        driver: WebDriver | None = None,
        *,
        headless: bool = True,
        credentials: dict[str, str] | None = None,
    ) -> None:
        unknown = set(config or {}) - set(DEFAULT_CONFIG)
        if unknown:
            raise NetgentError(
                f"unknown NetGent config keys {sorted(unknown)}: use {sorted(DEFAULT_CONFIG)}"
            )
        self.llm = llm
        self.llm_enabled = llm_enabled
        self.config = {**DEFAULT_CONFIG, **(config or {})}
        self.credentials = dict(credentials or {})
        self._driver = driver
        self._pool = BrowserPool(
            BrowserOptions(headless=headless, user_data_dir=str(user_data_dir or ""))
        )

    @property
    def driver(self) -> WebDriver:
        """The browser: the one given, or one started on first use."""
        return self._driver if self._driver is not None else self._pool.driver

    def close(self) -> None:
        """Stop the browser this object started (a given driver is left running)."""
        self._pool.close()

    def __enter__(self) -> NetGent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def synthesiser(self) -> Synthesiser:
        """Builtin rules, then the LLM when one is given."""
        return build_synthesiser(self.llm)

    def run(
        self,
        state_prompts: list[StatePrompt] | None = None,
        state_repository: list[dict[str, Any]] | dict[str, Any] | None = None,
        variables: Mapping[str, Any] | None = None,
        *,
        output_dir: str | Path | None = None,
    ) -> NetGentResult:
        """Replay ``state_repository``; with ``llm_enabled``, synthesise the states of
        ``state_prompts`` that it lacks (or that stop matching) on the way.

        ``state_repository`` is a list of states, or NetGent's ``{"state_repository":
        [...]}``. ``variables`` fill ``{name}`` and NetGent's ``%name%`` placeholders in
        prompts and states (for example ``{"base_url": "http://127.0.0.1:8000"}``);
        credentials fill theirs as secrets. ``output_dir`` is where relative output
        paths of actions (``start_stats_logging``) go; default: the current folder.
        """
        prompts = list(state_prompts or [])
        repository = _repository(state_repository)
        if not self.llm_enabled and not repository.states:
            raise NetgentError(
                "nothing to replay: pass state_repository=..., or llm_enabled=True with "
                "state_prompts to generate one"
            )
        if self.llm_enabled and not prompts:
            raise NetgentError("llm_enabled=True needs state_prompts to generate states from")
        values = {k: str(v) for k, v in (variables or {}).items()}
        settings = self._run_settings(output_dir)
        order = [p.name for p in prompts] or [s.name for s in repository.states]
        workflow = None
        if self.llm_enabled:
            workflow = Workflow.model_validate(
                {"name": "netgent", "states": [p.to_spec().model_dump() for p in prompts]}
            )
        secrets: dict[str, str | Secret] = {**self.credentials, **env_values(repository.states)}
        self._pool.secret_logs.add(secrets)
        wired = run_states(
            self.driver,
            "netgent",
            list(repository.states),
            values,
            secrets,
            settings,
            order=order,
            recording=None
            if workflow is None
            else Recording(
                workflow,
                self.synthesiser(),
                cached=frozenset(s.name for s in repository.states),
            ),
        )
        result, engine, recorder = wired.result, wired.engine, wired.recorder
        states = engine.states
        if recorder is not None:
            states = recorder.document(engine, repository).states
        return NetGentResult(
            state_repository=[s.to_netgent() for s in states],
            reached_end=result.passed,
            end_state=result.end_state,
            final_url=result.final_url,
            timeline=result.timeline,
            measurements=result.measurements,
            usage=recorder.synth.usage if recorder is not None else Usage(),
            error=result.error,
            context=recorder.context if recorder is not None else _executed(result, states),
        )

    def _run_settings(self, output_dir: str | Path | None) -> RunSettings:
        """NetGent's ``config`` as the engine takes it."""
        cfg = self.config
        return RunSettings(
            state_timeout=float(cfg["state_timeout"]),
            max_steps=int(cfg["recursion_limit"]),
            allow_multiple_states=bool(cfg["allow_multiple_states"]),
            action_period=float(cfg["action_period"]),
            transition_period=float(cfg["transition_period"]),
            duration=float(cfg["duration"]) if cfg["duration"] else None,
            output_dir=Path(output_dir) if output_dir is not None else None,
            # an undetected (SeleniumBase UC) browser's pages must not see fetch change
            watch_requests="seleniumbase" not in type(self.driver).__module__,
        )


def _repository(given: list[dict[str, Any]] | dict[str, Any] | None) -> Automaton:
    """A NetGent state repository (a list of states, or ``{"state_repository": [...]}``)."""
    if isinstance(given, dict):
        given = given.get("state_repository") or []
    try:
        return parse_automaton(list(given or []))
    except ValueError as exc:
        raise NetgentError(f"state_repository: {exc}") from None


def _executed(result: RunResult, states: list[State]) -> list[Message]:
    """An :class:`ExecutedState` for each state the run entered."""
    by_name = {s.name: s for s in states}
    out: list[Message] = []
    for number, event in enumerate((e for e in result.timeline if e.event == "state"), 1):
        state = by_name.get(event.state)
        if state is None:
            continue
        out.append(
            ExecutedState(
                timestamp=number,
                name=state.name,
                description=state.description,
                checks=[c.model_dump(mode="json") for c in state.checks],
                actions=[a.model_dump(mode="json") for a in state.actions],
            )
        )
    return out
