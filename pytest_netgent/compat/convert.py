"""``netgent convert``: NetGent's files as pytest items.

A prompt file becomes the equivalent ``.netgent.yaml`` (its states recorded on the first
``--netgent-record``); a state repository becomes a workflow file that describes each
state in words plus the repository itself, unchanged in meaning, as that workflow's
trusted cache file, so ``pytest`` replays it with no model.
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
from ..workflow.netgent_formats import repository_variables
from .described import action_words, check_words
from .inputs import (
    OK,
    BadInput,
    Parser,
    read_credentials,
    read_json,
    read_prompts,
    writable,
)
from .registry import Entry, entries, is_registry, parameter_notes, registry_fields


def _convert_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="netgent convert",
        description="Write the pytest-netgent workflow file (.netgent.yaml) equivalent to "
        "a NetGent prompts file, or one that replays a NetGent state repository (with the "
        "repository as its cached states); a folder converts every repository in it.",
    )
    parser.add_argument(
        "prompts",
        nargs="+",
        metavar="PROMPTS.json|STATES.json|DIR",
        help="one file or folder; several STATES.json and SCRIPT.sh make a scenario",
    )
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
    parser.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a value for a workflow's parameter or variable, written into its vars "
        "(repeatable; a parameter the specification marks <secret> is read from "
        "NETGENT_<NAME> instead)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    return parser


def _given(args: argparse.Namespace) -> dict[str, str]:
    """The ``--var NAME=VALUE`` values."""
    given = {}
    for item in args.var:
        name, eq, value = item.partition("=")
        if not eq or not name.strip().isidentifier():
            raise BadInput(
                f"--var {item!r}: write NAME=VALUE, e.g. --var url=http://127.0.0.1:8000/"
            )
        given[name.strip()] = value
    return given


def convert(argv: Sequence[str]) -> int:
    """``netgent convert PROMPTS.json``: the equivalent ``.netgent.yaml``;
    ``netgent convert STATES.json|DIR``: workflow files replaying state repositories."""
    args = _convert_parser().parse_args(argv)
    if len(args.prompts) > 1 or args.prompts[0].endswith(".sh"):
        return convert_set([Path(p) for p in args.prompts], args)
    args.prompts = args.prompts[0]
    source = Path(args.prompts)
    if is_registry(source):
        found = entries(source)
        if args.name and len(found) > 1:
            raise BadInput(
                f"--name {args.name}: {source} holds {len(found)} workflows, each named by its "
                "id: leave --name out, or convert one workflow's folder"
            )
        return convert_repositories([e.file for e in found], args, registry=found)
    if source.is_dir():
        return convert_repositories(sorted(source.glob("*.json")), args, folder=source)
    if source.is_file():
        data = read_json(args.prompts, "STATES")
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
    if args.output:
        out_folder(str(out.parent))
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


def _validate(tmp: Path, out: Path, source: str = "the prompts file") -> None:
    from ..workflow.spec import BadDocument, load_workflows

    for doc in load_workflows(tmp):
        if isinstance(doc, BadDocument):
            message = doc.error.message
            if "no state has 'end'" in message:
                what = "state prompt" if source == "the prompts file" else "state"
                message = (
                    f"no {what} has an end_state: give the state that finishes the workflow "
                    f'a non-empty "end_state" in {source}'
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
    files: Sequence[Path],
    args: argparse.Namespace,
    folder: Path | None = None,
    registry: Sequence[Entry] = (),
) -> int:
    """Write ``DIR/NAME.netgent.yaml`` per repository, with the repository itself as the
    workflow's trusted cache file (``__netgent__/NAME/NAME.json``); the workflows of a
    registry (``registry``, one per file) are named by their ids. Nothing is written
    unless every one converts."""
    from ..workflow.automaton import parse_automaton
    from ..workflow.store import cache_path

    if folder is not None:
        files = [f for f in files if _is_repository(read_json(str(f), "STATES"))]
        if not files:
            raise BadInput(f"{folder}: no NetGent state repository (*.json) in this folder")
    planned = []
    sources: dict[Path, Path] = {}
    given = _given(args)
    of = {e.file: e for e in registry}
    for path in files:
        data = original = read_json(str(path), "STATES")
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
        if path in of:
            stem = of[path].id
        out_dir = out_folder(args.output) if args.output else path.parent
        workflow_file = out_dir / f"{stem}.netgent.yaml"
        name = args.name if args.name and len(files) == 1 else stem
        cache = cache_path(workflow_file, name)
        for target in (workflow_file, cache):
            if target.exists() and not args.force:
                raise BadInput(f"{target} exists: pass --force to overwrite it, or -o elsewhere")
        try:
            text = repository_yaml(name, states, path, original, of.get(path), given)
        except ValueError as exc:
            raise BadInput(f"{path}: {exc}") from None
        planned.append((cached_text, workflow_file, cache, text, len(states)))
        sources[workflow_file] = path
    _write_planned(planned, sources)
    return OK


def _write_planned(planned: list[Any], sources: dict[Path, Path]) -> None:
    """Write each planned workflow file and its cache, once every workflow file is valid:
    one that is not writes nothing at all."""
    temporaries = []
    try:  # every workflow file is checked before any file is written
        for _, workflow_file, _, text, _ in planned:
            tmp = workflow_file.with_name(workflow_file.name + ".tmp")
            temporaries.append(tmp)
            tmp.write_text(text, "utf-8")
            _validate(tmp, workflow_file, f"the repository {sources[workflow_file]}")
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


def out_folder(output: str) -> Path:
    """The ``-o DIR`` folder, made with its parents when missing (as ``mkdir -p``, ``git
    clone`` or ``cp -r`` do); a file there, or a place that cannot be written, is refused."""
    folder = Path(output)
    if folder.exists() and not folder.is_dir():
        raise BadInput(f"-o {output} is a file: give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(
            f"-o {output}: cannot create the folder ({exc.strerror}): choose a writable place"
        ) from None
    if not writable(folder):
        raise BadInput(f"-o {output}: cannot write there: choose a writable place")
    return folder


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


def repository_yaml(
    name: str,
    states: Sequence[Any],
    source: Path,
    data: Any = None,
    registered: Entry | None = None,
    given: dict[str, str] | None = None,
) -> str:
    """The ``.netgent.yaml`` text of a NetGent state repository: each state's checks and
    actions in words, ``start_url`` from its first navigation, ``end`` where NetGent's
    ``end_state`` is set and ``continuous`` where its config says so. ``data`` is the
    file as loaded: its ``variables`` (or ``parameters``) give the vars' values, a newer
    workflow's ``specification`` its description; ``registered``, the registry's workflow it
    is, its manifest's facts (:mod:`.registry`); ``given``, the ``--var`` values."""
    import re
    from urllib.parse import urlsplit

    import yaml

    from ..browser.session import START_PAGES
    from ..workflow.spec import RESERVED_NAMES

    navigations = [
        str(a.params["url"])
        for s in states
        for a in s.actions
        if a.type in ("navigate", "go_to_url")
    ]
    doc: dict[str, Any] = {"name": name}
    doc["description"] = f"Replays the NetGent state repository {source.name}"
    if isinstance(data, dict) and isinstance(data.get("specification"), str):
        doc["description"] = " ".join(data["specification"].split())
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
    found = re.findall(r"%([A-Za-z_]\w*)%|\{\{\s*([A-Za-z_]\w*)\s*\}\}", texts)
    used = sorted({a or b for a, b in found} - RESERVED_NAMES)
    values = {**repository_variables(data), **(given or {})}
    if registered is not None:
        doc.update(_registry_doc(registered, data, used, values))
    elif used:
        doc["vars"] = {name: values.get(name, "") for name in used}
    if any(s.continuous for s in states) and not any(s.end_state for s in states):
        doc["duration"] = 60
    doc["states"] = [_state_entry(state) for state in states]
    header = (
        f"# Converted by `netgent convert {_shown(source, registered)}`: its states are\n"
        "# cached, as they are, in __netgent__/; `pytest <this file>` replays them with\n"
        "# no LLM.\n"
    )
    if registered is not None:
        notes = parameter_notes(registered).items()
        header += "".join(f"# {n}: {said}\n" for n, said in notes)
    if "duration" in doc:
        header += "# It ends in a continuous state: set 'duration' to how long it should run.\n"
    return header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=96)


def _state_entry(state: Any) -> dict[str, Any]:
    """A state of the workflow file: its name, checks and actions in words, its end."""
    entry: dict[str, Any] = {"name": state.name}
    if state.description:
        entry["description"] = state.description
    entry["triggers"] = [check_words(c) for c in state.checks]
    entry["actions"] = [action_words(a) for a in state.actions if a.type != "terminate"]
    if state.end_state:
        entry["end"] = state.end_state
    if state.continuous:
        entry["continuous"] = True
    elif state.repeat:
        entry["repeat"] = state.repeat
    return entry


def _shown(source: Path, registered: Entry | None) -> str:
    """The converted file as the header names it (a registry's with its folder)."""
    return f"{source.parent.name}/{source.name}" if registered is not None else source.name


def _registry_doc(
    entry: Entry, data: Any, used: list[str], values: dict[str, str]
) -> dict[str, Any]:
    """A registry workflow's description, metadata, vars (with the given values) and
    secrets; a value given for a secret is refused (it goes in the environment)."""
    fields = registry_fields(entry, data if isinstance(data, dict) else {}, used)
    for secret, env in fields.get("secrets", {}).items():
        if secret in values and secret not in repository_variables(data):
            raise ValueError(
                f"--var {secret}=...: the specification marks {secret!r} a <secret>: "
                f"export {env}=... before running pytest instead"
            )
    if "vars" in fields:
        fields["vars"] = {n: values.get(n) for n in fields["vars"]}
    if entry.kind == "shell":
        fields["category"] = "network_measurement"
    return fields


def convert_set(files: Sequence[Path], args: argparse.Namespace) -> int:
    """``netgent convert A.json B.json C.sh -o DIR``: a workflow file per repository (as
    for one) and ``DIR/NAME.netgent.yaml``, a scenario running them all at once with each
    script as a command member (NAME: ``--name``, default ``mixed``)."""
    import yaml

    out_dir = out_folder(args.output) if args.output else Path.cwd()
    name = args.name or "mixed"
    scenario_file = out_dir / f"{name}.netgent.yaml"
    if scenario_file.exists() and not args.force:
        raise BadInput(f"{scenario_file} exists: pass --force to overwrite it, or --name another")
    repositories: list[Path] = []
    members: list[dict[str, Any]] = []
    for path in files:
        if not path.is_file():
            raise BadInput(f"{path}: no such file")
        stem = path.name.removesuffix(path.suffix)
        for suffix in ("_result", "-result", "_states", "-states"):
            stem = stem.removesuffix(suffix)
        if path.suffix == ".sh":
            script = os.path.relpath(path.resolve(), out_dir.resolve())
            members.append({"name": stem, "run": f"bash {script}"})
        elif path.suffix == ".json" and _is_repository(read_json(str(path), "STATES")):
            repositories.append(path)
            members.append({"name": stem, "workflow": f"{stem}.netgent.yaml::{stem}"})
        else:
            raise BadInput(
                f"{path}: a scenario is made of NetGent state repositories (.json, with "
                "checks and actions) and shell scripts (.sh); convert a prompts file alone"
            )
    names = [m["name"] for m in members]
    if len(set(names)) != len(names):
        raise BadInput(f"two inputs have one name ({', '.join(names)}): rename one of them")
    if repositories:
        convert_repositories(repositories, argparse.Namespace(**{**vars(args), "name": None}))
    doc = {
        "name": name,
        "description": "Converted from `netgent " + " ".join(p.name for p in files) + "`",
        "category": "mixed",
        "scenario": members,
    }
    header = (
        "# Converted by `netgent convert`: the repositories and scripts NetGent ran at the\n"
        "# same time, as one pytest item (give it a 'duration' if a member never ends).\n"
    )
    text = header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=96)
    tmp = scenario_file.with_name(scenario_file.name + ".tmp")
    tmp.write_text(text, "utf-8")
    try:
        _validate_scenario(tmp, scenario_file)
        os.replace(tmp, scenario_file)
    finally:
        tmp.unlink(missing_ok=True)
    print(f"netgent: wrote {scenario_file} ({len(members)} members)", file=sys.stderr)
    return OK


def _validate_scenario(tmp: Path, out: Path) -> None:
    from ..errors import WorkflowSpecError
    from ..scenario.spec import load_scenario
    from ..workflow.spec import BadDocument, ScenarioDocument, load_documents

    for doc in load_documents(tmp):
        if isinstance(doc, BadDocument):
            raise BadInput(f"{out}: the converted scenario is not valid: {doc.error.message}")
        if isinstance(doc, ScenarioDocument):
            try:
                load_scenario(doc)
            except WorkflowSpecError as exc:
                why = f"{out}: the converted scenario is not valid: {exc.message}"
                raise BadInput(why) from None
