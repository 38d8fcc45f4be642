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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..system import atomic
from .inputs import (
    OK,
    BadInput,
    Parser,
    read_credentials,
    read_json,
    read_prompts,
    writable,
)


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
    parser.add_argument("--force", action="store_true", help="overwrite OUT if it exists")
    return parser


def convert(argv: Sequence[str]) -> int:
    """``netgent convert PROMPTS.json``: the equivalent ``.netgent.yaml``;
    ``netgent convert STATES.json|DIR``: workflow files replaying state repositories."""
    args = _convert_parser().parse_args(argv)
    if len(args.prompts) > 1 or args.prompts[0].endswith(".sh"):
        return convert_set([Path(p) for p in args.prompts], args)
    args.prompts = args.prompts[0]
    source = Path(args.prompts)
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
    files: Sequence[Path], args: argparse.Namespace, folder: Path | None = None
) -> int:
    """Write ``DIR/NAME.netgent.yaml`` per repository, with the repository itself as the
    workflow's trusted cache file (``__netgent__/NAME/NAME.json``)."""
    from ..workflow.automaton import parse_automaton
    from ..workflow.store import cache_path

    if folder is not None:
        files = [f for f in files if _is_repository(read_json(str(f), "STATES"))]
        if not files:
            raise BadInput(f"{folder}: no NetGent state repository (*.json) in this folder")
    planned = []
    sources: dict[Path, Path] = {}
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
        out_dir = out_folder(args.output) if args.output else path.parent
        workflow_file = out_dir / f"{stem}.netgent.yaml"
        cache = cache_path(workflow_file, args.name or stem)
        for target in (workflow_file, cache):
            if target.exists() and not args.force:
                raise BadInput(f"{target} exists: pass --force to overwrite it, or -o elsewhere")
        text = repository_yaml(args.name or stem, states, path, original)
        planned.append((cached_text, workflow_file, cache, text, len(states)))
        sources[workflow_file] = path
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
    return OK


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


def repository_yaml(name: str, states: Sequence[Any], source: Path, data: Any = None) -> str:
    """The ``.netgent.yaml`` text of a NetGent state repository: each state's checks and
    actions in words, ``start_url`` from its first navigation, ``end`` where NetGent's
    ``end_state`` is set and ``continuous`` where its config says so. ``data`` is the
    file as loaded: its ``variables`` (or ``parameters``) give the vars' values, a newer
    workflow's ``specification`` its description."""
    import re
    from urllib.parse import urlsplit

    import yaml

    from ..browser.session import START_PAGES
    from ..workflow.netgent_formats import repository_variables
    from ..workflow.spec import RESERVED_NAMES

    navigations = [str(a.params["url"]) for s in states for a in s.actions if a.type == "navigate"]
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
    if used:
        given = repository_variables(data)
        doc["vars"] = {name: given.get(name, "") for name in used}
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
    said = _check_said(check)
    return f"It is not so that {said[0].lower()}{said[1:]}" if check.params.get("negate") else said


def _check_said(check: Any) -> str:
    p = check.params
    from ..browser.session import START_PAGES

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
    if check.type == "always_true":
        return "Always"
    if check.type in ("role", "media"):
        return f"The page shows {check.describe()}"
    return f"The script `{p['script']}` is true"


def _action_words(action: Any) -> str:
    p = action.params
    if "role" in p:
        where = f"the {p['role']}" + (f" '{p['name']}'" if "name" in p else "")
    elif "selector" in p:
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
        "set_value": lambda: f"Set {where} to {p['value']}",
        "wait": lambda: f"Wait {p['seconds']} seconds",
        "start_stats_logging": lambda: (
            "Log video stats every "
            f"{p.get('interval', 2.0)} seconds to {p.get('out_path', 'netgent_video_stats.jsonl')}"
        ),
        "stop_stats_logging": lambda: "Stop logging video stats",
        **_newer_action_words(p),
    }
    describe: Callable[[], str] = action.describe
    return words.get(action.type, describe)()


def _newer_action_words(p: dict[str, Any]) -> dict[str, Callable[[], str]]:
    """Words for NetGent's newer actions (tabs by name, texts, waits, WebRTC, env values)."""

    def listed(value: Any) -> str:
        return " or ".join(f"'{v}'" for v in (value if isinstance(value, list) else [value]))

    shown = "shown" if str(p.get("visible", True)).lower() not in ("false", "0", "no") else "gone"
    words: dict[str, Callable[[], str]] = {
        "remember_tab": lambda: f"Remember this tab as '{p['name']}'",
        "store_current_url": lambda: f"Store the current URL as '{p['name']}'",
        "open_stored_url": lambda: (
            f"Open the stored URL '{p['name']}'{p.get('suffix') or ''} in a new tab"
        ),
        "click_first_text": lambda: f"Click the button reading {listed(p['texts'])}",
        "click_accessible_name": lambda: f"Click the button named {listed(p['names'])}",
        "wait_for_element": lambda: f"Wait until '{p['selector']}' is {shown}",
        "wait_for_text": lambda: f"Wait until '{p['text']}' is {shown}",
        "start_webrtc_tracking": lambda: "Start tracking the WebRTC connections",
        "collect_webrtc_metrics": lambda: f"Write the WebRTC metrics to {p['out_path']}",
        "set_env_value": lambda: (
            f"Type the value of ${p['env_var']} into the first of {listed(p['selectors'])}"
        ),
        "type_env": lambda: f"Type the value of ${p['env_var']} into '{p.get('selector', '')}'",
        "click_first": lambda: f"Click the first of {listed(p['selectors'])}",
        "click_text_env": lambda: f"Click the element reading the value of ${p['env_var']}",
        "play_video": lambda: f"Play the video '{p.get('selector') or 'video'}'",
        "go_to_url": lambda: (
            f"Navigate to {p['url']}" + (" in a new tab" if p.get("new_tab") else "")
        ),
    }
    if "name" in p:
        words["switch_tab"] = lambda: f"Switch to the tab '{p['name']}'"
    return words


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
