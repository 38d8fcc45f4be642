"""The pytest plugin: options, configuration and fixtures.

Heavy modules (selenium) are imported only when a browser is first needed, so
``pytest --help`` and collection stay fast.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .keys import (
    CAPTURE_PLUGIN,
    MEASURED_PROPERTY,
    NETWORK_PLUGIN,
    RUN_SECONDS_PROPERTY,
    STATES_PROPERTY,
    WORKFLOW_SUFFIXES,
    phases_key,
    record_log_key,
    result_key,
    settings_key,
    swept_key,
)
from .ladder import netgent_browser as netgent_browser  # the fixture ladder lives there
from .ladder import netgent_browser_options as netgent_browser_options
from .ladder import netgent_browser_pool as netgent_browser_pool
from .ladder import netgent_capture as netgent_capture
from .ladder import netgent_network as netgent_network
from .ladder import netgent_settings as netgent_settings
from .ladder import netgent_webdriver as netgent_webdriver
from .options import pytest_addoption as pytest_addoption  # the hook lives there
from .pool import pytest_runtest_protocol as pytest_runtest_protocol  # the hooks live there
from .pool import pytest_sessionfinish as pytest_sessionfinish
from .settings import Settings, resolve

# pytest imports this module on every start: the workflow machinery (pydantic models,
# YAML, the engine, Selenium) is imported where it is first needed, never here.
if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..synthesis import Synthesiser


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import newhooks

    pluginmanager.add_hookspecs(newhooks)


def pytest_configure(config: pytest.Config) -> None:
    from ..system import interrupts, leftovers

    # Ctrl-C and SIGTERM (a CI job's cancel, ``kill``) stop this process as pytest's own
    # Ctrl-C does, its session and fixtures ended, and are not lost on the way
    interrupts.install(sigterm=True)
    leftovers.set_project(config.rootpath)
    if getattr(config, "workerinput", None) is None:  # before any worker makes its own
        config.stash[swept_key] = leftovers.sweep()
    config.addinivalue_line("markers", "netgent: a workflow item collected by pytest-netgent")
    settings = config.stash[settings_key] = resolve(config)
    _check_extras(config, settings)
    if settings.capture.on:
        from .capturing import prepare_capture

        prepare_capture(config, settings.capture, settings.browser.remote)
    _register(config, settings)


def _register(config: pytest.Config, settings: Settings) -> None:
    """The plugins of this session: network conditions, captures, the pytest plugins
    users run beside this one, the live status lines and record's log."""
    from .shaping import NetworkPlugin

    network = NetworkPlugin.configure(config, settings, settings.browser.remote)
    config.pluginmanager.register(network, NETWORK_PLUGIN)
    from .sharding import SHARD_PLUGIN, ShardPlugin  # --netgent-shard, durations, the record

    config.pluginmanager.register(ShardPlugin(config), SHARD_PLUGIN)
    if settings.trace != "off" or settings.video != "off":
        from .tracing import TRACE_PLUGIN, TracePlugin

        tracing = TracePlugin(settings.trace, settings.artifacts, settings.video)
        config.pluginmanager.register(tracing, TRACE_PLUGIN)
    if settings.capture.on:
        from .capturing import CaptureLog, CapturePlugin

        config.pluginmanager.register(CapturePlugin(settings), CAPTURE_PLUGIN)
        if getattr(config, "workerinput", None) is None:
            config.pluginmanager.register(
                CaptureLog(settings.capture, config), "netgent-capture-log"
            )
    from .thirdparty import ThirdPartyPlugins  # pytest-html, -rerunfailures, -repeat

    config.pluginmanager.register(ThirdPartyPlugins(), "netgent-plugins-compat")
    from .status import StatusPlugin  # the live status lines

    config.pluginmanager.register(StatusPlugin(config, settings.live), "netgent-status")
    if settings.record:
        from .record_summary import RecordLog

        log = RecordLog()
        config.stash[record_log_key] = log
        config.pluginmanager.register(log, "netgent-record-log")


def _check_extras(config: pytest.Config, settings: Settings) -> None:
    """A feature asked for whose extra is not installed is a usage error naming the
    install line, before anything runs."""
    from ..system.extras import UC_MISSING, ModelSpecError, check_model_spec, installed

    if settings.browser.uc and not installed("seleniumbase"):
        raise pytest.UsageError(UC_MISSING)
    spec, option = settings.llm, settings.llm_option
    try:
        check_model_spec(spec, option)
        if settings.record and spec.strip() not in ("", "builtin"):
            from ..synthesis.local import is_local, model_path
            from ..synthesis.models import load_model

            if is_local(spec):
                model_path(spec, option)  # its server starts where an item needs it
            else:
                load_model(spec, option)  # a model that cannot load stops the session now
    except ModelSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for line in session.config.stash.get(swept_key, []):
        if reporter is not None:
            reporter.write_line(f"netgent: removed what an ended run left behind, {line}")


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    log = config.stash.get(record_log_key, None)
    if log is not None:
        config.pluginmanager.unregister(log)
        del config.stash[record_log_key]
    # the process leaves the session on the network it came with: pytest.main() called
    # again, or a pytester test going on after an inline run, must not find itself in
    # the session's sealed namespace (no DNS, no registry, no other machine)
    if (netns := sys.modules.get("pytest_netgent.network.netns")) is not None:
        netns.rejoin()


# trylast: the innermost wrapper, so the phase is on record before capture and tracing
# (registered later, around it) read it
@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    item.stash.setdefault(phases_key, {})[call.when] = report.outcome
    result = item.stash.get(result_key, None)
    if call.when == "call" and result is not None:
        # the engine's own time: what the item took beyond it is the plugin's overhead
        elapsed = result.timeline[-1].elapsed if result.timeline else 0.0
        # on the item too: junitxml writes the properties of the teardown report, which
        # copies the item's
        for prop in (
            (RUN_SECONDS_PROPERTY, round(elapsed, 4)),
            (STATES_PROPERTY, " > ".join(result.states_visited)),
            *_measured(result.measurements),
        ):
            report.user_properties.append(prop)
            item.user_properties.append(prop)
    if call.when == "call" and result is not None and result.record is not None:
        from .record_summary import record_property

        # user_properties travel with the report from xdist workers to the controller;
        # on the item too, for junitxml (the summary counts the call report's only)
        summary = record_property(item.nodeid, result.record)
        report.user_properties.append(summary)
        item.user_properties.append(summary)
    return report


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(WORKFLOW_SUFFIXES):
        from .collect import WorkflowFile

        return WorkflowFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture
def netgent_base_url(request: pytest.FixtureRequest, netgent_settings: Settings) -> str:
    """``{base_url}``: --netgent-base-url, ini netgent_base_url, or a ``base_url`` fixture."""
    if netgent_settings.base_url:
        return netgent_settings.base_url
    try:
        return str(request.getfixturevalue("base_url") or "")
    except pytest.FixtureLookupError:
        return ""


@pytest.fixture(scope="session")
def netgent_llm(pytestconfig: pytest.Config) -> Iterator[BaseChatModel | None]:
    """The chat model record mode uses (None: builtin rules only). Override this fixture
    in a conftest.py to supply one; plain replay never requests it. A local model's
    server ends with the session."""
    from ..synthesis.local import stop_servers
    from ..synthesis.models import ModelSpecError, load_model

    try:
        model = load_model(pytestconfig.stash[settings_key].llm)
    except ModelSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    yield model
    stop_servers()


@pytest.fixture
def netgent_synthesiser(
    pytestconfig: pytest.Config, netgent_llm: BaseChatModel | None
) -> Synthesiser:
    """The synthesiser of one record-mode item: what the ``pytest_netgent_make_synthesiser``
    hook returns, else builtin rules, then the LLM if any."""
    from ..synthesis import build_synthesiser

    custom: Synthesiser | None = pytestconfig.hook.pytest_netgent_make_synthesiser(
        config=pytestconfig, llm=netgent_llm
    )
    if custom is not None:
        return custom
    settings = pytestconfig.stash[settings_key]
    return build_synthesiser(
        netgent_llm,
        max_calls=settings.llm_calls,
        max_tokens=settings.llm_tokens,
        only=settings.llm_only,
    )


def _measured(results: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The measurement steps' property, when the run made any."""
    if not results:
        return []
    from ..measure import summaries

    return [(MEASURED_PROPERTY, summaries(results))]
