"""Secrets: values read from the environment at run time, never stored or shown."""

from __future__ import annotations

import html
import json
import logging
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus

from .errors import SecretError, display_path

if TYPE_CHECKING:
    from .spec import LoadedWorkflow


def resolve_secrets(
    loaded: LoadedWorkflow, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``{secret name: value}`` for every secret of the workflow.

    Raises :class:`SecretError` naming the variable, the workflow file and line, and the
    fix, when a variable is unset; the value itself never appears in any message.
    """
    env = os.environ if environ is None else environ
    values: dict[str, str] = {}
    missing: list[str] = []
    for name, variable in loaded.workflow.secrets.items():
        value = env.get(variable)
        if value is None or value == "":
            missing.append(f"{name!r} from ${variable}")
        else:
            values[name] = value
    if missing:
        first = next(iter(loaded.workflow.secrets))
        line = loaded.line_of("secrets", first)
        raise SecretError(
            f"{display_path(loaded.path)}:{line}: secret "
            + ", ".join(missing)
            + " is not set: export "
            "the environment variable before running pytest (its value is typed by the "
            "browser and never stored)"
        )
    return values


def _variants(value: str) -> set[str]:
    """The forms ``value`` takes in what leaves the engine: as typed; percent-encoded as
    a URL, a form (``+`` for spaces) or Chromium writes them (``~`` as ``%7E``), in upper
    and lower case hex; escaped in a JSON string; escaped in HTML."""
    found = {value, json.dumps(value)[1:-1], html.escape(value)}
    for encoded in (quote(value, safe=""), quote_plus(value), quote(value, safe="/")):
        for form in (encoded, encoded.replace("~", "%7E")):
            found.add(form)
            found.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), form))
    return {v for v in found if v}


class Redactor:
    """Replaces every secret value, in every encoding it may take, by its ``{name}``:
    the one place where secrets are taken out of what leaves the engine (reports,
    timelines, captures, prompts, logs, cache files)."""

    def __init__(self, secrets: Mapping[str, str]) -> None:
        pairs = {(variant, name) for name, value in secrets.items() if value
                 for variant in _variants(value)}  # fmt: skip
        ordered = sorted(pairs, key=lambda p: -len(p[0]))
        self._pattern = re.compile("|".join(re.escape(v) for v, _ in ordered)) if ordered else None
        self._names = dict(ordered)

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: "{" + self._names[m.group(0)] + "}", text)


LOGGERS = (
    "selenium.webdriver.remote.remote_connection",
    "urllib3.connectionpool",
    "seleniumbase",
)
"""The loggers that write what the browser is sent and answers: Selenium logs each
command's body (the text typed, the URL opened) at DEBUG, urllib3 each request line."""


class SecretLogFilter(logging.Filter):
    """Takes every secret the browser has been given out of the log records of the
    browser libraries, before any handler sees them (pytest's log capture and live log,
    junit, a user's own handlers). One per browser; it stays until the browser closes,
    since a secret typed in one phase of a test may show in a URL logged in the next."""

    def __init__(self) -> None:
        super().__init__("netgent-secrets")
        self._secrets: dict[str, str] = {}
        self._redact = Redactor({})

    def add(self, secrets: Mapping[str, str]) -> None:
        """Also redact ``secrets``; installs the filter on first use."""
        fresh = {k: v for k, v in secrets.items() if self._secrets.get(k) != v}
        if not fresh:
            return
        if not self._secrets:
            for name in LOGGERS:
                logging.getLogger(name).addFilter(self)
        self._secrets.update(fresh)
        self._redact = Redactor(self._secrets)

    def remove(self) -> None:
        """Take the filter off the loggers."""
        for name in LOGGERS:
            logging.getLogger(name).removeFilter(self)
        self._secrets.clear()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self._redact(message)
        if clean != message:
            record.msg, record.args = clean, ()
        return True
