"""How a workflow or scenario item reports its failure: a :class:`NetgentError` with its
own short report, anything else as pytest's traceback with the item's secrets taken out."""

from __future__ import annotations

from typing import Any

from ..errors import NetgentError
from ..system.redaction import Redactor


class ReportsErrors:
    """Mixin of test items: a :class:`NetgentError` fails the item with its own report,
    not a Python traceback; any other failure's report is cleaned of the item's secrets."""

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, NetgentError):
            return excinfo.value.report()
        shown = super().repr_failure(excinfo)  # type: ignore[misc]
        secrets = self.secret_values()
        if not secrets:
            return shown
        # A traceback may show a secret however it is held: a library's frame (the
        # browser driver's command body under --showlocals), an exception's text. The
        # report is text then, cleaned like everything else that leaves a run.
        text = str(shown)
        clean = Redactor(secrets)(text)
        return shown if clean == text else clean

    def secret_values(self) -> dict[str, str]:
        """The item's secrets (name: value), kept out of its failure report."""
        return {}
