"""The ``netgent`` command: NetGent's command line on pytest-netgent's engine.

::

    netgent -e STATES.json [CREDENTIALS]        replay a state repository
    netgent -g KEYS CREDENTIALS PROMPTS         generate one from state prompts
    netgent A.json B.json C.sh [--out DIR]      replay repositories and run shell
                                                scripts at the same time
    netgent convert PROMPTS.json                write the equivalent .netgent.yaml
    netgent convert STATES.json|DIR [-o DIR]    a workflow file replaying a repository
    netgent convert A.json B.json C.sh -o DIR   a scenario running them together
    netgent merge DIR... -o OUT                 one dataset from the folders of a run's
                                                shards (--netgent-shard K/N)
    netgent show-trace TRACE.zip [--port N]     an item's trace (--netgent-trace) in the
                                                browser
    netgent studio PICK.json [--port N]         pick by hand the element of an
              [--base-url URL]                  instruction --netgent-record declined
                                                (against the pick's base URL when it is
                                                this machine's, else --base-url's)
    netgent plot FOLDER... [--format svg,png]   throughput and video quality plots of
                                                captured items (--netgent-capture)

Exit status: 0 when the run reached an end state (every run and script, for several),
1 when it did not (the reason, a UI drift report for a replay, is on stderr), 2 for bad
input (a missing or invalid file, an unknown option), with what is wrong and how to fix
it on stderr.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

from ..compat.inputs import BAD_INPUT, FAILED, BadInput

SUBCOMMANDS: dict[str, str] = {
    "convert": "pytest_netgent.compat.convert:convert",
    "merge": "pytest_netgent.dataset.merge:main",
    "show-trace": "pytest_netgent.studio.viewer:main",
    "studio": "pytest_netgent.studio.pick_server:main",
    "plot": "pytest_netgent.studio.plots:main",
}
"""Each subcommand's name and its entry point (``module:function``, taking the arguments
after the name and returning the exit status), imported only when it is run."""


def handler(argv: Sequence[str]) -> tuple[Callable[[list[str]], int], list[str]]:
    """The entry point ``argv`` asks for and the arguments it takes: a subcommand's by
    its name, several repositories and scripts at once when the first argument is a
    ``.json`` or ``.sh`` file, else NetGent's ``-e`` / ``-g``."""
    args = list(argv)
    target = SUBCOMMANDS.get(args[0]) if args else None
    if target is not None:
        module, _, function = target.partition(":")
        entry: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
        return entry, args[1:]
    if args and args[0].endswith((".json", ".sh")):
        from .many import command as many

        return many, args
    from .netgent import command as netgent

    return netgent, args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``netgent``; returns the exit status."""
    from ..errors import NetgentError

    try:
        entry, args = handler(sys.argv[1:] if argv is None else argv)
        return entry(args)
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else BAD_INPUT
    except BadInput as exc:
        print(f"netgent: error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except NetgentError as exc:
        print(f"netgent: {exc.report()}", file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:
        print("netgent: interrupted", file=sys.stderr)
        return 130


def run() -> None:
    """Console-script wrapper: exit with :func:`main`'s status."""
    sys.exit(main())
