"""``python -m pytest_netgent.cli``: the ``netgent`` command."""

from . import run

run()
