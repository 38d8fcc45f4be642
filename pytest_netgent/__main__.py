"""``python -m pytest_netgent schema``: print the JSON Schema of workflow files."""

from __future__ import annotations

import json
import sys

USAGE = "usage: python -m pytest_netgent schema   (prints the JSON Schema of *.netgent.yaml)"


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["schema"]:
        from .workflow.spec import workflow_schema

        print(json.dumps(workflow_schema(), indent=2))
        return 0
    print(USAGE, file=sys.stderr)
    return 0 if args in (["-h"], ["--help"]) else 2


if __name__ == "__main__":
    sys.exit(main())
