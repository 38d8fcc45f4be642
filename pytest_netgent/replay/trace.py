"""``--netgent-trace``: what one item's browser did, tick by tick, in one file.

A :class:`Trace` belongs to one item (one ``netgent_browser``); each run it makes adds a
:class:`RunTrace`, which watches the engine: every timeline event, every tick with each
state's check results (identical ticks in a row are folded into one, with a count), and
around every action a screenshot and a DOM snapshot before it and after it. At the end
of the item :meth:`Trace.write` packs it into ``trace.zip`` (see :mod:`.trace_file`)::

    trace.json              the item, its outcome, and per run: the automaton's states,
                            the path taken, events, console messages, requests (from
                            the item's HAR when captured), LLM calls and tokens
    frames/NNNN.jpg         screenshots, JPEG, at most one per FRAME_GAP_S and MAX_FRAMES
                            per item, scaled to at most FRAME_WIDTH pixels wide
    snapshots/<sha1>.html   DOM snapshots (shadow roots and frames written in), each
                            kept once however often it was seen

Secrets never reach it: every text passes the run's redactor, and while a screenshot is
taken the page shows each secret's ``{name}`` (a page where that cannot be done gets no
screenshot). ``netgent show-trace trace.zip`` opens it in the browser.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..browser.chain import Chain
from ..browser.declared import adopt_declared_roots
from ..browser.page import FAR_FRAMES, script
from ..browser.session import browser_log, cdp
from ..system import atomic
from . import diagnosis
from .trace_file import pack

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

    from ..browser.page import Tick
    from ..system.redaction import Redactor
    from .engine import Engine
    from .run import RunResult, TimelineEvent


FRAME_GAP_S = 0.2
"""Shortest time between two screenshots of one run."""
MAX_FRAMES = 300
"""Most screenshots one item keeps (then actions are traced without them)."""
FRAME_WIDTH = 960
"""Widest screenshot, in pixels; a wider window is scaled down."""
JPEG_QUALITY = 55
SNAPSHOT_BYTES = 2_000_000
"""Largest DOM snapshot kept (a larger one is cut)."""

_SIZE = "return [window.innerWidth, window.innerHeight]"
_SNAPSHOT = """
const mark = 'data-netgent-frame-' + Math.random().toString(36).slice(2);
const attr = (html) => html.replace(/&/g, '&amp;').replace(/"/g, '&quot;');
const far = [];
const snap = (doc, prefix) => {
  const top = doc.documentElement;
  if (!top) return '';
  const roots = [], frames = [], marked = [];
  const walk = (scope, prefix) => {
    for (const el of scope.querySelectorAll('*')) {
      const root = ngRootOf(el);
      if (root) { roots.push(root); walk(root, prefix + ngUniqueCss(el, scope) + ' >> '); }
      if (!ngIsFrame(el)) continue;
      const inner = ngFrameDoc(el);
      if (inner) {
        const link = prefix + ngUniqueCss(el, scope) + ' >> ';
        el.setAttribute(mark, String(frames.length));
        frames.push(snap(inner, link));
      } else if (ngLoads(el)) {
        el.setAttribute(mark + '-far', String(far.length));
        far.push(prefix + ngUniqueCss(el, scope));
      } else continue;
      marked.push(el);
    }
  };
  walk(doc, prefix);
  let html;
  try {
    html = top.getHTML ? '<!DOCTYPE html><html>' + top.getHTML({shadowRoots: roots}) + '</html>'
      : top.outerHTML;
  } finally {
    for (const el of marked) { el.removeAttribute(mark); el.removeAttribute(mark + '-far'); }
  }
  const inlined = new RegExp(mark + '="(\\\\d+)"', 'g');
  return html.replace(inlined, (_, n) => 'srcdoc="' + attr(frames[Number(n)]) + '"');
};
return [snap(document, ''), mark + '-far', far, ngUnseenHosts()];
"""
"""The page as HTML, its shadow roots (open, and closed ones shadow.js kept) written as
declarative ``<template shadowrootmode>``, so a snapshot shows web components' content;
each frame of the page's own origin (at any depth) written into its ``srcdoc``, so the
snapshot shows what it showed. Frames no page script may read (another origin) are left
marked, with their chains, for :func:`_snapshot` to enter through WebDriver."""


def _snapshot(
    driver: WebDriver, chain: Chain, path: str = "", budget: list[int] | None = None
) -> str:
    """The snapshot of the page (or of the frame ``path`` names, entered by ``chain``),
    each frame of another origin entered through WebDriver (at most FAR_FRAMES in all)
    and written into its ``srcdoc`` as the frames of the page's own origin are."""
    budget = [FAR_FRAMES] if budget is None else budget
    html, mark, far, unseen = driver.execute_script(script("deep.js") + _SNAPSHOT)
    if unseen and not path and adopt_declared_roots(driver):  # closed roots the HTML declared
        html, mark, far, unseen = driver.execute_script(script("deep.js") + _SNAPSHOT)
    html = str(html or "")
    for number, link in enumerate(far):
        inner = ""
        full = f"{path} >> {link}" if path else str(link)
        if budget[0] > 0:
            budget[0] -= 1
            with contextlib.suppress(Exception):  # a frame gone or refusing: left empty
                if chain.enter(full):
                    inner = _snapshot(driver, chain, full, budget)
            chain.leave()
        srcdoc = f'srcdoc="{_attribute(inner)}"' if inner else ""
        html = html.replace(f'{mark}="{number}"', srcdoc, 1)
    return html


def _attribute(html: str) -> str:
    return html.replace("&", "&amp;").replace('"', "&quot;")


@dataclass
class Trace:
    """The trace of one item: its runs, screenshots and snapshots."""

    runs: list[RunTrace] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    """Zip members: ``frames/NNNN.jpg`` and ``snapshots/<sha1>.html``."""
    frames: int = 0

    def start(self, engine: Engine) -> RunTrace:
        """Watch the run ``engine`` is about to make."""
        run = RunTrace(self, engine)
        engine.result.watchers.append(run)
        self.runs.append(run)
        return run

    def write(self, path: Path, item: str, outcome: str, har: Path | None = None) -> Path:
        """Pack the trace into ``path`` (a zip), with the requests of ``har`` if given."""
        requests = _requests(har) if har is not None and har.is_file() else []
        document = {
            "item": item,
            "outcome": outcome,
            "runs": [run.document(requests) for run in self.runs],
        }
        data = pack(document, self.files)
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic.replacing(path, "wb") as out:
            out.write(data)
        return path


class RunTrace:
    """Watches one engine's run (see :class:`~pytest_netgent.replay.run.Watcher`)."""

    def __init__(self, trace: Trace, engine: Engine) -> None:
        self.trace = trace
        self.engine = engine
        self.redact: Redactor = engine.redact
        self.events: list[dict[str, Any]] = []
        self._after: dict[str, Any] | None = None
        """The action event whose "after" pictures the next look at the page takes."""
        self._last_frame = 0.0
        self.result: RunResult | None = None
        self.console: list[dict[str, Any]] = []

    # ------------------------------------------------------------------ the engine's calls

    def event(self, event: TimelineEvent) -> None:
        """A timeline event: an action gets its "before" pictures now."""
        self._close_action()
        entry: dict[str, Any] = {"t": round(event.elapsed, 3), "kind": event.event}
        for key in ("state", "action", "url", "detail"):
            if value := getattr(event, key):
                entry[key] = value
        self.events.append(entry)
        self._read_console()
        if event.event == "action":
            self._picture(entry, "frame", "snapshot")
            self._after = entry

    def tick(self, tick: Tick) -> None:
        """One look at the page: each state's check results."""
        self._close_action()
        names = [s.name for s in self.engine.states]
        checks = [
            {
                "state": names[i] if i < len(names) else str(i),
                "matched": i in tick.matched,
                "results": [[ok, self.redact(text)] for ok, text in results],
            }
            for i, results in enumerate(tick.results)
        ]
        entry = {
            "kind": "tick",
            "url": self.redact(tick.href),
            "title": self.redact(tick.title),
            "matched": [names[i] for i in tick.matched if i < len(names)],
            "checks": checks,
        }
        last = self.events[-1] if self.events else {}
        if last.get("kind") == "tick" and all(last.get(k) == v for k, v in entry.items()):
            last["count"] = last.get("count", 1) + 1
            return
        self.events.append({"t": round(time.monotonic() - self.engine.t0, 3), **entry})

    def finish(self, result: RunResult) -> None:
        """The run ended: the last action's "after" pictures, if it has none yet."""
        self._close_action()
        self._read_console()
        self.result = result

    def _read_console(self) -> None:
        """The pages' console messages since the last read (a browser started with them
        logged; none otherwise)."""
        try:
            entries = browser_log(self.engine.driver, "browser")
        except Exception:  # a session without the log (a Grid node's, a browser gone)
            return
        for entry in entries:
            self.console.append(
                {
                    "epoch": float(entry.get("timestamp", 0)) / 1000,
                    "level": str(entry.get("level", "")).lower(),
                    "text": self.redact(str(entry.get("message", ""))),
                }
            )

    # ------------------------------------------------------------------ pictures

    def _close_action(self) -> None:
        if self._after is not None:
            action, self._after = self._after, None
            self._picture(action, "after_frame", "after_snapshot")

    def _picture(self, entry: dict[str, Any], frame_key: str, snapshot_key: str) -> None:
        """A screenshot and a DOM snapshot of the page now, named in ``entry``; a page
        that cannot be pictured (between documents, gone) is left without."""
        driver = self.engine.driver
        try:
            chain = Chain(driver)
            try:
                html = _snapshot(driver, chain)[:SNAPSHOT_BYTES]
            finally:
                chain.leave()
        except Exception:  # a page between documents, a dialog open, a browser gone
            return
        data = self.redact(html).encode("utf-8")
        name = f"snapshots/{hashlib.sha1(data).hexdigest()}.html"
        self.trace.files.setdefault(name, data)
        entry[snapshot_key] = name
        now = time.monotonic()
        if now - self._last_frame < FRAME_GAP_S or self.trace.frames >= MAX_FRAMES:
            return
        if (jpeg := self._screenshot()) is not None:
            self._last_frame = now
            self.trace.frames += 1
            frame = f"frames/{self.trace.frames:04d}.jpg"
            self.trace.files[frame] = jpeg
            entry[frame_key] = frame

    def _screenshot(self) -> bytes | None:
        driver = self.engine.driver
        try:
            width, height = driver.execute_script(_SIZE)
            scale = min(1.0, FRAME_WIDTH / max(int(width), 1))
            params: dict[str, Any] = {"format": "jpeg", "quality": JPEG_QUALITY}
            if scale < 1.0:
                params["clip"] = {"x": 0, "y": 0, "width": width, "height": height}
                params["clip"]["scale"] = scale
            with diagnosis.secrets_hidden(driver, self.redact) as hidden:
                shot = cdp(driver, "Page.captureScreenshot", params) if hidden else None
        except Exception:  # a page between documents, a browser gone: no picture
            return None
        if not isinstance(shot, dict) or not shot.get("data"):
            return None
        return base64.b64decode(shot["data"])

    # ------------------------------------------------------------------ the document

    def document(self, requests: list[dict[str, Any]]) -> dict[str, Any]:
        """This run's part of ``trace.json``."""
        result = self.result or self.engine.result
        started = _epoch(result.started_at)
        end = started + result.duration + 1 if started is not None else None
        usage = result.record.usage if result.record is not None else None
        return {
            "workflow": result.workflow,
            "started": result.started_at,
            "duration": round(result.duration, 3),
            "passed": result.passed,
            "error": _reason(result),
            "states": [
                {
                    "name": s.name,
                    "checks": [self.redact(c.describe()) for c in s.checks],
                    "actions": [self.redact(a.describe()) for a in s.actions],
                    "end": bool(s.end_state),
                }
                for s in self.engine.states
            ],
            "path": result.states_visited,
            "events": self.events,
            "network": _within(requests, started, end),
            "console": _within(self.console, started, end),
            "llm": {
                "calls": usage.llm_calls if usage else 0,
                "tokens": usage.input_tokens + usage.output_tokens if usage else 0,
            },
        }


def _within(
    requests: list[dict[str, Any]], started: float | None, end: float | None
) -> list[dict[str, Any]]:
    """The ``requests`` (or console messages) of the run, each with ``t`` seconds since it
    started."""
    if started is None or end is None:
        return []
    return [
        {"t": round(r["epoch"] - started, 3), **{k: v for k, v in r.items() if k != "epoch"}}
        for r in requests
        if started - 1 <= r["epoch"] <= end
    ]


def _reason(result: RunResult) -> str:
    if result.error is None:
        return ""
    text = str(getattr(result.error, "reason", "") or result.error).strip()
    return text.splitlines()[0] if text else type(result.error).__name__


def _epoch(iso: str) -> float | None:
    try:
        return datetime.fromisoformat(iso).timestamp() if iso else None
    except ValueError:
        return None


def _requests(har: Path) -> list[dict[str, Any]]:
    """The requests of a HAR file (already free of secrets), with their start in epoch
    seconds; none when it cannot be read."""
    try:
        entries = json.loads(har.read_text(encoding="utf-8"))["log"]["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    out = []
    for entry in entries:
        epoch = _epoch(str(entry.get("startedDateTime", "")))
        if epoch is None:
            continue
        response = entry.get("response") or {}
        out.append(
            {
                "epoch": epoch,
                "duration": round(max(float(entry.get("time") or 0), 0.0) / 1000, 3),
                "method": str((entry.get("request") or {}).get("method", "")),
                "url": str((entry.get("request") or {}).get("url", "")),
                "status": int(response.get("status") or 0),
                "bytes": int((response.get("content") or {}).get("size") or 0),
            }
        )
    return out
