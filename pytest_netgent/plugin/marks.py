"""A workflow file's ``marks:`` made pytest marks, each checked when the file is collected.

pytest reads the arguments of its own marks (``skip``, ``skipif``, ``xfail``,
``filterwarnings``) only when an item runs, and pytest-timeout reads its ``timeout`` mark
inside the run protocol: a mark written with arguments they refuse was a long traceback
without the file (or a crash of the whole session). Their arguments are checked here
against what each accepts, so such a mark is an error of its own item that names the
file and line, what is wrong and how to write it. Other marks (the user's own) carry any
arguments, as in Python.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pytest
from pydantic import ConfigDict, TypeAdapter, ValidationError

from ..errors import WorkflowSpecError
from ..workflow.spec import LoadedWorkflow

if TYPE_CHECKING:
    from ..scenario.spec import LoadedScenario

_NOT_FOR_ITEMS = {
    "usefixtures": "request the fixture from an autouse fixture in a conftest.py",
    "parametrize": "use the workflow's own 'parametrize' key",
}


def _skip(reason: str = "") -> None:
    """pytest's ``skip``."""


def _skipif(*conditions: bool, condition: bool = False, reason: str = "") -> None:
    """pytest's ``skipif``."""


def _xfail(
    *conditions: bool,
    condition: bool = True,
    reason: str = "",
    run: bool = True,
    strict: bool = False,
) -> None:
    """pytest's ``xfail`` (without ``raises``: a workflow file cannot name an exception
    class)."""


def _filterwarnings(*filters: str) -> None:
    """pytest's ``filterwarnings``."""


def _timeout(
    timeout: float | None = None,
    method: Literal["signal", "thread"] | None = None,
    func_only: bool = False,
) -> None:
    """pytest-timeout's ``timeout``."""


@dataclass(frozen=True)
class _Takes:
    """What a mark accepts: ``shape`` is a function of its parameters and their types."""

    shape: Callable[..., None]
    example: str
    """The mark written as a workflow file writes it."""
    reasoned: bool = False
    """Its conditions need a reason (pytest refuses a true/false condition without)."""
    argued: bool = False
    """It needs at least one argument."""


_TAKES = {
    "skip": _Takes(_skip, "{skip: 'why it is skipped'}"),
    "skipif": _Takes(_skipif, "{skipif: {condition: true, reason: 'why'}}", reasoned=True),
    "xfail": _Takes(_xfail, "{xfail: {reason: 'why', strict: true}}", reasoned=True),
    "filterwarnings": _Takes(_filterwarnings, "{filterwarnings: ['ignore::DeprecationWarning']}"),
    "timeout": _Takes(
        _timeout, "{timeout: 30} or {timeout: {timeout: 30, method: thread}}", argued=True
    ),
}
"""The marks whose arguments are checked: pytest's own that it evaluates, and
pytest-timeout's (read by its run protocol, where a bad argument stops the session).
pytest-repeat's ``repeat`` is checked where the items are counted."""

_STRICT = ConfigDict(strict=True)


def item_marks(doc: LoadedWorkflow | LoadedScenario) -> list[pytest.MarkDecorator]:
    """The pytest marks of a workflow's or scenario's items: ``netgent``, its group's and
    those its ``marks:`` list. Raises :class:`WorkflowSpecError` at the line of a mark
    that cannot be used, saying why and how to write it."""
    wf = doc.workflow if isinstance(doc, LoadedWorkflow) else doc.scenario
    marks = [pytest.mark.netgent]
    if isinstance(doc, LoadedWorkflow) and doc.workflow.group:
        marks.append(pytest.mark.xdist_group(name=doc.workflow.group))
    for i, entry in enumerate(wf.marks):
        line = doc.line_of("marks", i)

        def fail(message: str, line: int = line) -> WorkflowSpecError:
            return WorkflowSpecError(doc.path, line, f"marks: {message}")

        if isinstance(entry, str):
            name, args = entry, None
        elif len(entry) == 1:
            name, args = next(iter(entry.items()))
        else:
            raise fail("a mark is a name or a one-key map like {skip: 'reason'}")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
            raise fail(f"{name!r} is not a valid mark name")
        _refuse_code(str(name), args, fail)
        mark = _applied(_decorator(str(name), fail), args, fail)
        if problem := _misfit(mark):
            raise fail(problem)
        marks.append(mark)
    return marks


def _decorator(name: str, fail: Callable[[str], WorkflowSpecError]) -> pytest.MarkDecorator:
    """pytest's decorator of the mark ``name``."""
    try:
        decorator: pytest.MarkDecorator = getattr(pytest.mark, name)
    except (Warning, pytest.UsageError, pytest.fail.Exception) as exc:
        # --strict-markers, or the unknown-mark warning turned into an error
        raise fail(
            f"unknown mark {name!r}: register it under 'markers' in the pytest "
            f"configuration ({str(exc).splitlines()[0]})"
        ) from None
    return decorator


def _applied(
    decorator: pytest.MarkDecorator, args: Any, fail: Callable[[str], WorkflowSpecError]
) -> pytest.MarkDecorator:
    """The mark with the arguments its entry gives: a string is its reason, a number its
    one argument (``{repeat: 3}``, ``{timeout: 2.5}``), a list its arguments, a map its
    keyword arguments."""
    if args is None:
        return decorator
    if isinstance(args, str):
        return decorator.with_args(reason=args)
    if isinstance(args, dict):
        return decorator.with_args(**{str(k): v for k, v in args.items()})
    if isinstance(args, list):
        return decorator.with_args(*args)
    if isinstance(args, (int, float)) and not isinstance(args, bool):
        return decorator.with_args(args)
    raise fail(
        f"mark {decorator.name!r} takes a reason string, a number, a list or a map of "
        f"arguments, got {args!r}"
    )


def _misfit(mark: pytest.MarkDecorator) -> str:
    """Why pytest (or the plugin that reads it) would refuse ``mark``'s arguments when its
    item runs, with how to write it; ``""`` when they fit or the mark is not known here."""
    takes = _TAKES.get(mark.name)
    if takes is None:
        return ""
    args, kwargs = mark.args, mark.kwargs
    fix = f"write it like {takes.example}"
    signature = inspect.signature(takes.shape)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as exc:
        return f"mark {mark.name!r} {_given(args, kwargs)}: {exc}; {fix}"
    hints = typing.get_type_hints(takes.shape)
    for name, value in bound.arguments.items():
        star = signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL
        for one in value if star else (value,):
            try:
                TypeAdapter(hints[name], config=_STRICT).validate_python(one)
            except ValidationError as exc:
                msg = exc.errors()[0]["msg"]
                return f"mark {mark.name!r}: {name}: {msg}, got {one!r}; {fix}"
    if takes.argued and not args and not kwargs:
        return f"mark {mark.name!r} needs an argument; {fix}"
    conditions = [*args, *([kwargs["condition"]] if "condition" in kwargs else [])]
    if takes.reasoned and conditions and not kwargs.get("reason"):
        return f"mark {mark.name!r} with a condition needs a 'reason' too; {fix}"
    return ""


def _given(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str:
    """The arguments of a mark as written in Python, for a report."""
    return "(" + ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())]) + ")"


def _refuse_code(name: str, args: Any, fail: Callable[[str], WorkflowSpecError]) -> None:
    """A workflow file is data: a mark whose condition is a string would run it as
    Python (pytest evaluates such conditions), and marks that only shape Python
    functions would be silently ignored."""
    if name in _NOT_FOR_ITEMS:
        raise fail(f"mark {name!r} does not apply to workflow items: {_NOT_FOR_ITEMS[name]}")
    conditions = []
    if isinstance(args, list):
        conditions = args if name in ("skipif", "xfail") else []
    elif isinstance(args, dict):
        conditions = [args.get("condition")] if "condition" in args else []
    if any(isinstance(c, str) for c in conditions):
        raise fail(
            f"mark {name!r} has a string condition, which pytest would run as Python: "
            "workflow files hold data, not code; give true/false, or write "
            f"{{skip: 'reason'}}, or put the condition in a conftest.py"
        )
