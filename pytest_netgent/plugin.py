"""The pytest plugin: options, configuration and fixtures.

Heavy modules (selenium) are imported only when a browser is first needed, so
``pytest --help`` and collection stay fast.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from .capture import CaptureSettings, ItemCapture, folder_name, parse_modes
from .errors import BrowserError
from .keys import (
    CAPTURE_PROPERTY,
    RUN_SECONDS_PROPERTY,
    STATES_PROPERTY,
    WORKFLOW_SUFFIXES,
    capture_key,
    phases_key,
    record_log_key,
    result_key,
    settings_key,
)
from .settings import Settings, parse_window

# pytest imports this module on every start: the workflow machinery (pydantic models,
# YAML, the engine, Selenium) is imported where it is first needed, never here.
if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from .netns import LoopbackBridge
    from .runner import BrowserPool, NetgentBrowser
    from .spec import LoadedWorkflow
    from .synthesis import Synthesiser


def _positive_float(option: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 < value < float("inf"):  # nan, inf and 1e309 too
            raise pytest.UsageError(
                f"{option} expects a number of seconds greater than 0, got {text!r}: "
                f"e.g. {option}=10"
            )
        return value

    return parse


def _window(option: str) -> Callable[[str], tuple[int, int]]:
    def parse(text: str) -> tuple[int, int]:
        try:
            return parse_window(text)
        except ValueError as exc:
            raise pytest.UsageError(f"{option}: {exc}") from None

    return parse


def _url(option: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not text:
            return text
        problem = ""
        try:
            parts = urlsplit(text)
            port = parts.port  # raises on a port that is not a number from 0 to 65535
        except ValueError as exc:
            problem = str(exc)
        else:
            if parts.scheme not in ("http", "https"):
                problem = "not an http:// or https:// URL"
            elif not parts.hostname:
                problem = "no host"
            elif port == 0:
                problem = "port 0"
        if problem:
            raise pytest.UsageError(
                f"{option} expects an http:// or https:// URL with a host, got {text!r} "
                f"({problem}): e.g. {option}=http://127.0.0.1:8000"
            )
        return text

    return parse


def _count(option: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not str(text).strip().isdigit():
            raise pytest.UsageError(
                f"{option} expects a whole number of 0 or more, got {text!r}: e.g. {option}=3"
            )
        return int(text)

    return parse


def _capture_modes(text: str) -> frozenset[str]:
    try:
        return parse_modes(text)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _record_mode(text: str) -> str:
    from .recorder import MODES

    if text not in MODES:
        raise pytest.UsageError(
            f"--netgent-record takes no value or one of {', '.join(MODES)}, got {text!r}: "
            "e.g. --netgent-record or --netgent-record=all"
        )
    return text


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netgent", "workflow automation (pytest-netgent)")
    group.addoption(
        "--netgent-record",
        dest="netgent_record",
        metavar="MODE",
        nargs="?",
        const="missing",
        default=None,
        type=_record_mode,
        help="Synthesise missing and stale states, heal broken ones and write the cache "
        "after each passing workflow. MODE: missing (default), all (ignore the cache), "
        "propose (heal into --netgent-artifacts/proposed and fail, for review).",
    )
    group.addoption(
        "--netgent-llm",
        dest="netgent_llm",
        metavar="MODEL",
        default=None,
        help="Model for record mode: builtin (default; offline, no key), module:attr (a "
        "langchain-core chat model or factory), or provider:model with langchain installed.",
    )
    group.addoption(
        "--netgent-llm-calls",
        dest="netgent_llm_calls",
        metavar="N",
        type=_count("--netgent-llm-calls"),
        default=None,
        help="Most model calls one item may make while recording (default: ini "
        "netgent_llm_calls, else 100); an item that reaches it fails with a model error.",
    )
    group.addoption(
        "--netgent-llm-tokens",
        dest="netgent_llm_tokens",
        metavar="N",
        type=_count("--netgent-llm-tokens"),
        default=None,
        help="Most model tokens (in and out) one item may spend while recording (default: "
        "ini netgent_llm_tokens, else 200000).",
    )
    group.addoption(
        "--netgent-base-url",
        dest="netgent_base_url",
        metavar="URL",
        type=_url("--netgent-base-url"),
        default=None,
        help="Value of {base_url} in workflows (default: ini netgent_base_url, "
        "else a 'base_url' fixture).",
    )
    group.addoption(
        "--netgent-state-timeout",
        dest="netgent_state_timeout",
        metavar="SECONDS",
        type=_positive_float("--netgent-state-timeout"),
        default=None,
        help="Seconds to wait for a state to match before reporting UI drift (default: ini "
        "netgent_state_timeout, else 10).",
    )
    group.addoption(
        "--netgent-artifacts",
        dest="netgent_artifacts",
        metavar="DIR",
        default=None,
        help="Folder for screenshots and run artifacts (default: netgent-artifacts/).",
    )
    group.addoption(
        "--netgent-window-size",
        dest="netgent_window_size",
        metavar="WxH",
        type=_window("--netgent-window-size"),
        default=None,
        help="Browser window size for every run, e.g. 1280x900 (default: ini "
        "netgent_window_size, else the workflow's window:, else the size its states were "
        "recorded at, else 1280x900).",
    )
    group.addoption(
        "--netgent-headed",
        dest="netgent_headed",
        action="store_true",
        default=False,
        help="Show the browser window instead of running headless.",
    )
    group.addoption(
        "--netgent-uc",
        dest="netgent_uc",
        action="store_true",
        default=False,
        help="Drive Chromium through SeleniumBase's UC mode (for sites that block automation).",
    )
    group.addoption(
        "--netgent-browser-arg",
        dest="netgent_browser_args",
        metavar="ARG",
        action="append",
        default=[],
        help="Extra Chromium flag, e.g. --netgent-browser-arg=--lang=de (repeatable).",
    )
    group.addoption(
        "--netgent-chromium",
        dest="netgent_chromium",
        metavar="PATH",
        default=None,
        help="Chromium executable (default: ini netgent_chromium, else chromium on PATH).",
    )
    group.addoption(
        "--netgent-chromedriver",
        dest="netgent_chromedriver",
        metavar="PATH",
        default=None,
        help="ChromeDriver executable (default: ini netgent_chromedriver, else on PATH).",
    )
    group.addoption(
        "--netgent-remote",
        dest="netgent_remote",
        metavar="URL",
        type=_url("--netgent-remote"),
        default=None,
        help="Run every browser as a session on this Selenium Grid, e.g. "
        "http://127.0.0.1:4444 (default: ini netgent_remote, else a local browser).",
    )
    group.addoption(
        "--netgent-remote-retries",
        dest="netgent_remote_retries",
        metavar="N",
        type=_count("--netgent-remote-retries"),
        default=None,
        help="New-session retries, with doubling backoff from 1 s, when the Grid is "
        "unreachable or full (default: ini netgent_remote_retries, else 3).",
    )
    group.addoption(
        "--netgent-user-data-dir",
        dest="netgent_user_data_dir",
        metavar="DIR",
        default=None,
        help="Browser profile (e.g. logged-in sessions) copied once per worker; its cookies "
        "and storage are kept between items (default: ini netgent_user_data_dir).",
    )
    group.addoption(
        "--netgent-capture",
        dest="netgent_capture",
        metavar="MODES",
        type=_capture_modes,
        default=None,
        help="Capture each item's traffic into its own folder under --netgent-artifacts: "
        "pcap (tcpdump, each worker in its own network namespace; root), har (from the "
        "browser's network events), netlog (Chromium's net log), comma-separated; with its "
        "timeline.json, video samples and a manifest.csv / labels.csv for the session.",
    )
    group.addoption(
        "--netgent-sslkeylog",
        dest="netgent_sslkeylog",
        action="store_true",
        default=False,
        help="With --netgent-capture: write the browser's TLS keys beside each item's pcap "
        "(sslkeys.log, NSS key log format) so that its HTTPS can be decrypted.",
    )
    parser.addini(
        "netgent_browser_args",
        "Extra Chromium flags, one per line (before --netgent-browser-arg).",
        type="linelist",
        default=[],
    )
    parser.addini("netgent_capture", "Captures per item (see --netgent-capture).", default="")
    parser.addini("netgent_remote", "Selenium Grid URL (see --netgent-remote).", default="")
    parser.addini("netgent_remote_retries", "New-session retries on a Grid.", default="3")
    parser.addini("netgent_user_data_dir", "Browser profile folder to copy.", default="")
    parser.addini("netgent_llm", "Model for record mode (see --netgent-llm).", default="builtin")
    parser.addini("netgent_llm_calls", "Most model calls per item.", default="100")
    parser.addini("netgent_llm_tokens", "Most model tokens per item.", default="200000")
    parser.addini("netgent_base_url", "Value of {base_url} in workflows.", default="")
    parser.addini("netgent_state_timeout", "Seconds to wait for a state to match.", default="10")
    parser.addini("netgent_window_size", "Browser window size WxH for every run.", default="")
    parser.addini("netgent_artifacts", "Folder for run artifacts.", default="netgent-artifacts")
    parser.addini("netgent_chromium", "Chromium executable.", default="")
    parser.addini("netgent_chromedriver", "ChromeDriver executable.", default="")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import newhooks

    pluginmanager.add_hookspecs(newhooks)


def _setting(config: pytest.Config, name: str) -> Any:
    """Command line first, then the ini file (its default included)."""
    value = config.getoption(name)
    return value if value not in (None, "") else config.getini(name)


def pytest_configure(config: pytest.Config) -> None:
    from .browser.session import BrowserOptions

    config.addinivalue_line("markers", "netgent: a workflow item collected by pytest-netgent")
    config.addinivalue_line(
        "markers", "xdist_group(name): run items of one group on one worker (pytest-xdist)"
    )
    timeout = _setting(config, "netgent_state_timeout")
    if isinstance(timeout, str):
        timeout = _positive_float("ini netgent_state_timeout")(timeout)
    artifacts = Path(_setting(config, "netgent_artifacts"))
    if not artifacts.is_absolute():
        artifacts = config.rootpath / artifacts
    if artifacts.exists() and not artifacts.is_dir():
        raise pytest.UsageError(
            f"--netgent-artifacts {artifacts} is a file, not a folder: point it at a folder "
            "(it is created if missing)"
        )
    remote = _url("ini netgent_remote")(_setting(config, "netgent_remote"))
    retries = _count("ini netgent_remote_retries")(_setting(config, "netgent_remote_retries"))
    profile: Path | None = None
    if _setting(config, "netgent_user_data_dir"):
        profile = Path(_setting(config, "netgent_user_data_dir")).expanduser()
        if not profile.is_absolute():
            profile = config.invocation_params.dir / profile
        if not profile.is_dir():
            raise pytest.UsageError(
                f"--netgent-user-data-dir {profile}: no such folder; make a profile with "
                "chromium --user-data-dir=DIR (log in, close it), then pass DIR"
            )
    _check_extras(config)
    _schedule_groups(config)
    capture = _capture_settings(config, artifacts, remote)
    config.stash[settings_key] = Settings(
        browser=BrowserOptions(
            headless=not config.getoption("netgent_headed"),
            uc=config.getoption("netgent_uc"),
            args=[
                *config.getini("netgent_browser_args"),
                *config.getoption("netgent_browser_args"),
            ],
            chromium=_setting(config, "netgent_chromium"),
            chromedriver=_setting(config, "netgent_chromedriver"),
            remote=remote,
            remote_retries=retries,
            network_events="har" in capture.modes,
        ),
        capture=capture,
        profile=profile,
        state_timeout=timeout,
        artifacts=artifacts,
        base_url=_url("ini netgent_base_url")(_setting(config, "netgent_base_url")),
        record=config.getoption("netgent_record") or "",
        rootdir=config.rootpath,
        window=_configured_window(config),
    )
    if capture.on and getattr(config, "workerinput", None) is None:
        config.pluginmanager.register(CaptureLog(capture), "netgent-capture-log")
    if config.getoption("netgent_record"):
        from .recorder import RecordLog

        log = RecordLog()
        config.stash[record_log_key] = log
        config.pluginmanager.register(log, "netgent-record-log")


def _configured_window(config: pytest.Config) -> tuple[int, int] | None:
    value = _setting(config, "netgent_window_size")
    if isinstance(value, str):
        return _window("ini netgent_window_size")(value) if value else None
    return value  # type: ignore[no-any-return]


def _check_extras(config: pytest.Config) -> None:
    """A feature asked for whose extra is not installed is a usage error naming the
    install line, before anything runs."""
    from .extras import UC_MISSING, ModelSpecError, check_model_spec, installed

    if config.getoption("netgent_uc") and not installed("seleniumbase"):
        raise pytest.UsageError(UC_MISSING)
    llm = config.getoption("netgent_llm")
    spec = str(llm if llm else config.getini("netgent_llm"))
    option = "--netgent-llm" if llm else "ini netgent_llm"
    try:
        check_model_spec(spec, option)
        if config.getoption("netgent_record") and spec.strip() not in ("", "builtin"):
            from .synthesis.models import load_model

            load_model(spec, option)  # a model that cannot load stops the session now
    except ModelSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


def _runs_browsers(config: pytest.Config) -> bool:
    """Whether this process runs items: an xdist worker, or pytest without ``-n``."""
    if getattr(config, "workerinput", None) is not None:
        return True
    return getattr(config.option, "dist", "no") == "no" or not getattr(
        config.option, "numprocesses", None
    )


def _capture_settings(config: pytest.Config, artifacts: Path, remote: str) -> CaptureSettings:
    """``--netgent-capture``; a process that runs items and captures packets moves into a
    network namespace of its own here, before any fixture starts a server."""
    modes: frozenset[str] = config.getoption("netgent_capture") or frozenset()
    if not modes and config.getini("netgent_capture"):
        try:
            modes = parse_modes(str(config.getini("netgent_capture")), "ini netgent_capture")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    sslkeylog = bool(config.getoption("netgent_sslkeylog"))
    if sslkeylog and not modes:
        raise pytest.UsageError(
            "--netgent-sslkeylog writes TLS keys beside the captures: add --netgent-capture, "
            "e.g. --netgent-capture=pcap --netgent-sslkeylog"
        )
    capture = CaptureSettings(modes=modes, root=artifacts, sslkeylog=sslkeylog)
    # A dataset job that asked for packets and would get none must stop before it runs.
    if "netlog" in modes and remote:
        _cannot_capture(
            "netlog", "the browsers run on the Selenium Grid, whose nodes keep their net log"
        )
    if sslkeylog and remote:
        raise pytest.UsageError(
            "--netgent-sslkeylog cannot run here: the browsers run on the Selenium Grid "
            "(--netgent-remote), whose nodes keep their TLS keys; drop --netgent-sslkeylog "
            "to go on without it"
        )
    if "pcap" in modes:
        from . import netns

        if why := netns.unavailable(remote):
            _cannot_capture("pcap", why)
        if _runs_browsers(config):
            capture.pcap_off = netns.isolate()
        capture.uplink_off = netns.uplink_unavailable()
    return capture


def _cannot_capture(mode: str, why: str) -> None:
    raise pytest.UsageError(
        f"--netgent-capture={mode} cannot run here: {why}. Drop {mode} from "
        "--netgent-capture (or the ini netgent_capture) to go on without it"
    )


class CaptureLog:
    """On the controller (or pytest without ``-n``): gathers every item's capture row
    and writes ``manifest.csv`` and ``labels.csv`` at the end of the session."""

    def __init__(self, settings: CaptureSettings) -> None:
        self.settings = settings
        self.rows: list[dict[str, str]] = []
        self.written: tuple[Path, Path] | None = None

    def pytest_report_header(self) -> str:
        return self.settings.summary()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == CAPTURE_PROPERTY and isinstance(value, str):
                self.rows.append(json.loads(value))

    def pytest_sessionfinish(self) -> None:
        from .capture import write_manifest

        if self.rows:
            self.written = write_manifest(self.settings.root, self.rows)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.written is None:
            return
        from .capture import MODES

        counts = []
        for kind in (*MODES, "qoe"):
            files = [r for r in self.rows if r.get(kind)]
            if files:
                size = sum(int(r.get(f"{kind}_bytes") or 0) for r in files)
                counts.append(f"{len(files)} {kind} ({size / 1e6:.1f} MB)")
        failed = sum(1 for r in self.rows if r.get("outcome") != "passed")
        terminalreporter.write_sep("=", "netgent capture")
        terminalreporter.write_line(
            f"{len(self.rows)} items ({failed} not passed): {', '.join(counts) or 'no captures'}"
        )
        terminalreporter.write_line(f"manifest: {self.written[0]}")
        terminalreporter.write_line(f"labels:   {self.written[1]}")


def _schedule_groups(config: pytest.Config) -> None:
    """Under ``-n``, schedule with xdist's ``loadgroup`` unless ``--dist`` was chosen:
    items spread freely, and those of one workflow ``group`` share a worker, so they
    never overlap. (The controller decides; workers inherit the option.)"""
    worker = getattr(config, "workerinput", None)
    if worker is not None:
        if worker.get(LOADGROUP_KEY):  # workers parse the command line anew: tell them
            config.option.loadgroup = True
        return
    if getattr(config.option, "dist", "no") != "load":
        return
    given = [*config.invocation_params.args, *config.getini("addopts")]
    given += os.environ.get("PYTEST_ADDOPTS", "").split()
    if any(str(a) in ("--dist", "-d") or str(a).startswith("--dist=") for a in given):
        return
    config.option.dist = "loadgroup"
    config.pluginmanager.register(_GroupedWorkers(), "netgent-loadgroup")


LOADGROUP_KEY = "netgent_loadgroup"


class _GroupedWorkers:
    """Tells each xdist worker to name grouped items ``<id>@<group>`` for loadgroup."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[LOADGROUP_KEY] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    log = config.stash.get(record_log_key, None)
    if log is not None:
        config.pluginmanager.unregister(log)
        del config.stash[record_log_key]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _capture_outcome(item, call.when, report)
    result = item.stash.get(result_key, None)
    if call.when == "call" and result is not None:
        # the engine's own time: what the item took beyond it is the plugin's overhead
        elapsed = result.timeline[-1].elapsed if result.timeline else 0.0
        # on the item too: junitxml writes the properties of the teardown report, which
        # copies the item's
        for prop in (
            (RUN_SECONDS_PROPERTY, round(elapsed, 4)),
            (STATES_PROPERTY, " > ".join(result.states_visited)),
        ):
            report.user_properties.append(prop)
            item.user_properties.append(prop)
    if call.when == "call" and result is not None and result.record is not None:
        from .recorder import RECORD_PROPERTY

        # user_properties travel with the report from xdist workers to the controller
        record = result.record
        usage = record.usage
        report.user_properties.append(
            (
                RECORD_PROPERTY,
                {
                    "item": item.nodeid,
                    "synthesised": record.synthesised,
                    "healed": record.healed,
                    "written": record.written,
                    "proposed": record.proposed,
                    "builtin_steps": usage.builtin_steps,
                    "llm_steps": usage.llm_steps,
                    "llm_calls": usage.llm_calls,
                    "tokens": usage.input_tokens + usage.output_tokens,
                },
            )
        )
    return report


def _capture_outcome(item: pytest.Item, when: str, report: pytest.TestReport) -> None:
    """Mark the item's captures with its outcome, and send its manifest row along with
    the teardown report (to the xdist controller)."""
    settings = item.config.stash.get(settings_key, None)
    if settings is None or not settings.capture.on:
        return
    phases = item.stash.setdefault(phases_key, {})
    phases[when] = report.outcome
    if when != "teardown":
        return
    capture = item.stash.get(capture_key, None)
    if capture is None:
        from .collect import WorkflowItem

        if not isinstance(item, WorkflowItem):
            return  # a test without netgent_browser captured nothing
        capture = _item_capture(item, settings)  # failed before its browser started
    if phases.get("setup") == "failed" or phases.get("teardown") == "failed":
        capture.outcome = "error"
    elif "failed" in phases.values():
        capture.outcome = "failed"
    elif "skipped" in phases.values():
        capture.outcome = "skipped"
    else:
        capture.outcome = "passed"
    if capture.folder.is_dir():
        capture.save()
    # a JSON string: junitxml shows it as it is (a dict would be its Python repr)
    row = json.dumps(capture.row(settings.capture.root))
    report.user_properties.append((CAPTURE_PROPERTY, row))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(WORKFLOW_SUFFIXES):
        from .collect import WorkflowFile

        return WorkflowFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def netgent_settings(pytestconfig: pytest.Config) -> Settings:
    """The run-wide settings (browser options, state timeout, artifacts folder)."""
    return pytestconfig.stash[settings_key]


@pytest.fixture(scope="session")
def netgent_browser_pool(
    netgent_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrowserPool]:
    """This process's browser (one per xdist worker), started on first use; with
    ``--netgent-user-data-dir``, on this worker's own copy of the profile."""
    from .runner import BrowserPool, copy_profile

    options = netgent_settings.browser
    if netgent_settings.profile is not None:
        copy = copy_profile(netgent_settings.profile, tmp_path_factory.mktemp("profile"))
        options = dataclasses.replace(options, user_data_dir=str(copy))
    pool = BrowserPool(options)
    if netgent_settings.capture.on:
        from .capture import CapturedBrowser

        scratch = tmp_path_factory.mktemp("browsers")
        pool.capture = CapturedBrowser(options, netgent_settings.capture, scratch)
    yield pool
    pool.close()


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
def netgent_llm(pytestconfig: pytest.Config) -> BaseChatModel | None:
    """The chat model record mode uses (None: builtin rules only). Override this fixture
    in a conftest.py to supply one; plain replay never requests it."""
    from .synthesis.models import ModelSpecError, load_model

    try:
        return load_model(str(_setting(pytestconfig, "netgent_llm")))
    except ModelSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.fixture
def netgent_synthesiser(
    pytestconfig: pytest.Config, netgent_llm: BaseChatModel | None
) -> Synthesiser:
    """The synthesiser of one record-mode item: what the ``pytest_netgent_make_synthesiser``
    hook returns, else builtin rules, then the LLM if any."""
    from .synthesis.builtin import BuiltinSynthesiser
    from .synthesis.llm import LLMSynthesiser, TieredSynthesiser

    custom: Synthesiser | None = pytestconfig.hook.pytest_netgent_make_synthesiser(
        config=pytestconfig, llm=netgent_llm
    )
    if custom is not None:
        return custom
    if netgent_llm is None:
        return BuiltinSynthesiser()
    calls = _count("ini netgent_llm_calls")(str(_setting(pytestconfig, "netgent_llm_calls")))
    tokens = _count("ini netgent_llm_tokens")(str(_setting(pytestconfig, "netgent_llm_tokens")))
    llm = LLMSynthesiser(netgent_llm, max_calls=calls, max_tokens=tokens)
    return TieredSynthesiser(BuiltinSynthesiser(), llm)


@pytest.fixture
def netgent_browser(
    request: pytest.FixtureRequest,
    netgent_browser_pool: BrowserPool,
    netgent_settings: Settings,
    netgent_base_url: str,
) -> Iterator[NetgentBrowser]:
    """A browser reset for this test (no cookies, storage or extra tabs afterwards).

    ``.driver`` is the Selenium WebDriver; ``.run(file, name)`` replays a workflow and
    returns its :class:`~pytest_netgent.RunResult`. With ``--netgent-capture`` the test's
    traffic is captured into its own folder, and the browser's caches and connections are
    dropped after it.
    """
    if netgent_settings.capture.on:
        yield from _captured_browser(
            request.node, netgent_browser_pool, netgent_settings, netgent_base_url
        )
        return
    try:
        netgent_browser_pool.start()  # now: a browser that cannot start errors the setup
    except BrowserError as exc:
        pytest.fail(exc.report(), pytrace=False)
    from .runner import NetgentBrowser

    browser = NetgentBrowser(netgent_browser_pool, netgent_settings, netgent_base_url)
    yield browser
    netgent_browser_pool.reset(browser.origins)


_bridge: LoopbackBridge | None = None
_warned: list[str] = []


def _item_capture(item: pytest.Item, settings: Settings) -> ItemCapture:
    from .collect import WorkflowItem

    root = settings.capture.root
    folder = root / folder_name(item.nodeid)
    workflow = category = ""
    parameters: dict[str, Any] = {}
    if isinstance(item, WorkflowItem):
        workflow, category = item.loaded.workflow.name, item.loaded.workflow.category or ""
        parameters = dict(item.params)
        folder = item.artifacts_dir(root)
    return ItemCapture(
        settings=settings.capture,
        nodeid=item.nodeid,
        folder=folder,
        worker=os.environ.get("PYTEST_XDIST_WORKER", "main"),
        workflow=workflow,
        category=category,
        parameters=parameters,
    )


def _uplink_for(loaded: LoadedWorkflow, base_url: str) -> None:
    """Give the worker's namespace its uplink if the workflow may leave the machine; a
    worker that cannot have one says so once."""
    from . import netns
    from .engine import substitute

    workflow = loaded.workflow
    start = str(substitute(workflow.start_url, {**workflow.vars, "base_url": base_url}))
    hosts = list(workflow.allowed_hosts or [])
    if start:
        hosts.append(urlsplit(start).hostname or "")
    if not netns.beyond_loopback(h for h in hosts if h):
        return
    if (why := netns.ensure_uplink()) and why not in _warned:
        _warned.append(why)
        warnings.warn(pytest.PytestWarning(f"--netgent-capture=pcap: {why}"), stacklevel=1)


def _captured_browser(
    item: pytest.Item, pool: BrowserPool, settings: Settings, base_url: str
) -> Iterator[NetgentBrowser]:
    """The worker's browser for one test, with the test's captures running around it."""
    global _bridge
    from . import netns
    from .capture import CLEAR_NETWORK_STATE, CaptureError, browser_ports
    from .collect import WorkflowItem
    from .runner import NetgentBrowser

    browsers = pool.capture
    assert browsers is not None, "netgent_browser_pool sets it up under capture"
    capture = _item_capture(item, settings)
    item.stash[capture_key] = capture
    capture.prepare()
    sealed = settings.capture.pcap and netns.isolated()  # in this worker's own namespace
    if sealed and isinstance(item, WorkflowItem):
        _uplink_for(item.loaded, base_url)
    if sealed and base_url:
        _bridge = _bridge or netns.LoopbackBridge()
        if why := _bridge.reach(base_url):
            pytest.fail(f"--netgent-capture=pcap: {base_url}: {why}", pytrace=False)
    try:
        driver = pool.start()
        if sealed:
            # nothing the browser opened between two captures may reach into this one
            driver.execute_script(CLEAR_NETWORK_STATE)
            netns.settle(browser_ports(driver))
        capture.start(driver)
    except (BrowserError, CaptureError) as exc:
        capture.stop()
        pool.close()
        pytest.fail(exc.report(), pytrace=False)
    browsers.begin(capture)
    browser = NetgentBrowser(pool, settings, base_url)
    if sealed:

        def before_run(loaded: LoadedWorkflow, url: str) -> None:
            _uplink_for(loaded, url)  # a Python test's workflow may leave the machine
            capture.follow_interfaces()

        browser.before_run = before_run
    try:
        yield browser
    finally:
        events: list[dict[str, Any]] = []
        try:
            if pool.running is not None:
                events = capture.har_events(pool.running)
        finally:
            # the reset closes the item's connections: their last packets are its own
            pool.reset(browser.origins)
            capture.stop()
            browsers.end(capture)
            capture.workflow = capture.workflow or ", ".join(
                dict.fromkeys(r.workflow for r in browser.results)
            )
            capture.write(browser.results, events, browser.secrets)
