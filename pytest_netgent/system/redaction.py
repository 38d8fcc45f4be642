"""Secret values and their redaction: what every layer uses to keep a secret out of what
it writes (reports, timelines, captures, prompts, cache files) and out of every log
record made in the process."""

from __future__ import annotations

import contextlib
import html
import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

from ..errors import SecretError


class Secret:
    """A secret's value, held so that nothing shows it by accident: its ``repr`` and
    ``str`` are its ``{name}`` placeholder (so a traceback's ``--showlocals``, a
    formatted message or a log line shows the name), and a pickled copy holds no value.
    Only :meth:`reveal` gives the value, where the browser types it."""

    __slots__ = ("_value", "name")

    def __init__(self, name: str, value: str) -> None:
        self.name = name
        self._value = value

    def reveal(self) -> str:
        """The value itself: for the browser, never for a message."""
        return self._value

    def __repr__(self) -> str:
        return "{" + self.name + "}"

    __str__ = __repr__

    def __reduce__(self) -> tuple[type[Secret], tuple[str, str]]:
        return (Secret, (self.name, ""))  # a pickled copy (xdist, a report) keeps no value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and (other.name, other._value) == (self.name, self._value)

    def __hash__(self) -> int:
        return hash((Secret, self.name))


def revealed(value: str | Secret) -> str:
    """``value``'s text: a :class:`Secret` revealed, any other value as it is."""
    return value.reveal() if isinstance(value, Secret) else value


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

    def __init__(self, secrets: Mapping[str, str | Secret]) -> None:
        pairs = {(variant, name) for name, value in secrets.items() if revealed(value)
                 for variant in _variants(revealed(value))}  # fmt: skip
        ordered = sorted(pairs, key=lambda p: -len(p[0]))
        self._pattern = re.compile("|".join(re.escape(v) for v, _ in ordered)) if ordered else None
        self._names = dict(ordered)

    @property
    def variants(self) -> list[tuple[str, str]]:
        """Every form of every secret value with its name, longest first."""
        return list(self._names.items())

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: "{" + self._names[m.group(0)] + "}", text)


_KEY_DOWN = re.compile(r"""'type': 'keyDown', 'value': ('(?:[^'\\]|\\.)+'|"'")""")
"""One key of a W3C actions payload as Selenium logs it (``{'type': 'keyDown', 'value':
'H'}``); its ``keyUp`` repeats the key."""
_KEY_LIST = re.compile(r"'value': (\[(?:'(?:[^'\\]|\\.)*'|\"'\"|, )*\])")
"""The keys of an element's send_keys as Selenium logs them (``'value': ['H', 'x']``)."""


def typed_keys(text: str) -> str:
    """The characters a logged WebDriver command body types, in order: Selenium logs an
    element's keys as a list of one-character strings and an action chain's as one
    ``keyDown`` per character, so a typed value never shows whole in its log."""
    import ast

    keys: list[str] = []
    for match in _KEY_LIST.finditer(text):
        with contextlib.suppress(ValueError, SyntaxError):  # not a list of strings
            keys.extend(str(k) for k in ast.literal_eval(match.group(1)))
    for match in _KEY_DOWN.finditer(text):
        with contextlib.suppress(ValueError, SyntaxError):
            keys.append(str(ast.literal_eval(match.group(1))))
    return "".join(keys)


class SecretLogs:
    """Keeps the secrets a browser has been given out of every log record made in this
    process, whichever logger makes it and at every level: Selenium's (which logs each
    command's body, a typed value split into its characters), urllib3's, the websocket
    client's, a user's own. Records are cleaned when they are made (a log record
    factory), before any logger, filter or handler sees them: pytest's capture and live
    log, junit, ``-rA``. A record that cannot be cleaned is withheld, never passed on
    as it is. One per browser; it stays until the browser closes, since a secret typed
    in one phase of a test may show in a URL logged in the next."""

    def __init__(self) -> None:
        self._secrets: dict[str, str] = {}
        self._redact = Redactor({})

    def add(self, secrets: Mapping[str, str | Secret]) -> None:
        """Also redact ``secrets``; starts cleaning records on first use."""
        given = {k: revealed(v) for k, v in secrets.items()}
        fresh = {k: v for k, v in given.items() if v and self._secrets.get(k) != v}
        if fresh:
            self._secrets.update(fresh)
            self._redact = Redactor(self._secrets)
            _FACTORY.attach(self)
        for value in [v for v in given.values() if v][:1]:
            self._verify(value)

    def _verify(self, value: str) -> None:
        """Raise :class:`SecretError` unless a record made now would be cleaned of
        ``value``: the process's record factory may have been replaced since it was
        installed (by a library, a conftest), or installing it failed."""
        factory = logging.getLogRecordFactory()
        try:
            probe = factory(
                "pytest_netgent.probe", logging.DEBUG, __file__, 0, "%s", (value,), None
            )
            leaks = value in probe.getMessage()
        except Exception:  # a factory that cannot make a record cannot be trusted either
            leaks = True
        if leaks:
            raise SecretError(
                "the secret redaction of log records could not be installed: a record made "
                f"now would show a secret (logging's record factory is {factory!r}, which "
                "does not pass records through pytest-netgent's), so the run was not "
                "started. Set your own record factory before the first workflow runs, or "
                "make it call the one it replaces"
            )

    def remove(self) -> None:
        """Stop cleaning records for this browser."""
        _FACTORY.detach(self)
        self._secrets.clear()
        self._redact = Redactor({})

    def clean(self, record: logging.LogRecord) -> None:
        """Take this browser's secrets out of ``record`` (its message and arguments)."""
        try:
            message = record.getMessage()
            clean = self._redact(message)
            keys = typed_keys(clean)
            if keys and self._redact(keys) != keys:
                # a secret typed key by key: the body's keys are withheld, its verb kept
                head = clean.split(" {", 1)[0] if " {" in clean else record.name
                clean = f"{head} {{keys typed: {self._redact(keys)!r}}}"
        except Exception:  # any fault here must withhold the record, not pass it on
            clean = f"(log record of {record.name} withheld: its secrets could not be removed)"
            message = ""
        if clean != message:
            record.msg, record.args = clean, ()
            record.exc_info = record.exc_info and None  # a traceback's text is not cleaned
            record.exc_text = None


class _RecordFactory:
    """The process's log record factory while any browser holds secrets: logging is
    process-wide, so this is the one shared piece; it chains to the factory it found and
    puts that back when the last browser detaches (unless another was set since)."""

    def __init__(self) -> None:
        self._active: list[SecretLogs] = []
        self._previous: Callable[..., logging.LogRecord] | None = None
        self._lock = threading.Lock()

    def attach(self, logs: SecretLogs) -> None:
        with self._lock:
            if logs in self._active:
                return
            self._active.append(logs)
            if self._previous is None:
                self._previous = logging.getLogRecordFactory()
                logging.setLogRecordFactory(self.make)

    def detach(self, logs: SecretLogs) -> None:
        with self._lock:
            if logs in self._active:
                self._active.remove(logs)
            if not self._active and self._previous is not None:
                if logging.getLogRecordFactory() == self.make:  # not replaced since
                    logging.setLogRecordFactory(self._previous)
                self._previous = None  # the next attach installs it anew

    def make(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        previous = self._previous or logging.LogRecord
        record = previous(*args, **kwargs)
        for logs in list(self._active):
            logs.clean(record)
        return record


_FACTORY = _RecordFactory()


def redact_values(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` (JSON-like) with every string in it redacted; keys and numbers as they
    are, so the document keeps its shape whatever a secret's value looks like."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_values(v, redact) for v in value]
    if isinstance(value, dict):
        return {k: redact_values(v, redact) for k, v in value.items()}
    return value
