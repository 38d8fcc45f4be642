"""The record summary of a session: what each item synthesised, healed and wrote, and
the totals, printed at the end (on the xdist controller too)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..synthesis import RecordReport

RECORD_PROPERTY = "netgent_record"
"""Report property (call): what record mode synthesised, healed and wrote for the item."""


def record_property(nodeid: str, record: RecordReport) -> tuple[str, str]:
    """The :data:`RECORD_PROPERTY` of one recording run: an item's, or a scenario
    member's (``nodeid`` then names the member); a JSON string, which junitxml shows as
    it is."""
    usage = record.usage
    summary = {
        "item": nodeid,
        "synthesised": record.synthesised,
        "healed": record.healed,
        "written": record.written,
        "proposed": record.proposed,
        "builtin_steps": usage.builtin_steps,
        "llm_steps": usage.llm_steps,
        "llm_calls": usage.llm_calls,
        "tokens": usage.input_tokens + usage.output_tokens,
        "invalid": usage.invalid_answers,
    }
    return RECORD_PROPERTY, json.dumps(summary)


class RecordLog:
    """Collects every item's record summary (on the xdist controller too) and prints
    the totals at the end of the session; registered as a plugin in record mode."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return  # the teardown report carries the item's copy (for junitxml)
        for name, value in report.user_properties:
            if name == RECORD_PROPERTY and isinstance(value, str):
                self.records.append(json.loads(value))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        records = self.records
        writer = terminalreporter
        writer.section("netgent record")
        for r in records:
            if r["synthesised"] or r["healed"]:
                parts = []
                if r["synthesised"]:
                    parts.append("synthesised " + ", ".join(repr(n) for n in r["synthesised"]))
                if r["healed"]:
                    parts.append("healed " + ", ".join(repr(n) for n in r["healed"]))
                if r.get("invalid"):
                    parts.append(f"{r['invalid']} invalid model answers (each retried)")
                target = r["written"] or r["proposed"] or "not written (the item failed)"
                writer.line(f"{r['item']}: {'; '.join(parts)} -> {target}")
        files = {r["written"] or r["proposed"] for r in records} - {""}
        writer.line(
            f"{sum(len(r['synthesised']) for r in records)} states synthesised, "
            f"{sum(len(r['healed']) for r in records)} healed, {len(files)} files written; "
            f"steps resolved: {sum(r['builtin_steps'] for r in records)} by builtin, "
            f"{sum(r['llm_steps'] for r in records)} by the LLM; "
            f"LLM calls: {sum(r['llm_calls'] for r in records)}, "
            f"tokens: {sum(r['tokens'] for r in records)}, "
            f"invalid answers: {sum(r.get('invalid', 0) for r in records)}"
        )
