"""``netgent -e STATES.json [CREDENTIALS]`` and ``netgent -g KEYS CREDENTIALS PROMPTS``:
replay a NetGent state repository, or generate one from state prompts, in Chromium;
and what every run of a repository shares (the agent, its result file, the variables
and options given on the command line).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..compat.inputs import (
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
from ..system import atomic

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
        type=positive_seconds,
        metavar="SECONDS",
        help="end the run with success after SECONDS when it is in a continuous state "
        "(NetGent's config.continuous); without it a continuous state runs until "
        "recursion_limit steps",
    )
    parser.add_argument(
        "--state-timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="how long a page may take to match a state (default 10)",
    )


def positive_seconds(text: str) -> float:
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


def parse_variables(items: Sequence[str], netgent: str | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    if netgent:
        data = json_argument(netgent, "--variables")
        if not isinstance(data, dict):
            raise BadInput(f"--variables: expected a JSON object, got a {kind_of(data)}")
        out = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise BadInput(f"--var {item!r}: write NAME=VALUE, e.g. --var base_url=http://…")
        out[name] = value
    return out


def json_argument(text: str, what: str) -> Any:
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


def make_agent(args: argparse.Namespace, llm: Any, enabled: bool, creds: dict[str, str]) -> Any:
    from ..compat.sdk import NetGent

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


def failure_report(result: Any, source: str, heal: str) -> str:
    from ..errors import ReplayError

    error = result.error
    if error is None:
        return "the run ended without reaching an end state"
    if isinstance(error, ReplayError):
        error.workflow = Path(source).name
        error.with_details(heal=heal)
    report: str = error.report()
    return report


def write_json(path: str, data: Any) -> None:
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
    variables = {**saved_variables(files[0]), **parse_variables(args.var, args.variables)}
    output_dir = output_dir_of(args.output)
    with make_agent(args, None, False, creds) as agent:
        result = agent.run(
            state_prompts=[],
            state_repository=repository,
            variables=variables,
            output_dir=output_dir,
        )
    if args.output:
        write_json(args.output, result_json(result))
    if result.reached_end:
        print(f"netgent: end state reached: {result.end_state}", file=sys.stderr)
        return OK
    heal = "regenerate the repository with netgent -g KEYS CREDENTIALS PROMPTS"
    print(failure_report(result, files[0], heal), file=sys.stderr)
    return FAILED


def generate(args: argparse.Namespace) -> int:
    """``-g KEYS CREDENTIALS PROMPTS``."""
    keys, credentials, prompts_file = args.generate
    prompts = read_prompts(prompts_file)
    creds = read_credentials(credentials)
    variables = parse_variables(args.var, args.variables)
    output_dir = output_dir_of(args.output)
    llm = load_keys(keys)
    with make_agent(args, llm, True, creds) as agent:
        result = agent.run(state_prompts=prompts, variables=variables, output_dir=output_dir)
    if args.output:
        write_json(args.output, result.state_repository)
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
    print(failure_report(result, prompts_file, heal), file=sys.stderr)
    print(f"netgent: partial repository ({summary}) written{where}", file=sys.stderr)
    return FAILED


def saved_variables(path_text: str) -> dict[str, str]:
    """The ``variables`` a NetGent result file (``-e ... -o``) was run with: defaults for
    replaying it again (``--variables`` and ``--var`` win)."""
    from ..workflow.netgent_formats import repository_variables

    return repository_variables(read_json(path_text, "STATES"))


def output_dir_of(output: str | None) -> Path:
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


def result_json(result: Any) -> dict[str, Any]:
    from dataclasses import asdict

    return {
        "state_repository": result.state_repository,
        "reached_end": result.reached_end,
        "end_state": result.end_state,
        "final_url": result.final_url,
        "error": result.error.report() if result.error is not None else None,
        "timeline": [asdict(e) for e in result.timeline],
        "measurements": result.measurements,
        "executed": [
            {"type": type(m).__name__, **m.model_dump(mode="json", exclude_none=True)}
            for m in result.context
        ],
    }


def check_profile(folder: str | None) -> None:
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


def reject_unknown_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
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


def command(argv: list[str]) -> int:
    """``netgent -e ...`` or ``netgent -g ...``; returns the exit status."""
    parser = _parser()
    reject_unknown_flags(parser, argv)
    args = parser.parse_args(argv)
    check_profile(args.user_data_dir)
    return execute(args) if args.execute else generate(args)
