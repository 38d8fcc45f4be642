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

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..system import atomic
from .inputs import (
    BAD_INPUT,
    FAILED,
    OK,
    TOO_DEEP,
    BadInput,
    Parser,
    kind_of,
    read_credentials,
    read_json,
    read_prompts,
    read_repository,
    writable,
)

KEYS_HELP = """\
KEYS names the model that generates states:
  builtin               the offline rules, no model and no key
  provider:model        a langchain chat model, e.g. openai:gpt-4o (needs the langchain
                        package and the provider's package)
  module:attr           a BaseChatModel instance, or a factory returning one
  FILE.json             {"model": "<one of the above>", "env": {"OPENAI_API_KEY": "..."}};
                        a Google service-account key file (NetGent's usual KEYS) selects
                        google_vertexai:gemini-2.0-flash with those credentials
Keys are set in this process's environment only; they are never written anywhere."""

CREDENTIALS_HELP = """\
CREDENTIALS is a JSON object of strings, as a file or inline ('{"password": "..."}').
Each becomes a secret: states refer to it as {name}, the browser types its value, and the
value never reaches the repository, the output, the terminal or a model."""

VERTEX_DEFAULT = "google_vertexai:gemini-2.0-flash"


def _parser() -> argparse.ArgumentParser:
    from ..system.version import __version__

    parser = Parser(
        prog="netgent",
        description="Replay (-e) or generate (-g) a NetGent workflow in Chromium.",
        epilog=f"{KEYS_HELP}\n\n{CREDENTIALS_HELP}\n\n"
        "Convert prompts to a pytest workflow file with: netgent convert PROMPTS.json\n"
        "Merge the artifacts folders of a run's shards with: netgent merge DIR... -o OUT\n"
        "Open an item's trace (--netgent-trace) with: netgent show-trace TRACE.zip\n"
        "Pick by hand what --netgent-record declined with: netgent studio PICK.json\n"
        "Plot captured items' throughput and video quality with: netgent plot FOLDER...\n"
        "Exit status: 0 end state reached, 1 not reached, 2 bad input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _mode_arguments(parser)
    _run_arguments(parser)
    parser.add_argument("--version", action="version", version=f"netgent {__version__}")
    return parser


def _mode_arguments(parser: argparse.ArgumentParser) -> None:
    """Replay or generate, and where the result goes."""
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "-e",
        "--execute",
        nargs="+",
        metavar=("STATES.json", "CREDENTIALS"),
        help="replay the state repository STATES.json, typing CREDENTIALS as secrets",
    )
    mode.add_argument(
        "-g",
        "--generate",
        nargs=3,
        metavar=("KEYS", "CREDENTIALS", "PROMPTS"),
        help="generate a state repository from the state prompts in PROMPTS (JSON)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="write the result here: the state repository (-g) or the run's result (-e); "
        "default: the repository to stdout (-g), nothing (-e)",
    )


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    """The browser, the values placeholders take, and the run's limits."""
    parser.add_argument(
        "--user-data-dir", metavar="DIR", help="browser profile to use (persistent sessions)"
    )
    parser.add_argument(
        "-s", "--show", action="store_true", help="show the browser window (headed), to watch"
    )
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="fill {NAME} (and NetGent's %%NAME%%) placeholders, e.g. "
        "--var base_url=http://127.0.0.1:8000",
    )
    parser.add_argument(
        "--variables",
        metavar="VARS",
        help="NetGent's variables: a JSON object, as a file or inline, filling %%NAME%% "
        "(and {NAME}) placeholders; --var entries win",
    )
    parser.add_argument(
        "--duration",
        type=_positive_seconds,
        metavar="SECONDS",
        help="end the run with success after SECONDS when it is in a continuous state "
        "(NetGent's config.continuous); without it a continuous state runs until "
        "recursion_limit steps",
    )
    parser.add_argument(
        "--state-timeout",
        type=_positive_seconds,
        metavar="SECONDS",
        help="how long a page may take to match a state (default 10)",
    )


def _many_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="netgent",
        usage="netgent A.json B.json C.sh ... [--out DIR] [options]",
        description="Replay NetGent state repositories (each in a browser and profile of its "
        "own) and run shell scripts, all at the same time; each one's result and log go to "
        "OUT/<name>/<name>_result.json and OUT/<name>/<name>.log.",
        epilog="Exit status: 0 when every repository reached an end state and every script "
        "exited 0, 1 otherwise, 2 for bad input.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="STATES.json or SCRIPT.sh")
    parser.add_argument("--out", default="out", metavar="DIR", help="results (default: out)")
    parser.add_argument(
        "--credentials", metavar="CREDENTIALS", help="secrets for every repository (JSON)"
    )
    parser.add_argument("-s", "--show", action="store_true", help="show the browser windows")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--variables", metavar="VARS", help="NetGent's variables (JSON)")
    parser.add_argument("--duration", type=_positive_seconds, metavar="SECONDS")
    parser.add_argument("--state-timeout", type=_positive_seconds, metavar="SECONDS")
    parser.add_argument("--user-data-dir", help=argparse.SUPPRESS)
    return parser


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return value


# ---------------------------------------------------------------------- reading inputs


def load_keys(spec: str) -> Any:
    """The chat model KEYS names (``None`` for builtin); sets the file's keys in the
    environment of this process."""
    from ..synthesis.models import ModelSpecError, load_model

    model_spec = spec
    path = Path(spec)
    if spec.endswith(".json") or path.is_file():
        data = read_json(spec, "KEYS")
        if not isinstance(data, dict):
            raise BadInput(f"KEYS {spec}: expected a JSON object, got a {kind_of(data)}")
        if data.get("type") == "service_account":
            os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = str(path.resolve())
            model_spec = str(data.get("model", VERTEX_DEFAULT))
        else:
            if "model" not in data:
                raise BadInput(
                    f'KEYS {spec}: no "model" key; write {{"model": "openai:gpt-4o", '
                    '"env": {"OPENAI_API_KEY": "..."}} or {"model": "builtin"}'
                )
            env = data.get("env", {})
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                raise BadInput(f'KEYS {spec}: "env" must be an object of strings')
            os.environ.update(env)
            model_spec = str(data["model"])
    try:
        return load_model(model_spec, option="KEYS")
    except ModelSpecError as exc:
        raise BadInput(str(exc)) from None


def _variables(items: Sequence[str], netgent: str | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    if netgent:
        data = _json_argument(netgent, "--variables")
        if not isinstance(data, dict):
            raise BadInput(f"--variables: expected a JSON object, got a {kind_of(data)}")
        out = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise BadInput(f"--var {item!r}: write NAME=VALUE, e.g. --var base_url=http://…")
        out[name] = value
    return out


def _json_argument(text: str, what: str) -> Any:
    """A JSON value given inline or as a file's path."""
    if text.strip().startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{what} (inline JSON), column {exc.colno}: {exc.msg}") from None
        except RecursionError:
            raise BadInput(f"{what} (inline JSON): {TOO_DEEP}") from None
    return read_json(text, what)


# ---------------------------------------------------------------------- modes


def _agent(args: argparse.Namespace, llm: Any, enabled: bool, creds: dict[str, str]) -> Any:
    from .sdk import NetGent

    config: dict[str, Any] = {}
    if args.state_timeout is not None:
        config["state_timeout"] = args.state_timeout
    if args.duration is not None:
        config["duration"] = args.duration
    return NetGent(
        llm=llm,
        llm_enabled=enabled,
        config=config,
        user_data_dir=args.user_data_dir,
        headless=not args.show,
        credentials=creds,
    )


def _failure(result: Any, source: str, heal: str) -> str:
    from ..errors import ReplayError

    error = result.error
    if error is None:
        return "the run ended without reaching an end state"
    if isinstance(error, ReplayError):
        error.workflow = Path(source).name
        error.with_details(heal=heal)
    report: str = error.report()
    return report


def _write(path: str, data: Any) -> None:
    target = Path(path)
    if not target.parent.is_dir():
        raise BadInput(f"-o {path}: folder {target.parent} does not exist")
    atomic.write_text(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def execute(args: argparse.Namespace) -> int:
    """``-e STATES.json [CREDENTIALS]``."""
    files = args.execute
    if len(files) > 2:
        raise BadInput(f"-e takes STATES.json [CREDENTIALS], got {len(files)} arguments")
    repository = read_repository(files[0])
    creds = read_credentials(files[1]) if len(files) == 2 else {}
    variables = {**_saved_variables(files[0]), **_variables(args.var, args.variables)}
    output_dir = _output_dir(args.output)
    with _agent(args, None, False, creds) as agent:
        result = agent.run(
            state_prompts=[],
            state_repository=repository,
            variables=variables,
            output_dir=output_dir,
        )
    if args.output:
        _write(args.output, _result_json(result))
    if result.reached_end:
        print(f"netgent: end state reached: {result.end_state}", file=sys.stderr)
        return OK
    heal = "regenerate the repository with netgent -g KEYS CREDENTIALS PROMPTS"
    print(_failure(result, files[0], heal), file=sys.stderr)
    return FAILED


def generate(args: argparse.Namespace) -> int:
    """``-g KEYS CREDENTIALS PROMPTS``."""
    keys, credentials, prompts_file = args.generate
    prompts = read_prompts(prompts_file)
    creds = read_credentials(credentials)
    variables = _variables(args.var, args.variables)
    output_dir = _output_dir(args.output)
    llm = load_keys(keys)
    with _agent(args, llm, True, creds) as agent:
        result = agent.run(state_prompts=prompts, variables=variables, output_dir=output_dir)
    if args.output:
        _write(args.output, result.state_repository)
    else:
        print(json.dumps(result.state_repository, indent=2, ensure_ascii=False))
    usage = result.usage
    summary = (
        f"{len(result.state_repository)} states, {usage.builtin_steps} builtin steps, "
        f"{usage.llm_calls} LLM call{'' if usage.llm_calls == 1 else 's'}, "
        f"{usage.input_tokens + usage.output_tokens} tokens"
    )
    if result.reached_end:
        print(f"netgent: end state reached: {result.end_state} ({summary})", file=sys.stderr)
        return OK
    where = f" to {args.output}" if args.output else ""
    heal = "check the state prompts, then run netgent -g again"
    print(_failure(result, prompts_file, heal), file=sys.stderr)
    print(f"netgent: partial repository ({summary}) written{where}", file=sys.stderr)
    return FAILED


def run_many(args: argparse.Namespace) -> int:
    """``netgent A.json B.json C.sh``: every repository replayed and every script run at
    the same time; 0 only when all succeeded."""
    import threading

    jobs: dict[str, tuple[str, Path]] = {}
    for text in args.files:
        path = Path(text)
        kind = {".json": "repository", ".sh": "script"}.get(path.suffix)
        if kind is None:
            raise BadInput(f"{text}: give NetGent state repositories (.json) or scripts (.sh)")
        if not path.is_file():
            raise BadInput(f"{text}: no such file")
        if kind == "repository":
            read_repository(text)  # a bad one stops all before any starts
        name = path.name.removesuffix(path.suffix)
        for suffix in ("_result", "-result", "_states", "-states"):
            name = name.removesuffix(suffix)
        if name in jobs:
            raise BadInput(f"{text} and {jobs[name][1]} would both write {args.out}/{name}/")
        jobs[name] = (kind, path)
    out = Path(args.out)
    creds = read_credentials(args.credentials) if args.credentials else {}
    variables = _variables(args.var, args.variables)
    for name in jobs:
        (out / name).mkdir(parents=True, exist_ok=True)
    passed: dict[str, bool] = {}

    def one(name: str, kind: str, path: Path) -> None:
        folder = out / name
        try:
            if kind == "script":
                passed[name] = _script(name, path, folder)
            else:
                passed[name] = _replay(name, path, folder, args, creds, variables)
        except Exception as exc:  # one job's crash is its failure, not the others'
            (folder / f"{name}.log").write_text(f"{type(exc).__name__}: {exc}\n", "utf-8")
            passed[name] = False
        verdict = "succeeded" if passed[name] else "FAILED"
        print(f"netgent: {name} {verdict} (log: {folder / f'{name}.log'})", file=sys.stderr)

    threads = [
        threading.Thread(target=one, args=(name, kind, path), daemon=True, name=name)
        for name, (kind, path) in jobs.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(timeout=0.5)
    failed = [name for name in jobs if not passed.get(name)]
    if failed:
        print(f"netgent: {len(failed)} of {len(jobs)} failed: {', '.join(failed)}", file=sys.stderr)
        return FAILED
    print(f"netgent: all {len(jobs)} succeeded; results in {out}/", file=sys.stderr)
    return OK


def _replay(
    name: str,
    path: Path,
    folder: Path,
    args: argparse.Namespace,
    creds: dict[str, str],
    variables: dict[str, str],
) -> bool:
    """One repository replayed on a browser of its own: ``<name>_result.json`` (as ``-e
    -o`` writes it) and ``<name>.log`` (how it ended)."""
    with _agent(args, None, False, creds) as agent:
        result = agent.run(
            state_prompts=[],
            state_repository=read_repository(str(path)),
            variables={**_saved_variables(str(path)), **variables},
            output_dir=folder,
        )
    _write(str(folder / f"{name}_result.json"), _result_json(result))
    heal = "regenerate the repository with netgent -g KEYS CREDENTIALS PROMPTS"
    log = (
        f"end state reached: {result.end_state}"
        if result.reached_end
        else _failure(result, str(path), heal)
    )
    (folder / f"{name}.log").write_text(log + "\n", "utf-8")
    return bool(result.reached_end)


def _script(name: str, path: Path, folder: Path) -> bool:
    """One shell script run by bash in its own folder, output in ``<name>.log``; its
    exit status and times in ``<name>_result.json``."""
    import subprocess
    import time
    from datetime import datetime, timezone

    started = time.monotonic()
    at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    with (folder / f"{name}.log").open("wb") as log:
        done = subprocess.run(
            ["bash", str(path.resolve())],
            cwd=path.parent,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    _write(
        str(folder / f"{name}_result.json"),
        {
            "script": str(path),
            "exit_status": done.returncode,
            "started": at,
            "duration": round(time.monotonic() - started, 3),
        },
    )
    return done.returncode == 0


def _saved_variables(path_text: str) -> dict[str, str]:
    """The ``variables`` a NetGent result file (``-e ... -o``) was run with: defaults for
    replaying it again (``--variables`` and ``--var`` win)."""
    from ..workflow.netgent_formats import repository_variables

    return repository_variables(read_json(path_text, "STATES"))


def _output_dir(output: str | None) -> Path:
    """Where the run's relative output paths go: the ``-o`` file's folder, else here."""
    if not output:
        return Path.cwd()
    folder = Path(output).parent
    if not folder.is_dir():
        raise BadInput(f"-o {output}: folder {folder} does not exist")
    target = Path(output)
    if target.is_dir():
        raise BadInput(f"-o {output} is a folder: give a file name, e.g. -o {output}/result.json")
    if not writable(folder) or (target.exists() and not os.access(target, os.W_OK)):
        raise BadInput(f"-o {output}: cannot write there; choose a writable place")
    return folder


def _result_json(result: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "state_repository": result.state_repository,
        "reached_end": result.reached_end,
        "end_state": result.end_state,
        "final_url": result.final_url,
        "error": result.error.report() if result.error is not None else None,
        "timeline": [asdict(e) for e in result.timeline],
        "executed": [
            {"type": type(m).__name__, **m.model_dump(mode="json", exclude_none=True)}
            for m in result.context
        ],
    }


def _check_profile(folder: str | None) -> None:
    """NetGent's ``--user-data-dir`` may name a profile still to be made (the browser
    makes it, and it persists): said aloud, not done silently; a file, or a folder whose
    parent is missing, is an error."""
    if not folder:
        return
    path = Path(folder)
    if path.exists() and not path.is_dir():
        raise BadInput(f"--user-data-dir {folder} is a file: give a profile folder")
    if not path.exists():
        if not path.parent.is_dir():
            raise BadInput(
                f"--user-data-dir {folder}: neither it nor its folder {path.parent} exists"
            )
        print(
            f"netgent: --user-data-dir {folder} does not exist: a new profile is made there "
            "(it keeps logins and cookies for the next runs)",
            file=sys.stderr,
        )


def _unknown_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Name an unknown flag before argparse reports something else missing."""
    import difflib

    known = {flag for action in parser._actions for flag in action.option_strings}
    for arg in argv:
        if arg == "--":
            return
        flag = arg.split("=", 1)[0]
        number = flag[1:].replace(".", "").isdigit()  # a negative number is a value
        if flag.startswith("-") and len(flag) > 1 and not number and flag not in known:
            close = difflib.get_close_matches(flag, sorted(known), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise BadInput(f"unknown option {flag}{hint} (netgent --help lists them)")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``netgent``; returns the exit status."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    from ..errors import NetgentError

    try:
        if args_list[:1] == ["show-trace"]:
            from ..studio.viewer import main as show_trace

            return show_trace(args_list[1:])
        if args_list[:1] == ["studio"]:
            from ..studio.picking import main as studio

            return studio(args_list[1:])
        if args_list[:1] == ["plot"]:
            from ..studio.plots import main as plot

            return plot(args_list[1:])
        if args_list[:1] == ["merge"]:
            from ..dataset.merge import main as merge

            return merge(args_list[1:])
        if args_list[:1] == ["convert"]:
            from .convert import convert

            return convert(args_list[1:])
        if args_list and args_list[0].endswith((".json", ".sh")):
            many = _many_parser()
            _unknown_flags(many, args_list)
            return run_many(many.parse_args(args_list))
        parser = _parser()
        _unknown_flags(parser, args_list)
        args = parser.parse_args(args_list)
        _check_profile(args.user_data_dir)
        return execute(args) if args.execute else generate(args)
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


if __name__ == "__main__":
    run()
