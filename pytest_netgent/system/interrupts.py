"""A Ctrl-C (SIGINT) or SIGTERM that this process must not lose.

Python turns a SIGINT into a ``KeyboardInterrupt`` raised wherever the main thread
happens to be when its handler runs, and that exception can be lost: raised inside an
object's finaliser (``__del__``, which Python reports as "Exception ignored" and goes
on), inside a library that catches every exception and retries, or late, when the kernel
handed the signal to another thread while the main thread sat in a long wait (the handler
then runs only once that wait ends). A pytest process that lost it goes on to its next
item with a new browser, and a parallel run outlives its Ctrl-C.

So the interrupt is remembered: :func:`install` puts a handler in place that raises the
``KeyboardInterrupt`` as Python's own does and also notes the signal, and the places
where a run would go on (the next item, the next browser, the next tick of a workflow,
every wait) call :func:`check`, which raises it again. Waits are made of slices
(:func:`wait`), so that a handler that could not run during the wait runs within a
slice of it.
"""

from __future__ import annotations

import signal
import threading
import time
from types import FrameType

SLICE_S = 0.25
"""The longest a wait (:func:`wait`) goes without looking for an interrupt."""

_NAMES = {signal.SIGINT: "SIGINT (Ctrl-C)", signal.SIGTERM: "SIGTERM"}

_noted = threading.Event()
_reason = ""


def install(sigterm: bool = False) -> None:
    """Remember SIGINT (and SIGTERM with ``sigterm``: it then stops the process as Ctrl-C
    does, so pytest ends the session and its fixtures) in this process; a handler someone
    else set is kept. Only the main thread can set handlers; elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _handle)
    if sigterm and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _handle)


def _handle(signum: int, frame: FrameType | None) -> None:
    note(signum)
    raise KeyboardInterrupt(_reason)


def note(signum: int) -> None:
    """Remember that signal ``signum`` asked this process to stop."""
    global _reason
    if not _noted.is_set():
        name = _NAMES.get(signal.Signals(signum), f"signal {signum}")
        _reason = f"{name}: the run stops"
        _noted.set()


def interrupted() -> str:
    """Why this process was asked to stop ("" if it was not)."""
    return _reason if _noted.is_set() else ""


def check() -> None:
    """Raise ``KeyboardInterrupt`` if this process was asked to stop, even when the first
    one was lost on the way."""
    if _noted.is_set():
        raise KeyboardInterrupt(_reason)


def wait(event: threading.Event, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``event`` (``True`` once it is set), in slices of
    :data:`SLICE_S`: an interrupt ends the wait within a slice (:func:`check`)."""
    end = time.monotonic() + seconds
    while (remaining := end - time.monotonic()) > 0:
        if event.wait(min(remaining, SLICE_S)):
            return True
        check()
    return event.is_set()


def forget() -> None:
    """Forget an interrupt (for a process that handled it and goes on, such as a test
    of this module)."""
    global _reason
    _noted.clear()
    _reason = ""
