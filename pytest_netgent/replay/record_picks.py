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
from ..synthesis.picked import PickedSynthesiser
from ..synthesis.picks import (
    LEGACY,
    PICTURE,
    STEP_FILE,
    picks_path,
    read_picks,
    write_picks,
)
from ..system import atomic
from ..workflow import store
from .recorder import Recorder, SynthesisFailed

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from .run import RunResult
    from .run_settings import ReplaySettings


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
    what the studio needs to record the item again: its workflow file (relative to the
    project's root), the item (the name in ``heal``'s node id) and the base URL given
    as an option (a ``base_url`` fixture starts its own server); the studio makes the
    command itself. Its failure names the command that opens the step in the studio."""
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
    workflow = recorder.workflow.name
    step = recorder.declined.step(
        workflow,
        viewport,
        picture=bool(png),
        workflow_file=_workflow_file(cache_file, workflow, settings.rootdir),
        item=_item(heal, workflow),
        base_url=settings.base_url,
        redact=recorder.ctx.redact,
    )
    atomic.write_text(path, step.model_dump_json(indent=1, exclude=set(LEGACY)) + "\n")
    studio = f"netgent studio {shlex.quote(display_path(path))}"
    if isinstance(error, ReplayError):
        error.pick = studio
    else:
        result.error = SynthesisFailed(f"{error}; pick the element by hand: {studio}")


def _workflow_file(cache_file: Path, workflow: str, rootdir: Path) -> str:
    """The file of ``workflow``, whose cache is ``cache_file``: relative to ``rootdir``
    (POSIX style), or absolute when it lies elsewhere (the studio refuses that)."""
    folder = cache_file.parent.parent.parent  # FOLDER/__netgent__/STEM/NAME.json
    found = sorted(
        path
        for path in folder.glob("*.netgent.y*ml")
        if store.cache_path(path, workflow) == cache_file
    )
    if not found:
        return ""
    real = found[0].resolve()
    with contextlib.suppress(ValueError):
        return real.relative_to(rootdir.resolve()).as_posix()
    return str(real)


def _item(heal: str, workflow: str) -> str:
    """The name of the item ``heal`` records (``login[alice]`` of ``pytest
    --netgent-record=missing 'login.netgent.yaml::login[alice]'``), when it is one of
    ``workflow``'s; "" for the workflow's name."""
    with contextlib.suppress(ValueError):
        for arg in shlex.split(heal):
            name = arg.partition("::")[2]
            if name == workflow or (name.startswith(f"{workflow}[") and name.endswith("]")):
                return name
    return ""


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
