"""NetGent's network measurement steps: ``ping``, ``iperf``, ``wget`` and ``ndt``.

Each step runs one real tool (iputils ``ping``, ``iperf3``, GNU ``wget``, M-Lab's
``ndt7-client``) to its end and returns what it measured as a JSON-serialisable dict;
:func:`summary` turns such a result into one line for reports and the dataset manifest.
Params may arrive as text (filled from ``{{placeholders}}``) and are read as NetGent
reads them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from . import iperf, ndt, ping, wget
from .process import MeasureError, Params, Peer, Runner, failure

__all__ = [
    "STEPS", "STEP_PARAMS", "MeasureError", "Peer", "peers", "run_step", "summaries", "summary",
]  # fmt: skip

_MODULES: dict[str, ModuleType] = {m.STEP: m for m in (ping, iperf, ndt, wget)}

STEP_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    kind: (module.REQUIRED, module.OPTIONAL) for kind, module in _MODULES.items()
}
"""Each step kind's (required, optional) param names."""

STEPS: tuple[str, ...] = tuple(STEP_PARAMS)
"""The measurement step kinds."""


def _module(kind: str) -> ModuleType:
    module = _MODULES.get(kind)
    if module is None:
        raise MeasureError(f"{kind!r} is not a measurement step; the steps are {', '.join(STEPS)}")
    return module


def _check_names(kind: str, params: Mapping[str, Any]) -> None:
    required, optional = STEP_PARAMS[kind]
    unknown = sorted(set(params) - set(required) - set(optional))
    if unknown:
        raise failure(
            kind,
            f"unknown param{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}",
            f"the params of {kind} are {', '.join((*required, *optional))}",
        )


def run_step(
    kind: str,
    params: Mapping[str, Any],
    *,
    folder: Path,
    deadline: float | None = None,
    redact: Callable[[str], str] = lambda s: s,
    stop: threading.Event | None = None,
) -> dict[str, Any]:
    """Run one step to its end (or until ``deadline``, a :func:`time.monotonic` value, or
    until ``stop`` is set: then its process group is killed and a :class:`MeasureError`
    says it was stopped / out of time); return its parsed result, JSON-serialisable.

    ``folder`` is where the step's files go (a kept ``wget`` download); ``redact`` is
    applied to every argument of the recorded command and to the tool output quoted in
    error messages.
    """
    module = _module(kind)
    _check_names(kind, params)
    runner = Runner(folder=Path(folder), deadline=deadline, redact=redact, stop=stop)
    result: dict[str, Any] = module.run(params, runner)
    return result


def peers(kind: str, params: Mapping[str, Any]) -> list[Peer]:
    """Who the step ``kind`` will talk to, read from its ``params`` as :func:`run_step`
    reads them (so a caller can open the way first); a :class:`MeasureError` for params
    it would refuse."""
    module = _module(kind)
    _check_names(kind, params)
    found: list[Peer] = module.peers(Params(kind, params))
    return found


def summary(result: Mapping[str, Any]) -> str:
    """One line for reports and the dataset manifest, e.g. ``ping 127.0.0.1: 3/3
    replies, rtt min/avg/max 0.03/0.05/0.07 ms``."""
    line: str = _module(str(result.get("step"))).summary(result)
    return line


def summaries(results: Sequence[Mapping[str, Any]]) -> str:
    """The lines of :func:`summary` for ``results``, joined by `` | `` (one field of a
    manifest row or a report property)."""
    return " | ".join(summary(r) for r in results)
