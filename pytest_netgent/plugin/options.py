"""The command-line options and ini keys of pytest-netgent, and their parsers.

Every value is checked here, once, as pytest reads it: a bad one is a usage error that
names the option and shows a good value.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

import pytest

from ..capture import parse_modes
from ..dataset.shards import DURATIONS_FILE, Shard, parse_shard
from ..network.conditions import PROFILES, Condition
from ..network.conditions import parse as parse_condition
from ..workflow.window import parse_window

ARTIFACT_MODES = ("off", "on", "retain-on-failure")
"""What ``--netgent-trace`` and ``--netgent-video`` take: none, one per item, or one per
failed item (the others are deleted once the item passed)."""


def positive_float(option: str) -> Callable[[str], float]:
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


def window_size(option: str) -> Callable[[str], tuple[int, int]]:
    def parse(text: str) -> tuple[int, int]:
        try:
            return parse_window(text)
        except ValueError as exc:
            raise pytest.UsageError(f"{option}: {exc}") from None

    return parse


def network_condition(option: str) -> Callable[[str], Condition | None]:
    def parse(text: str) -> Condition | None:
        try:
            return parse_condition(text, option)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None

    return parse


def http_url(option: str) -> Callable[[str], str]:
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


def count(option: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not str(text).strip().isdigit():
            raise pytest.UsageError(
                f"{option} expects a whole number of 0 or more, got {text!r}: e.g. {option}=3"
            )
        return int(text)

    return parse


def live_mode(option: str) -> Callable[[str], str]:
    """``auto``, ``off`` or a port (0 to 65535) for ``--netgent-live``."""

    def parse(text: str) -> str:
        value = str(text).strip()
        if value in ("auto", "off") or (value.isdigit() and int(value) <= 65535):
            return value if not value.isdigit() else str(int(value))
        raise pytest.UsageError(
            f"{option} expects auto, off or a port (0 to 65535; 0: any free port), got "
            f"{text!r}: e.g. {option}=8765"
        )

    return parse


def _mode(config: pytest.Config, name: str) -> str:
    """The option ``name``, else its ini key; a bad ini value is a usage error."""
    value = config.getoption(name) or str(config.getini(name)).strip()
    if value not in ARTIFACT_MODES:
        raise pytest.UsageError(
            f"ini {name} = {value}: expected off, on or retain-on-failure "
            f"(e.g. {name} = retain-on-failure)"
        )
    return value


def trace_mode(config: pytest.Config) -> str:
    """``--netgent-trace``, else the ini key; a bad ini value is a usage error."""
    return _mode(config, "netgent_trace")


def video_mode(config: pytest.Config) -> str:
    """``--netgent-video``, else the ini key; a bad value, or PyAV missing, is a usage
    error."""
    value = _mode(config, "netgent_video")
    if value != "off":
        from ..studio.recording import missing

        if why := missing():
            raise pytest.UsageError(why)
    return value


def _capture_modes(text: str) -> frozenset[str]:
    try:
        return parse_modes(text)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _plot_formats(text: str) -> tuple[str, ...]:
    from ..studio.plots import parse_formats

    try:
        return parse_formats(text)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _record_mode(text: str) -> str:
    from ..replay.recorder import MODES

    if text not in MODES:
        raise pytest.UsageError(
            f"--netgent-record takes no value or one of {', '.join(MODES)}, got {text!r}: "
            "e.g. --netgent-record or --netgent-record=all"
        )
    return text


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("netgent", "workflow automation (pytest-netgent)")
    _record_options(group)
    _run_options(group)
    _browser_options(group)
    _grid_options(group)
    _capture_options(group)
    _shard_options(group, parser)
    _trace_options(group, parser)
    _ini_keys(parser)


def _record_options(group: pytest.OptionGroup) -> None:
    """Record mode and its model."""
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
        type=count("--netgent-llm-calls"),
        default=None,
        help="Most model calls one item may make while recording (default: ini "
        "netgent_llm_calls, else 100); an item that reaches it fails with a model error.",
    )
    group.addoption(
        "--netgent-llm-tokens",
        dest="netgent_llm_tokens",
        metavar="N",
        type=count("--netgent-llm-tokens"),
        default=None,
        help="Most model tokens (in and out) one item may spend while recording (default: "
        "ini netgent_llm_tokens, else 200000).",
    )
    group.addoption(
        "--netgent-llm-only",
        dest="netgent_llm_only",
        action="store_true",
        default=False,
        help="The model decides every synthesis step, with no builtin rules first: to test "
        "or measure a model (the builtin rules still verify what it records).",
    )


def _run_options(group: pytest.OptionGroup) -> None:
    """What every run uses: base URL, timeouts, artifacts, window, network."""
    group.addoption(
        "--netgent-base-url",
        dest="netgent_base_url",
        metavar="URL",
        type=http_url("--netgent-base-url"),
        default=None,
        help="Value of {base_url} in workflows (default: ini netgent_base_url, "
        "else a 'base_url' fixture).",
    )
    group.addoption(
        "--netgent-state-timeout",
        dest="netgent_state_timeout",
        metavar="SECONDS",
        type=positive_float("--netgent-state-timeout"),
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
        "--netgent-live",
        dest="netgent_live",
        metavar="auto|off|PORT",
        type=live_mode("--netgent-live"),
        default=None,
        help="A live status line per running item (elapsed, bytes captured, state) at the "
        "bottom of the terminal: auto (default) when the output is a terminal, or off. A "
        "PORT also serves a page on http://127.0.0.1:PORT/ showing every worker's and "
        "scenario member's browser live (0: any free port, printed in the header).",
    )
    group.addoption(
        "--netgent-window-size",
        dest="netgent_window_size",
        metavar="WxH",
        type=window_size("--netgent-window-size"),
        default=None,
        help="Browser window size for every run, e.g. 1280x900 (default: ini "
        "netgent_window_size, else the workflow's window:, else the size its states were "
        "recorded at, else 1280x900).",
    )
    group.addoption(
        "--netgent-network",
        dest="netgent_network",
        metavar="PROFILE",
        type=network_condition("--netgent-network"),
        default=None,
        help="Network condition on the wire for every item: a profile ("
        + ", ".join(PROFILES)
        + ") or key=value pairs of rate, up, delay, jitter, loss, queue, e.g. "
        "rate=2mbit,delay=40ms (default: ini netgent_network; a workflow's network: wins). "
        "Linux, as root; shapes the browser's traffic with the sites, not its WebDriver "
        "control.",
    )


def _browser_options(group: pytest.OptionGroup) -> None:
    """The browser: headed, UC mode, flags, executables, a profile."""
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
        "--netgent-user-data-dir",
        dest="netgent_user_data_dir",
        metavar="DIR",
        default=None,
        help="Browser profile (e.g. logged-in sessions) copied once per worker; its cookies "
        "and storage are kept between items (default: ini netgent_user_data_dir).",
    )


def _grid_options(group: pytest.OptionGroup) -> None:
    """Browsers as sessions on a Selenium Grid."""
    group.addoption(
        "--netgent-remote",
        dest="netgent_remote",
        metavar="URL",
        type=http_url("--netgent-remote"),
        default=None,
        help="Run every browser as a session on this Selenium Grid, e.g. "
        "http://127.0.0.1:4444 (default: ini netgent_remote, else a local browser).",
    )
    group.addoption(
        "--netgent-remote-retries",
        dest="netgent_remote_retries",
        metavar="N",
        type=count("--netgent-remote-retries"),
        default=None,
        help="New-session retries, with doubling backoff from 1 s, when the Grid is "
        "unreachable or full (default: ini netgent_remote_retries, else 3).",
    )


def _capture_options(group: pytest.OptionGroup) -> None:
    """Traffic capture."""
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
    group.addoption(
        "--netgent-plots",
        dest="netgent_plots",
        metavar="FORMATS",
        type=_plot_formats,
        default=None,
        help="With --netgent-capture: draw each item's throughput per flow (per member for "
        "a scenario) with its state changes, and its video quality where sampled, as "
        "throughput.svg / qoe.svg (svg, png or both; off by default; needs the plots extra).",
    )


def _ini_keys(parser: pytest.Parser) -> None:
    """The ini keys (each option's, where it has one)."""
    parser.addini(
        "netgent_browser_args",
        "Extra Chromium flags, one per line (before --netgent-browser-arg).",
        type="linelist",
        default=[],
    )
    parser.addini("netgent_capture", "Captures per item (see --netgent-capture).", default="")
    parser.addini("netgent_plots", "Plots per captured item (see --netgent-plots).", default="")
    parser.addini("netgent_remote", "Selenium Grid URL (see --netgent-remote).", default="")
    parser.addini("netgent_remote_retries", "New-session retries on a Grid.", default="3")
    parser.addini("netgent_user_data_dir", "Browser profile folder to copy.", default="")
    parser.addini("netgent_llm", "Model for record mode (see --netgent-llm).", default="builtin")
    parser.addini("netgent_llm_calls", "Most model calls per item.", default="100")
    parser.addini("netgent_llm_tokens", "Most model tokens per item.", default="200000")
    parser.addini("netgent_base_url", "Value of {base_url} in workflows.", default="")
    parser.addini("netgent_state_timeout", "Seconds to wait for a state to match.", default="10")
    parser.addini("netgent_window_size", "Browser window size WxH for every run.", default="")
    parser.addini("netgent_network", "Network condition for every item.", default="")
    parser.addini(
        "netgent_live",
        "Live status lines: auto or off; or a port to serve the live page on.",
        default="auto",
    )
    parser.addini("netgent_artifacts", "Folder for run artifacts.", default="netgent-artifacts")
    parser.addini("netgent_chromium", "Chromium executable.", default="")
    parser.addini("netgent_chromedriver", "ChromeDriver executable.", default="")


def _shard_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """``--netgent-shard``, ``--netgent-durations``, ``--netgent-store-durations`` and
    ``--netgent-run-id``."""
    group.addoption(
        "--netgent-shard",
        dest="netgent_shard",
        metavar="K/N",
        type=_shard_option,
        default=None,
        help="Run shard K of N (K from 1): each item lands in exactly one shard, balanced by "
        "the durations of earlier runs (--netgent-durations).",
    )
    group.addoption(
        "--netgent-durations",
        dest="netgent_durations",
        metavar="FILE",
        default=None,
        help=f"Durations of earlier runs, pytest-split's format (default: ini "
        f"netgent_durations, else {DURATIONS_FILE} in the root folder).",
    )
    group.addoption(
        "--netgent-store-durations",
        dest="netgent_store_durations",
        action="store_true",
        default=False,
        help="Write what each item took into the durations file at the end of the run.",
    )
    group.addoption(
        "--netgent-run-id",
        dest="netgent_run_id",
        metavar="ID",
        default=None,
        help="The run's id in dataset.json, the same in every shard (default: the "
        "NETGENT_RUN_ID environment variable, else a digest of the items collected).",
    )
    parser.addini("netgent_durations", "Durations file (see --netgent-durations).", default="")


def _shard_option(text: str) -> Shard:
    try:
        return parse_shard(text)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _trace_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """``--netgent-trace`` and its ini key."""
    group.addoption(
        "--netgent-trace",
        dest="netgent_trace",
        choices=ARTIFACT_MODES,
        default=None,
        help="A trace per item (trace.zip in its artifacts folder: each tick's checks, "
        "each action with screenshots and DOM snapshots before and after, requests): off "
        "(default), on, or retain-on-failure. Open one with: netgent show-trace PATH",
    )
    parser.addini("netgent_trace", "Trace per item: off, on or retain-on-failure.", default="off")
    group.addoption(
        "--netgent-video",
        dest="netgent_video",
        choices=ARTIFACT_MODES,
        default=None,
        help="A video per item (video.webm in its artifacts folder: what its browser "
        "showed, a few pictures a second while it acts): off (default), on, or "
        "retain-on-failure. Needs pytest-netgent[video].",
    )
    parser.addini("netgent_video", "Video per item: off, on or retain-on-failure.", default="off")
