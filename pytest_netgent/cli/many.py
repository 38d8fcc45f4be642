"""``netgent A.json B.json C.sh [--out DIR]``: NetGent state repositories replayed (each in
a browser and profile of its own) and shell scripts run, all at the same time."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..compat.inputs import FAILED, OK, BadInput, Parser, read_credentials, read_repository
from .netgent import (
    failure_report,
    make_agent,
    parse_variables,
    positive_seconds,
    reject_unknown_flags,
    result_json,
    saved_variables,
    write_json,
)


def many_parser() -> argparse.ArgumentParser:
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
    parser.add_argument("--duration", type=positive_seconds, metavar="SECONDS")
    parser.add_argument("--state-timeout", type=positive_seconds, metavar="SECONDS")
    parser.add_argument("--user-data-dir", help=argparse.SUPPRESS)
    return parser


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
    variables = parse_variables(args.var, args.variables)
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
    with make_agent(args, None, False, creds) as agent:
        result = agent.run(
            state_prompts=[],
            state_repository=read_repository(str(path)),
            variables={**saved_variables(str(path)), **variables},
            output_dir=folder,
        )
    write_json(str(folder / f"{name}_result.json"), result_json(result))
    heal = "regenerate the repository with netgent -g KEYS CREDENTIALS PROMPTS"
    log = (
        f"end state reached: {result.end_state}"
        if result.reached_end
        else failure_report(result, str(path), heal)
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
    write_json(
        str(folder / f"{name}_result.json"),
        {
            "script": str(path),
            "exit_status": done.returncode,
            "started": at,
            "duration": round(time.monotonic() - started, 3),
        },
    )
    return done.returncode == 0


def command(argv: list[str]) -> int:
    """``netgent A.json B.json C.sh ...``; returns the exit status."""
    parser = many_parser()
    reject_unknown_flags(parser, argv)
    return run_many(parser.parse_args(argv))
