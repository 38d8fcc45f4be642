"""Reference pages made from the code at each docs build (mkdocs-gen-files): the options
and ini keys from their definitions, the workflow file's JSON Schema from its models."""

from __future__ import annotations

import json

import mkdocs_gen_files
from _pytest.config.argparsing import Parser

from pytest_netgent.plugin.options import pytest_addoption
from pytest_netgent.workflow.automaton import Automaton
from pytest_netgent.workflow.spec import workflow_schema


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def options_page() -> str:
    parser = Parser(processopt=lambda option: None, _ispytest=True)
    pytest_addoption(parser)  # type: ignore[arg-type]
    group = next(g for g in parser._groups if g.name == "netgent")
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    for option in group.options:
        names = ", ".join(f"`{n}`" for n in option.names())
        metavar = option.attrs().get("metavar")
        names += f" `{metavar}`" if metavar else ""
        default = option.attrs().get("default")
        shown = "" if default in (None, "", False, []) else f"`{default}`"
        rows.append(f"| {names} | {shown} | {_cell(option.attrs().get('help', ''))} |")
    ini = ["| ini key | type | default | meaning |", "| --- | --- | --- | --- |"]
    for name, (help_, kind, default) in sorted(parser._inidict.items()):
        if name.startswith("netgent"):
            shown = "" if default in (None, "", []) else f"`{default}`"
            ini.append(f"| `{name}` | {kind or 'string'} | {shown} | {_cell(help_)} |")
    return "\n".join(
        [
            "# Options",
            "",
            "Made from the option definitions (`pytest_netgent/plugin/options.py`) at each",
            "build. The command line wins over the ini file, which wins over the default.",
            "",
            *rows,
            "",
            "## ini keys",
            "",
            *ini,
            "",
        ]
    )


def schema_page() -> str:
    schema = json.dumps(workflow_schema(), indent=2, sort_keys=True)
    return "\n".join(
        [
            "# Workflow JSON Schema",
            "",
            "The schema of a `*.netgent.yaml` file, made from its models at each build; the",
            "same as `python -m pytest_netgent schema` prints. Editors that read JSON Schema",
            "(VS Code with the YAML extension) check and complete workflows with it.",
            "",
            "```json",
            schema,
            "```",
            "",
            "## The cache file",
            "",
            "The states compiled for one workflow, `__netgent__/<file>/<workflow>.json`. A",
            "check's or action's `selector` may be a chain through shadow roots and frames",
            "(see [The cache file](cache.md.",
            "",
            "```json",
            json.dumps(Automaton.model_json_schema(), indent=2, sort_keys=True),
            "```",
            "",
        ]
    )


with mkdocs_gen_files.open("reference/options.md", "w") as page:
    page.write(options_page())
with mkdocs_gen_files.open("reference/schema.md", "w") as page:
    page.write(schema_page())
