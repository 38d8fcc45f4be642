"""The ``netgent`` command: NetGent's command line on pytest-netgent's engine.

::

    netgent -e STATES.json [CREDENTIALS]        replay a state repository
    netgent -g KEYS CREDENTIALS PROMPTS         generate one from state prompts
    netgent convert PROMPTS.json                write the equivalent .netgent.yaml
    netgent convert STATES.json|DIR [-o DIR]    a workflow file replaying a repository

Exit status: 0 when the run reached an end state, 1 when it did not (the reason, a UI
drift report for a replay, is on stderr), 2 for bad input (a missing or invalid file,
an unknown option), with what is wrong and how to fix it on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import atomic

OK, FAILED, BAD_INPUT = 0, 1, 2

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


class BadInput(Exception):
    """A command-line input cannot be used; the message says which and how to fix it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(BAD_INPUT, f"netgent: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="netgent",
        description="Replay (-e) or generate (-g) a NetGent workflow in Chromium.",
        epilog=f"{KEYS_HELP}\n\n{CREDENTIALS_HELP}\n\n"
        "Convert prompts to a pytest workflow file with: netgent convert PROMPTS.json\n"
        "Exit status: 0 end state reached, 1 not reached, 2 bad input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    parser.add_argument("--version", action="version", version=f"netgent {__version__}")
    return parser


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return value


def _convert_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="netgent convert",
        description="Write the pytest-netgent workflow file (.netgent.yaml) equivalent to "
        "a NetGent prompts file, or one that replays a NetGent state repository (with the "
        "repository as its cached states); a folder converts every repository in it.",
    )
    parser.add_argument("prompts", metavar="PROMPTS.json|STATES.json|DIR")
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="prompts: the workflow file to write (default: PROMPTS.netgent.yaml beside "
        "it); repositories: the folder to write into (default: the repository's folder)",
    )
    parser.add_argument("--name", help="the workflow's name (default: from the file name)")
    parser.add_argument(
        "--credentials",
        metavar="FILE",
        help="a NetGent credentials file: its keys become secrets read from environment "
        "variables NETGENT_<KEY> (the values are not copied)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    return parser


# ---------------------------------------------------------------------- reading inputs


def _read_json(path_text: str, what: str) -> Any:
    path = Path(path_text)
    if not path.is_file():
        raise BadInput(f"{what} {path_text}: no such file")
    try:
        return json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise BadInput(
            f"{what} {path_text}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{what} {path_text}: cannot be read: {exc}") from None


def read_credentials(text: str) -> dict[str, str]:
    """Credentials from a JSON file or an inline JSON object: ``{name: value}``."""
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise BadInput(
                f"CREDENTIALS (inline JSON), column {exc.colno}: invalid JSON: {exc.msg}"
            ) from None
        where = "CREDENTIALS (inline JSON)"
    else:
        data = _read_json(text, "CREDENTIALS")
        where = f"CREDENTIALS {text}"
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a JSON object of name: value, got a {_kind(data)}")
    out: dict[str, str] = {}
    for name, value in data.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise BadInput(
                f"{where}: {name!r} is a {_kind(value)}; each credential must be a string"
            )
        if not name.isidentifier():
            raise BadInput(
                f"{where}: {name!r} cannot be a placeholder name; use letters, digits and _"
            )
        out[name] = str(value)
    return out


def read_repository(path_text: str) -> list[dict[str, Any]]:
    """A NetGent state repository (a JSON list of states) or a pytest-netgent cache
    document, validated."""
    from .automaton import parse_automaton

    data = _read_json(path_text, "STATES")
    try:
        automaton = parse_automaton(data)
    except ValueError as exc:
        raise BadInput(
            f"STATES {path_text}: {exc} (see the check and action types in "
            "`python -m pytest_netgent schema` and the README's cache format)"
        ) from None
    if not automaton.states:
        raise BadInput(f"STATES {path_text}: holds no states")
    return [s.model_dump(mode="json", exclude_none=True) for s in automaton.states]


def read_prompts(path_text: str) -> list[Any]:
    """NetGent state prompts: a JSON list (or ``{"state_prompts": [...]}``), validated."""
    from pydantic import ValidationError

    from .messages import StatePrompt

    data = _read_json(path_text, "PROMPTS")
    if isinstance(data, dict):
        data = data.get("state_prompts", data.get("prompts"))
    if not isinstance(data, list) or not data:
        raise BadInput(
            f"PROMPTS {path_text}: expected a non-empty JSON list of state prompts "
            '({"name", "description", "triggers", "actions", "end_state"})'
        )
    prompts = []
    for index, entry in enumerate(data):
        try:
            prompts.append(StatePrompt.model_validate(entry))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "entry"
            name = entry.get("name", index) if isinstance(entry, dict) else index
            raise BadInput(
                f"PROMPTS {path_text}: state {name!r}: {field}: {err['msg']} "
                "(state prompts have name, description, triggers, actions, end_state)"
            ) from None
    return prompts


def load_keys(spec: str) -> Any:
    """The chat model KEYS names (``None`` for builtin); sets the file's keys in the
    environment of this process."""
    from .synthesis.models import ModelSpecError, load_model

    model_spec = spec
    path = Path(spec)
    if spec.endswith(".json") or path.is_file():
        data = _read_json(spec, "KEYS")
        if not isinstance(data, dict):
            raise BadInput(f"KEYS {spec}: expected a JSON object, got a {_kind(data)}")
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
            raise BadInput(f"--variables: expected a JSON object, got a {_kind(data)}")
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
    return _read_json(text, what)


def _kind(value: Any) -> str:
    names = {"dict": "object", "list": "list", "str": "string", "NoneType": "null"}
    return names.get(type(value).__name__, type(value).__name__)


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
    from .errors import ReplayError

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
        f"{usage.llm_calls} LLM calls, {usage.input_tokens + usage.output_tokens} tokens"
    )
    if result.reached_end:
        print(f"netgent: end state reached: {result.end_state} ({summary})", file=sys.stderr)
        return OK
    where = f" to {args.output}" if args.output else ""
    heal = "check the state prompts, then run netgent -g again"
    print(_failure(result, prompts_file, heal), file=sys.stderr)
    print(f"netgent: partial repository ({summary}) written{where}", file=sys.stderr)
    return FAILED


def _saved_variables(path_text: str) -> dict[str, str]:
    """The ``variables`` a NetGent result file (``-e ... -o``) was run with: defaults for
    replaying it again (``--variables`` and ``--var`` win)."""
    data = _read_json(path_text, "STATES")
    saved = data.get("variables") if isinstance(data, dict) else None
    if not isinstance(saved, dict):
        return {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in saved.items()}


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
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
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


def convert(argv: Sequence[str]) -> int:
    """``netgent convert PROMPTS.json``: the equivalent ``.netgent.yaml``;
    ``netgent convert STATES.json|DIR``: workflow files replaying state repositories."""
    args = _convert_parser().parse_args(argv)
    source = Path(args.prompts)
    if source.is_dir():
        return convert_repositories(sorted(source.glob("*.json")), args, folder=source)
    if source.is_file():
        data = _read_json(args.prompts, "STATES")
        if data in ([], {}, {"state_repository": []}):
            raise BadInput(
                f"{args.prompts}: the repository is empty ({json.dumps(data)}): it holds no "
                "states or state prompts; nothing to convert"
            )
        if _is_repository(data):
            return convert_repositories([source], args)
    prompts = read_prompts(args.prompts)
    stem = source.name.removesuffix(".json")
    for suffix in ("_prompts", "-prompts"):
        stem = stem.removesuffix(suffix)
    out = Path(args.output) if args.output else source.with_name(f"{stem}.netgent.yaml")
    if not out.name.endswith(".netgent.yaml"):
        raise BadInput(f"-o {out}: workflow files end in .netgent.yaml so pytest collects them")
    if out.exists() and not args.force:
        raise BadInput(f"{out} exists: pass --force to overwrite it, or -o another file")
    secrets = {}
    if args.credentials:
        secrets = {n: f"NETGENT_{n.upper()}" for n in read_credentials(args.credentials)}
    text, unset = workflow_yaml(args.name or stem.replace("_", "-"), prompts, secrets, source)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, "utf-8")
    try:
        _validate(tmp, out)
    except BadInput:
        tmp.unlink()
        raise
    os.replace(tmp, out)
    print(f"netgent: wrote {out} ({len(prompts)} states)", file=sys.stderr)
    if unset:
        names = ", ".join(unset)
        print(f"netgent: give a value to vars {names} in {out}", file=sys.stderr)
    if secrets:
        names = " ".join(f"{v}=..." for v in secrets.values())
        print(f"netgent: export {names} before running pytest", file=sys.stderr)
    return OK


def workflow_yaml(
    name: str, prompts: Sequence[Any], secrets: dict[str, str], source: Path
) -> tuple[str, list[str]]:
    """The ``.netgent.yaml`` text of NetGent state prompts, and the names of the vars
    it declares without a value (placeholders the prompts use that are not secrets)."""
    import re
    from urllib.parse import urlsplit

    import yaml

    texts = [t for p in prompts for t in (p.description, *p.triggers, *p.actions)]
    hosts = sorted(
        {
            host
            for t in texts
            for url in re.findall(r"https?://[^\s'\")]+", t)
            if (host := urlsplit(url).hostname)
        }
    )
    used = sorted({m for t in texts for m in re.findall(r"\{(\w+)\}", t)})
    unset = [n for n in used if n not in secrets and n != "base_url"]
    doc: dict[str, Any] = {"name": name}
    doc["description"] = f"Converted from NetGent prompts {source.name}"
    if hosts:
        doc["allowed_hosts"] = hosts
    if unset:
        doc["vars"] = dict.fromkeys(unset, "")
    if secrets:
        doc["secrets"] = secrets
    doc["states"] = [p.to_spec().model_dump(exclude_defaults=True) for p in prompts]
    header = (
        f"# Converted by `netgent convert {source.name}`. Record its states with\n"
        "#   pytest <this file> --netgent-record\n"
    )
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=96)
    return header + body, unset


def _validate(tmp: Path, out: Path) -> None:
    from .spec import BadDocument, load_workflows

    for doc in load_workflows(tmp):
        if isinstance(doc, BadDocument):
            message = doc.error.message
            if "no state has 'end'" in message:
                message = (
                    "no state prompt has an end_state: give the state that finishes the "
                    'workflow a non-empty "end_state" in the prompts file'
                )
            raise BadInput(f"{out}: the converted workflow is not valid: {message}")


def _is_repository(data: Any) -> bool:
    """Whether loaded JSON is a state repository (states with checks and actions), not
    state prompts (with triggers)."""
    if isinstance(data, dict):
        data = data.get("state_repository", data.get("states"))
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(s, dict) and ("checks" in s or "actions" in s) for s in data)
        and not any("triggers" in s for s in data)
    )


def convert_repositories(
    files: Sequence[Path], args: argparse.Namespace, folder: Path | None = None
) -> int:
    """Write ``DIR/NAME.netgent.yaml`` per repository, with the repository itself as the
    workflow's trusted cache file (``__netgent__/NAME/NAME.json``)."""
    from .automaton import parse_automaton
    from .store import cache_path

    if folder is not None:
        files = [f for f in files if _is_repository(_read_json(str(f), "STATES"))]
        if not files:
            raise BadInput(f"{folder}: no NetGent state repository (*.json) in this folder")
    planned = []
    for path in files:
        data = _read_json(str(path), "STATES")
        if isinstance(data, dict) and "state_repository" in data:
            data = data["state_repository"]
        if data == []:
            raise BadInput(f"STATES {path}: the repository is empty ([]): nothing to convert")
        try:
            automaton = parse_automaton(data)
        except ValueError as exc:
            raise BadInput(f"STATES {path}: {exc}") from None
        # NetGent may name two states alike; a workflow file names each once
        cached_text = path.read_text("utf-8")
        states = _unique_names(automaton.states)
        if [s.name for s in states] != [s.name for s in automaton.states]:
            cached_text = json.dumps([s.to_netgent() for s in states], indent=2) + "\n"
        stem = path.name.removesuffix(".json")
        for suffix in ("_result", "-result", "_states", "-states"):
            stem = stem.removesuffix(suffix)
        out_dir = Path(args.output) if args.output else path.parent
        if not out_dir.is_dir():
            raise BadInput(f"-o {out_dir}: no such folder (create it first)")
        workflow_file = out_dir / f"{stem}.netgent.yaml"
        cache = cache_path(workflow_file, args.name or stem)
        for target in (workflow_file, cache):
            if target.exists() and not args.force:
                raise BadInput(f"{target} exists: pass --force to overwrite it, or -o elsewhere")
        text = repository_yaml(args.name or stem, states, path)
        planned.append((cached_text, workflow_file, cache, text, len(states)))
    temporaries = []
    try:  # every workflow file is checked before any file is written
        for _, workflow_file, _, text, _ in planned:
            tmp = workflow_file.with_name(workflow_file.name + ".tmp")
            temporaries.append(tmp)
            tmp.write_text(text, "utf-8")
            _validate(tmp, workflow_file)
        for (cached_text, workflow_file, cache, _, count), tmp in zip(
            planned, temporaries, strict=True
        ):
            cache.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(cache, cached_text)  # the repository as it is: trusted
            os.replace(tmp, workflow_file)
            print(f"netgent: wrote {workflow_file} ({count} states) and {cache}", file=sys.stderr)
    finally:
        for tmp in temporaries:
            tmp.unlink(missing_ok=True)
    return OK


def _unique_names(states: Sequence[Any]) -> list[Any]:
    """``states`` with a repeated name numbered: 'On Home Page', 'On Home Page (2)'."""
    seen: dict[str, int] = {}
    out = []
    for state in states:
        seen[state.name] = seen.get(state.name, 0) + 1
        if seen[state.name] > 1:
            state = state.model_copy(update={"name": f"{state.name} ({seen[state.name]})"})
        out.append(state)
    return out


def repository_yaml(name: str, states: Sequence[Any], source: Path) -> str:
    """The ``.netgent.yaml`` text of a NetGent state repository: each state's checks and
    actions in words, ``start_url`` from its first navigation, ``end`` where NetGent's
    ``end_state`` is set and ``continuous`` where its config says so."""
    import re
    from urllib.parse import urlsplit

    import yaml

    from .browser.session import START_PAGES
    from .spec import RESERVED_NAMES

    navigations = [str(a.params["url"]) for s in states for a in s.actions if a.type == "navigate"]
    doc: dict[str, Any] = {"name": name}
    doc["description"] = f"Replays the NetGent state repository {source.name}"
    first = states[0] if states else None
    # The engine opens start_url before the first state; that is what a start-page state
    # that only navigates there does, so it may say so (else the state navigates itself).
    if (
        first is not None
        and navigations
        and first.checks
        and all(c.type == "url" and c.params.get("url") in START_PAGES for c in first.checks)
        and [a.type for a in first.actions if a.type != "terminate"] == ["navigate"]
    ):
        doc["start_url"] = str(first.actions[0].params["url"])
    hosts = sorted({h for u in navigations if (h := urlsplit(u).hostname)})
    if hosts:
        doc["allowed_hosts"] = hosts
    texts = json.dumps([s.model_dump(mode="json") for s in states])
    used = sorted(set(re.findall(r"%([A-Za-z_]\w*)%", texts)) - RESERVED_NAMES)
    if used:
        doc["vars"] = dict.fromkeys(used, "")
    if any(s.continuous for s in states) and not any(s.end_state for s in states):
        doc["duration"] = 60
    doc["states"] = []
    for state in states:
        entry: dict[str, Any] = {"name": state.name}
        if state.description:
            entry["description"] = state.description
        entry["triggers"] = [_check_words(c) for c in state.checks]
        entry["actions"] = [_action_words(a) for a in state.actions if a.type != "terminate"]
        if state.end_state:
            entry["end"] = state.end_state
        if state.continuous:
            entry["continuous"] = True
        elif state.repeat:
            entry["repeat"] = state.repeat
        doc["states"].append(entry)
    header = (
        f"# Converted by `netgent convert {source.name}`: its states are cached, as they\n"
        "# are, in __netgent__/; `pytest <this file>` replays them with no LLM.\n"
    )
    if "duration" in doc:
        header += "# It ends in a continuous state: set 'duration' to how long it should run.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=96)


def _check_words(check: Any) -> str:
    p = check.params
    from .browser.session import START_PAGES

    if check.type == "url":
        if p["url"] in START_PAGES:
            return "The browser shows its start page"
        return f"The URL is {p['url']}"
    if check.type == "element":
        shown = "present" if check.presence_only else "visible"
        return f"The element {p['by']} '{p['selector']}' is {shown}"
    if check.type == "text":
        return f"'{p['text']}' is shown"
    if check.type == "title":
        return f"The page title contains '{p['title']}'"
    return f"The script `{p['script']}` is true"


def _action_words(action: Any) -> str:
    p = action.params
    if "selector" in p:
        where = f"the element {p.get('by', 'css selector')} '{p['selector']}'"
    elif "x" in p:
        where = f"the point ({p['x']}, {p['y']})"
    else:
        where = "the page"
    words: dict[str, Callable[[], str]] = {
        "navigate": lambda: f"Navigate to {p['url']}",
        "click": lambda: f"Click {where}",
        "type": lambda: f"Type '{p['text']}' into {where}",
        "press_key": lambda: f"Press {p['key']}",
        "scroll": lambda: (
            f"Scroll {p.get('direction', 'down')} "
            f"{p.get('pixels', p.get('amount', ''))} pixels in {where}".replace("  ", " ")
        ),
        "scroll_to": lambda: f"Scroll to {where}",
        "move": lambda: f"Move the pointer to {where}",
        "hover": lambda: f"Hover over {where}",
        "wait": lambda: f"Wait {p['seconds']} seconds",
        "start_stats_logging": lambda: (
            "Log video stats every "
            f"{p.get('interval', 2.0)} seconds to {p.get('out_path', 'netgent_video_stats.jsonl')}"
        ),
        "stop_stats_logging": lambda: "Stop logging video stats",
    }
    describe: Callable[[], str] = action.describe
    return words.get(action.type, describe)()


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
    from .errors import NetgentError

    try:
        if args_list[:1] == ["convert"]:
            return convert(args_list[1:])
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
