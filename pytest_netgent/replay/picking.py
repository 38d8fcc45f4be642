"""A recording run and the studio's picks: what a declined instruction leaves behind
(the step file), and how picks answer instructions on the next recording run.

See :mod:`pytest_netgent.synthesis.picks` for the files. The wiring gives a recording
run its picks (:func:`with_picks`); the runner calls :func:`after_record` when it ends.
"""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ReplayError, display_path
from ..synthesis import Synthesiser
from ..synthesis.picks import (
    PICTURE,
    STEP_FILE,
    PickedSynthesiser,
    picks_path,
    read_picks,
    write_picks,
)
from ..system import atomic
from .recorder import Recorder, SynthesisFailed

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from .run import RunResult
    from .settings import ReplaySettings


def with_picks(synthesiser: Synthesiser, path: Path | None) -> Synthesiser:
    """``synthesiser`` answering first with the picks in the picks file at ``path``,
    when it has any; else ``synthesiser``."""
    picks = read_picks(path) if path is not None else None
    if picks is None or not picks.picks:
        return synthesiser
    return PickedSynthesiser(synthesiser, picks)


def after_record(
    recorder: Recorder,
    result: RunResult,
    driver: WebDriver,
    artifacts: Path | None,
    cache_file: Path,
    heal: str,
    settings: ReplaySettings,
) -> None:
    """After a recording run: the picks it used leave the picks file once the cache
    holds them; an instruction it declined leaves its step file and picture in
    ``artifacts`` (none for a run that types secrets: its page is never pictured), with
    the command that records the item again (``heal``, run in the project's root, with
    the base URL given as an option: a ``base_url`` fixture starts its own server), and
    its failure names the command that opens the step in the studio."""
    _picks_kept(recorder, cache_file)
    if artifacts is None:
        return
    forget_step(artifacts)  # an earlier run's step is not this one's
    path = artifacts / STEP_FILE
    error = result.error
    if recorder.declined is None or error is None:
        return
    artifacts.mkdir(parents=True, exist_ok=True)
    viewport, png = _page_picture(driver, hidden=bool(recorder.ctx.secrets))
    if png:
        with atomic.replacing(artifacts / PICTURE, "wb") as out:
            out.write(png)
    command = shlex.split(heal)[1:]  # "pytest" is run as this Python's module
    if settings.base_url:
        command.append(f"--netgent-base-url={settings.base_url}")
    step = recorder.declined.step(
        recorder.workflow.name,
        picks_path(cache_file),
        viewport,
        picture=bool(png),
        command=command,
        rootdir=settings.rootdir,
        redact=recorder.ctx.redact,
    )
    atomic.write_text(path, step.model_dump_json(indent=1) + "\n")
    studio = f"netgent studio {shlex.quote(display_path(path))}"
    if isinstance(error, ReplayError):
        error.pick = studio
    else:
        result.error = SynthesisFailed(f"{error}; pick the element by hand: {studio}")


def forget_step(artifacts: Path) -> None:
    """Remove the step file and picture an earlier recording run left in ``artifacts``:
    the item has passed since (a replay after the cache was mended by hand, or by
    another run), so the step no longer asks anything."""
    (artifacts / PICTURE).unlink(missing_ok=True)
    (artifacts / STEP_FILE).unlink(missing_ok=True)


def _picks_kept(recorder: Recorder, cache_file: Path) -> None:
    """The picks the run used leave the picks file once the cache holds their states
    (the file goes when it holds none); kept when nothing was written (a pick that did
    not work, a failed replay), to try again."""
    synth = recorder.synth
    if not isinstance(synth, PickedSynthesiser) or not synth.used:
        return
    if not recorder.report.written:
        return
    path = picks_path(cache_file)
    picks = read_picks(path)
    if picks is not None:
        picks.picks = [p for p in picks.picks if p not in synth.used]
        write_picks(path, picks)


def _page_picture(driver: WebDriver, hidden: bool) -> tuple[tuple[int, int], bytes]:
    """The viewport's size and a PNG of it (none for a hidden run, or a browser gone)."""
    from selenium.common.exceptions import WebDriverException

    size: tuple[int, int] = (0, 0)
    with contextlib.suppress(WebDriverException):
        width, height = driver.execute_script("return [innerWidth, innerHeight]")
        size = (int(width), int(height))
        if not hidden:
            return size, driver.get_screenshot_as_png()
    return size, b""
