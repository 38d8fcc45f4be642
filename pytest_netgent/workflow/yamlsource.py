"""Workflow files read as plain data, safely and with line numbers.

Only YAML's standard tags are read (no ``!custom``, no ``!!python/...``), merge keys
work, and a file is refused before it can exhaust memory or the parser: over
:data:`MAX_BYTES`, nested deeper than :data:`MAX_DEPTH`, or expanding (through aliases)
to more than :data:`MAX_VALUES` values. Every value keeps the line it came from, so an
error names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import WorkflowSpecError

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ~10x faster


MAX_BYTES = 1_000_000
"""Largest workflow file read: a workflow is a page of text, not a data set."""


MAX_DEPTH = 64
"""Deepest nesting of lists and maps in a workflow file."""


MAX_VALUES = 50_000
"""Most values one document may hold once its YAML aliases are expanded."""


PLAIN_TAGS = {
    f"tag:yaml.org,2002:{t}"
    for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "merge")
}


def too_deep(text: str) -> int | None:
    """The line where flow brackets or indentation nest deeper than :data:`MAX_DEPTH`,
    found before the YAML parser sees it (deep nesting exhausts its recursion, and
    libyaml's C stack)."""
    depth = 0
    quote = ""
    for number, line in enumerate(text.splitlines(), 1):
        if len(line) - len(line.lstrip(" -")) > 2 * MAX_DEPTH:
            return number
        for char in line:
            if quote:
                quote = "" if char == quote else quote
            elif char in "'\"":
                quote = char
            elif char in "[{":
                depth += 1
                if depth > MAX_DEPTH:
                    return number
            elif char in "]}":
                depth = max(0, depth - 1)
            elif char == "#":
                break
    return None


class Builder:
    """Turns a composed YAML node tree into Python objects and a path -> line map.

    Workflow files are plain data: only YAML's standard tags are read (no ``!custom``
    or ``!!python/...``), merge keys (``<<: *base``) work, and aliases may not expand a
    document beyond :data:`MAX_VALUES` values (a "billion laughs" file fails alone).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines: dict[tuple[Any, ...], int] = {}
        self.key_lines: dict[tuple[Any, ...], int] = {}
        self._constructor = yaml.constructor.SafeConstructor()
        self._values = 0

    def _count(self, node: yaml.Node, depth: int) -> None:
        self._values += 1
        if self._values > MAX_VALUES:
            raise WorkflowSpecError(
                self.path,
                node.start_mark.line + 1,
                f"the document expands to more than {MAX_VALUES} values (YAML aliases "
                "repeating each other?): write the workflow out plainly",
            )
        if depth > MAX_DEPTH:
            raise WorkflowSpecError(
                self.path,
                node.start_mark.line + 1,
                f"lists and maps nest deeper than {MAX_DEPTH} levels here",
            )
        if node.tag not in PLAIN_TAGS:
            raise WorkflowSpecError(
                self.path,
                node.start_mark.line + 1,
                f"the tag {node.tag!r} is not plain YAML data; workflow files hold only "
                "text, numbers, lists and maps: remove the tag",
            )

    def build(self, node: yaml.Node, loc: tuple[Any, ...]) -> Any:
        self._count(node, len(loc))
        self.lines.setdefault(loc, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            merged: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    merged.update(self._merge(value_node, loc))
                    continue
                key = self._scalar(key_node)
                if key in out:
                    raise WorkflowSpecError(
                        self.path,
                        key_node.start_mark.line + 1,
                        f"duplicate key {key!r}: remove one of the two",
                    )
                self.key_lines[(*loc, key)] = key_node.start_mark.line + 1
                self.lines[(*loc, key)] = value_node.start_mark.line + 1
                out[key] = self.build(value_node, (*loc, key))
            # keys written in the map win over the ones merged into it
            return {**{k: v for k, v in merged.items() if k not in out}, **out}
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*loc, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _merge(self, node: yaml.Node, loc: tuple[Any, ...]) -> dict[Any, Any]:
        """The maps of a merge key (``<<: *base`` or ``<<: [*a, *b]``; earlier win)."""
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        merged: dict[Any, Any] = {}
        for source in reversed(sources):
            value = self.build(source, loc)
            if not isinstance(value, dict):
                raise WorkflowSpecError(
                    self.path,
                    source.start_mark.line + 1,
                    "'<<' merges maps: give it an alias of a map (<<: *base)",
                )
            merged.update(value)
        return merged

    def _scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise WorkflowSpecError(
                self.path,
                node.start_mark.line + 1,
                "mapping keys must be plain text, not a list or map",
            )
        # The resolver already tagged the node (int, bool, str...); construct its value.
        return self._constructor.construct_object(node, deep=True)
