"""A Ctrl-C that a process took is not lost: each case runs in a Python process of its own,
where the signal really arrives (pytest's own handlers stay out of it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


LOST_IN_A_FINALISER = """
    import gc, os, signal, time
    from pytest_netgent.system import interrupts

    if {install}:
        interrupts.install()

    class Busy:
        def __del__(self):  # a library object collected while the Ctrl-C comes
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)  # the handler runs here, and Python drops what it raised

    Busy()
    gc.collect()
    print("went on", flush=True)
    try:
        interrupts.check()  # where a run would go on: the next item, the next browser
    except KeyboardInterrupt as exc:
        print("stopped:", exc)
"""


@pytest.mark.parametrize("install", [True, False], ids=["remembered", "python-alone"])
def test_a_ctrl_c_lost_in_a_finaliser_still_stops_the_process(install: bool) -> None:
    done = run(LOST_IN_A_FINALISER.format(install=install))
    assert "went on" in done.stdout  # Python itself lost the KeyboardInterrupt
    assert "Exception ignored" in done.stderr
    if install:
        assert "stopped: SIGINT (Ctrl-C): the run stops" in done.stdout
    else:
        assert "stopped" not in done.stdout


HANDED_TO_ANOTHER_THREAD = """
    import signal, threading, time
    from pytest_netgent.system import interrupts

    interrupts.install()
    main = threading.main_thread()

    def other():
        time.sleep(0.5)
        # the kernel may hand a process's SIGINT to any of its threads
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    threading.Thread(target=other).start()
    started = time.monotonic()
    try:
        {wait}
    except KeyboardInterrupt:
        pass
    print(f"{{time.monotonic() - started:.1f}}")
"""


def test_a_wait_ends_soon_after_a_ctrl_c_another_thread_was_handed() -> None:
    sliced = run(HANDED_TO_ANOTHER_THREAD.format(wait="interrupts.wait(threading.Event(), 20)"))
    assert float(sliced.stdout) < 5, sliced.stderr
    # what a plain wait does: the handler runs only once the main thread's wait ends
    plain = run(HANDED_TO_ANOTHER_THREAD.format(wait="threading.Event().wait(6)"))
    assert float(plain.stdout) >= 5.9, plain.stderr


def test_sigterm_stops_as_ctrl_c_and_a_handler_of_someone_else_is_kept() -> None:
    done = run(
        """
        import os, signal
        from pytest_netgent.system import interrupts

        mine = lambda signum, frame: print("theirs", signum)
        signal.signal(signal.SIGINT, mine)
        interrupts.install(sigterm=True)
        assert signal.getsignal(signal.SIGINT) is mine
        os.kill(os.getpid(), signal.SIGINT)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            import time; time.sleep(5)
        except KeyboardInterrupt as exc:
            print("stopped:", exc, interrupts.interrupted())
        """
    )
    assert done.stdout.splitlines() == [
        "theirs 2",
        "stopped: SIGTERM: the run stops SIGTERM: the run stops",
    ], done.stderr
