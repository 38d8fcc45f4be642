"""The run-wide settings, resolved once from options and ini in ``pytest_configure``
(:func:`resolve`) and passed down: no other module reads an option or an ini key of the
plugin's own.

A light module: pytest imports the plugin on every start, so what configuration needs
imports no browser, model or workflow machinery.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..browser.session import BrowserOptions
from ..capture import CaptureSettings
from ..network.conditions import Condition
from ..replay.run_settings import ReplaySettings


@dataclass
class Settings(ReplaySettings):
    """Run-wide settings, from the command line, the ini file and defaults: those of
    replay, and the browser's, the captures' and the network's."""

    browser: BrowserOptions = field(default_factory=BrowserOptions)
    profile: Path | None = None
    """``--netgent-user-data-dir``: the browser profile each worker copies."""
    capture: CaptureSettings = field(default_factory=CaptureSettings)
    """``--netgent-capture``: what each item captures, and where."""
    network: Condition | None = None
    """``--netgent-network``: the condition on the wire of items whose workflow names none."""
    llm: str = "builtin"
    """``--netgent-llm``: the model record mode uses (``builtin``: rules only)."""
    llm_option: str = "ini netgent_llm"
    """Where :attr:`llm` was given, for messages about it."""
    llm_calls: int = 100
    """``--netgent-llm-calls``: most model calls one item may make while recording."""
    llm_tokens: int = 200000
    """``--netgent-llm-tokens``: most model tokens one item may spend while recording."""
    llm_only: bool = False
    """``--netgent-llm-only``: the model decides every step, no builtin rules first."""
    live: str = "auto"
    """``--netgent-live``: ``auto`` (status lines in a terminal), ``off``, or a port
    (as digits) to serve the live page on as well."""


def _setting(config: pytest.Config, name: str) -> Any:
    """Command line first, then the ini file (its default included)."""
    value = config.getoption(name)
    return value if value not in (None, "") else config.getini(name)


def resolve(config: pytest.Config) -> Settings:
    """Every option and ini key of the plugin, read and checked once: a bad value is a
    usage error naming the option (or ini key) and a good value."""
    from .options import count, http_url, positive_float, trace_mode, video_mode, window_size

    timeout = _setting(config, "netgent_state_timeout")
    if isinstance(timeout, str):
        timeout = positive_float("ini netgent_state_timeout")(timeout)
    artifacts = Path(_setting(config, "netgent_artifacts"))
    if not artifacts.is_absolute():
        artifacts = config.rootpath / artifacts
    if artifacts.exists() and not artifacts.is_dir():
        raise pytest.UsageError(
            f"--netgent-artifacts {artifacts} is a file, not a folder: point it at a folder "
            "(it is created if missing)"
        )
    remote = http_url("ini netgent_remote")(_setting(config, "netgent_remote"))
    capture = _capture(config, artifacts)
    trace = trace_mode(config)
    window = _setting(config, "netgent_window_size")
    if isinstance(window, str):
        window = window_size("ini netgent_window_size")(window) if window else None
    llm = config.getoption("netgent_llm")
    return Settings(
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
            remote_retries=count("ini netgent_remote_retries")(
                _setting(config, "netgent_remote_retries")
            ),
            network_events="har" in capture.modes,
            console=trace != "off",  # the pages' console messages, for the trace
        ),
        capture=capture,
        network=_network(config),
        profile=_profile(config),
        state_timeout=timeout,
        artifacts=artifacts,
        base_url=http_url("ini netgent_base_url")(_setting(config, "netgent_base_url")),
        record=config.getoption("netgent_record") or "",
        rootdir=config.rootpath,
        window=window,
        llm=str(llm if llm else config.getini("netgent_llm")),
        llm_option="--netgent-llm" if llm else "ini netgent_llm",
        llm_calls=count("ini netgent_llm_calls")(str(_setting(config, "netgent_llm_calls"))),
        llm_tokens=count("ini netgent_llm_tokens")(str(_setting(config, "netgent_llm_tokens"))),
        llm_only=bool(config.getoption("netgent_llm_only")),
        live=_live(config),
        trace=trace,
        video=video_mode(config),
    )


def _profile(config: pytest.Config) -> Path | None:
    if not _setting(config, "netgent_user_data_dir"):
        return None
    profile = Path(_setting(config, "netgent_user_data_dir")).expanduser()
    if not profile.is_absolute():
        profile = config.invocation_params.dir / profile
    if not profile.is_dir():
        raise pytest.UsageError(
            f"--netgent-user-data-dir {profile}: no such folder; make a profile with "
            "chromium --user-data-dir=DIR (log in, close it), then pass DIR"
        )
    return profile


def _capture(config: pytest.Config, artifacts: Path) -> CaptureSettings:
    from ..capture import parse_modes

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
    return CaptureSettings(
        modes=modes, root=artifacts, sslkeylog=sslkeylog, plots=_plots(config, bool(modes))
    )


def _plots(config: pytest.Config, capturing: bool) -> tuple[str, ...]:
    """``--netgent-plots`` (else ini ``netgent_plots``): the formats to draw in."""
    formats: tuple[str, ...] | None = config.getoption("netgent_plots")
    where = "--netgent-plots"
    if formats is None:
        where = "ini netgent_plots"
        if not config.getini("netgent_plots"):
            return ()  # the usual case: nothing more imported at start
        from ..studio.plots import parse_formats

        try:
            formats = parse_formats(str(config.getini("netgent_plots")), where)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    if formats and not capturing:
        raise pytest.UsageError(
            f"{where} draws what the captures hold: add --netgent-capture, e.g. "
            "--netgent-capture=pcap --netgent-plots=svg"
        )
    import importlib.util

    if formats and importlib.util.find_spec("matplotlib") is None:
        raise pytest.UsageError(
            f"{where} draws with matplotlib, which is not installed: "
            "pip install 'pytest-netgent[plots]'"
        )
    return formats


def _network(config: pytest.Config) -> Condition | None:
    from ..network.conditions import parse

    condition: Condition | None = config.getoption("netgent_network")
    if condition is None and config.getini("netgent_network"):
        try:
            condition = parse(str(config.getini("netgent_network")), "ini netgent_network")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    return condition


def _live(config: pytest.Config) -> str:
    from .options import live_mode

    value = config.getoption("netgent_live") or str(config.getini("netgent_live")).strip()
    return live_mode("ini netgent_live")(value) if value else "auto"


def runs_items(config: pytest.Config) -> bool:
    """Whether this process runs items: an xdist worker, or pytest without ``-n``."""
    if getattr(config, "workerinput", None) is not None:
        return True
    return getattr(config.option, "dist", "no") == "no" or not getattr(
        config.option, "numprocesses", None
    )
