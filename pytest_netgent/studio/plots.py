"""Plots of an item's captures: the throughput of its flows over time with the workflow's
state changes marked, and its quality over time where it was sampled: per video the
buffer ahead, resolution and stalls; per WebRTC stream the bitrate, resolution and frame
rate. For a scenario, the throughput of each member (its flows, as ``flows.csv`` labels
them) with each member's state changes.

:func:`draw` reads an item's (or a scenario's) artifacts folder and writes
``throughput.svg`` / ``qoe.svg`` (and ``.png``) beside the capture; ``--netgent-plots``
does it for every captured item, ``netgent plot FOLDER...`` for folders already written,
and ``netgent show-trace`` shows the SVGs found beside a trace. The data are read here;
the drawing is matplotlib's (the ``plots`` extra), imported only when a plot is drawn.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import sys
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..capture import FILES
from ..capture.pcap import Key, five_tuple, pcap_records
from ..errors import NetgentError
from ..system import atomic

PLOTS = ("throughput", "qoe")
"""The plots an item's folder may get, each as ``<name>.<format>``."""

FORMATS = ("svg", "png")
"""The formats a plot is written in."""

TOP_FLOWS = 8
"""Flows drawn one by one; the rest are summed as one line."""

MEMBER_SLACK = 1.0
"""Seconds a member's flow may be seen before or after ``flows.csv``'s first and last."""


class PlotError(NetgentError):
    """A folder cannot be plotted; the message names the file and what to do."""


@dataclass
class Line:
    """One line of a plot: its label and its ``(seconds since the start, value)``."""

    label: str
    points: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Marks:
    """The state changes to mark: ``(seconds since the start, label)``."""

    at: list[tuple[float, str]] = field(default_factory=list)


# ---------------------------------------------------------------------------- reading


def parse_formats(text: str, option: str = "--netgent-plots") -> tuple[str, ...]:
    """``svg,png`` (any subset) as a tuple; ``off`` or empty as none; ValueError names
    ``option`` and what it takes."""
    if text.strip().lower() in ("", "off", "none"):
        return ()
    formats = tuple(dict.fromkeys(f.strip().lower() for f in text.split(",") if f.strip()))
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise ValueError(
            f"{option}: unknown format {unknown[0]!r}; give svg, png or both separated by a "
            "comma (e.g. --netgent-plots=svg,png), or off"
        )
    return formats


def _canonical(key: Key) -> Key:
    """One key for both directions of a flow: the lower endpoint first."""
    proto, src, sport, dst, dport = key
    if (src, sport) <= (dst, dport):
        return key
    return proto, dst, dport, src, sport


@dataclass
class _MemberFlow:
    key: Key
    first: float
    last: float
    member: str


def _member_flows(path: Path) -> list[_MemberFlow]:
    """The flows of a scenario's ``flows.csv`` with the member each belongs to."""
    out: list[_MemberFlow] = []
    with path.open(encoding="utf-8", newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            try:
                key = (row["proto"], row["src"], int(row["sport"]), row["dst"], int(row["dport"]))
                first, last = float(row["first"]), float(row["last"])
            except (KeyError, TypeError, ValueError) as exc:
                raise PlotError(
                    f"{path}:{line}: not a row of flows.csv ({exc}); write the scenario's "
                    "capture again, or remove the file to plot its flows unlabelled"
                ) from None
            member = row.get("member") or "(no member)"
            out.append(_MemberFlow(_canonical(key), first, last, member))
    return out


def _packets(pcap: Path) -> Iterator[tuple[float, Key, Key, int]]:
    """``(time, canonical 5-tuple, 5-tuple as sent, frame length)`` of each TCP or UDP
    packet."""
    try:
        for moment, _, frame in pcap_records(pcap):
            parsed = five_tuple(frame)
            if parsed is not None:
                yield moment, _canonical(parsed[0]), parsed[0], parsed[1]
    except OSError as exc:
        raise PlotError(f"{pcap}: cannot be read ({exc.strerror or exc})") from None


def _flow_label(first: Key) -> str:
    """A flow by its first packet's sender (the client, as a rule) and receiver."""
    proto, src, sport, dst, dport = first
    return f"{proto} {src}:{sport} > {dst}:{dport}"


def throughput(
    pcap: Path, flows: Path | None = None, *, bin_s: float = 1.0
) -> tuple[float, list[Line]]:
    """The start (epoch) and, per flow (or per member with a scenario's ``flows`` file),
    the throughput in Mbit/s over bins of ``bin_s`` seconds."""
    members: dict[Key, list[_MemberFlow]] | None = None
    if flows is not None:
        members = {}
        for flow in _member_flows(flows):
            members.setdefault(flow.key, []).append(flow)
    bins: dict[str, dict[int, int]] = {}
    totals: dict[str, int] = {}
    start: float | None = None
    named: dict[Key, str] = {}
    for moment, key, sent, length in _packets(pcap):
        start = moment if start is None else start
        if members is None:
            name = named.setdefault(key, _flow_label(sent))
        else:
            name = next(
                (
                    m.member
                    for m in members.get(key, ())
                    if m.first - MEMBER_SLACK <= moment <= m.last + MEMBER_SLACK
                ),
                "(no member)",
            )
        per = bins.setdefault(name, {})
        slot = int((moment - start) // bin_s)
        per[slot] = per.get(slot, 0) + length
        totals[name] = totals.get(name, 0) + length
    if start is None:
        return 0.0, []
    ranked = sorted(totals, key=lambda n: -totals[n])
    if members is None and len(ranked) > TOP_FLOWS:
        rest = {n: bins.pop(n) for n in ranked[TOP_FLOWS - 1 :]}
        merged: dict[int, int] = {}
        for per in rest.values():
            for slot, size in per.items():
                merged[slot] = merged.get(slot, 0) + size
        bins[f"{len(rest)} other flows"] = merged
        ranked = [*ranked[: TOP_FLOWS - 1], f"{len(rest)} other flows"]
    last = max(max(per) for per in bins.values())
    lines = []
    for name in ranked:
        per = bins[name]
        points = [(s * bin_s, per.get(s, 0) * 8 / bin_s / 1e6) for s in range(last + 1)]
        lines.append(Line(name, points))
    return start, lines


def state_changes(timeline: Path, start: float, prefix: str = "") -> Marks:
    """The states fired in ``timeline.json``, in seconds since ``start``."""
    marks = Marks()
    for event in _events(timeline):
        if event.get("event") == "state" and isinstance(event.get("epoch"), (int, float)):
            marks.at.append((float(event["epoch"]) - start, prefix + str(event.get("state"))))
    return marks


def _events(timeline: Path) -> Iterator[dict[str, Any]]:
    try:
        document = json.loads(timeline.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PlotError(f"{timeline}: not a timeline ({exc}); write the capture again") from None
    for run in document.get("runs", []) if isinstance(document, dict) else []:
        yield from (e for e in run.get("events", []) if isinstance(e, dict))


def _samples(path: Path, what: str) -> Iterator[tuple[float, dict[str, Any]]]:
    """``(epoch, sample)`` of each line of a ``.jsonl`` file of samples."""
    with path.open(encoding="utf-8") as f:
        for number, text in enumerate(f, start=1):
            try:
                sample = json.loads(text)
                moment = datetime.fromisoformat(sample["time"]).timestamp()
            except (ValueError, KeyError, TypeError):
                raise PlotError(
                    f"{path}:{number}: not a {what} sample; write the capture again"
                ) from None
            yield moment, sample


QOE_FIELDS = (("buffer", "buffered_ahead"), ("height", "height"), ("stalls", "stalls"))
"""Lines of a video sample (``qoe.jsonl``): the plot's kind and the sample's field."""

WEBRTC_FIELDS = (("bitrate", "bitrate_bps"), ("height", "height"), ("fps", "frames_per_second"))
"""Lines of a WebRTC stream's sample (``webrtc.jsonl``)."""

SCALE = {"bitrate": 1e-6}
"""Kinds drawn in another unit than sampled (bit/s as Mbit/s)."""


def qoe(
    samples: Path, start: float | None, prefix: str = "", *, webrtc: bool = False
) -> tuple[float, dict[str, Line]]:
    """The start (epoch: ``start``, else the first sample's) and the lines of
    ``qoe.jsonl`` (per video: ``buffer`` ahead in seconds, ``height`` in pixels,
    ``stalls``) or with ``webrtc`` of ``webrtc.jsonl`` (per stream: ``bitrate``,
    ``height``, ``fps``), keyed ``kind<TAB>label``."""
    lines: dict[str, Line] = {}
    fields = WEBRTC_FIELDS if webrtc else QOE_FIELDS
    for moment, sample in _samples(samples, "WebRTC" if webrtc else "video quality"):
        if webrtc:
            label = f"{prefix}{sample.get('direction')} {sample.get('kind')} {sample.get('ssrc')}"
        elif sample.get("video") is None:
            continue
        else:
            label = f"{prefix}video {sample['video']}"
        start = moment if start is None else start
        for kind, name in fields:
            value = sample.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                line = lines.setdefault(f"{kind}\t{label}", Line(label))
                line.points.append((moment - start, float(value) * SCALE.get(kind, 1)))
    return start or 0.0, lines


# ---------------------------------------------------------------------------- drawing


@contextlib.contextmanager
def _drawing() -> Iterator[None]:
    """matplotlib, set up for files: no window, no math in labels (a state named
    "$5 or $10" is words), SVG ids that do not change between runs. Its own deprecation
    warnings (an older matplotlib's calls into a newer pyparsing, at import) are not the
    user's: they do not reach a ``-W error`` run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
        with matplotlib.rc_context({"text.parse_math": False, "svg.hashsalt": "pytest-netgent"}):
            yield


def _figure(rows: int) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 2.6 * rows + 0.8), layout="constrained")
    axes = figure.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    return figure, axes


def _mark(axes: Iterable[Any], marks: Marks) -> None:
    """A dashed vertical line per state change, its label at the top of the first axes."""
    axes = list(axes)
    for at, label in marks.at:
        for ax in axes:
            ax.axvline(at, color="0.5", linestyle="--", linewidth=0.8)
        axes[0].annotate(
            label,
            (at, 1),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=7,
            va="top",
            ha="right",
            color="0.3",
        )


def _save(figure: Any, folder: Path, name: str, formats: Iterable[str], start: float) -> list[Path]:
    written = []
    for kind in formats:
        path = folder / f"{name}.{kind}"
        # no date and no random ids in the SVG: the same capture draws the same file
        metadata = {"Date": None} if kind == "svg" else {}
        with atomic.replacing(path, "wb") as out:
            figure.savefig(out, format=kind, dpi=100, metadata=metadata)
        written.append(path)
        if kind == "svg":
            atomic.write_text(axes_file(path), json.dumps(_axes(figure, start)))
    return written


def axes_file(svg: Path) -> Path:
    """Where the trace viewer finds where ``svg``'s time axes are (``NAME.axes.json``)."""
    return svg.with_name(f"{svg.stem}.axes.json")


def _axes(figure: Any, start: float) -> dict[str, Any]:
    """Where each axes of ``figure`` (as laid out by the last save) sits, as fractions of
    the picture from its top left, with its time range: x = 0 is ``start`` (epoch
    seconds). The trace viewer draws the selected moment over the plot from it."""
    boxes = []
    for ax in figure.axes:
        box = ax.get_position()
        low, high = ax.get_xlim()
        boxes.append(
            {
                "left": round(box.x0, 5),
                "right": round(box.x1, 5),
                "top": round(1 - box.y1, 5),
                "bottom": round(1 - box.y0, 5),
                "xlim": [round(float(low), 4), round(float(high), 4)],
            }
        )
    return {"start": start, "axes": boxes}


def _draw_throughput(
    folder: Path, lines: list[Line], marks: Marks, formats: Iterable[str], title: str, start: float
) -> list[Path]:
    """``throughput.<format>`` in ``folder``: one line per flow or member."""
    figure, (ax,) = _figure(1)
    for line in lines:
        ax.plot([t for t, _ in line.points], [v for _, v in line.points], label=line.label)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("throughput (Mbit/s)")
    ax.set_xlabel("seconds since the first packet")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    _mark([ax], marks)
    return _save(figure, folder, "throughput", formats, start)


def _draw_qoe(
    folder: Path,
    lines: dict[str, Line],
    marks: Marks,
    formats: Iterable[str],
    title: str,
    start: float,
) -> list[Path]:
    """``qoe.<format>`` in ``folder``: buffer ahead, resolution and stalls per video;
    bitrate, resolution and frame rate per WebRTC stream."""
    kinds = [
        ("buffer", "buffer ahead (s)"),
        ("height", "resolution (lines)"),
        ("bitrate", "bitrate (Mbit/s)"),
        ("fps", "frames per second"),
        ("stalls", "stalls"),
    ]
    kinds = [(k, label) for k, label in kinds if any(n.startswith(k + "\t") for n in lines)]
    figure, axes = _figure(len(kinds))
    for ax, (kind, label) in zip(axes, kinds, strict=True):
        for name, line in lines.items():
            if name.startswith(kind + "\t"):
                xs, ys = [t for t, _ in line.points], [v for _, v in line.points]
                ax.step(xs, ys, where="post", label=line.label)
        ax.set_ylabel(label)
        ax.legend(fontsize=7, loc="upper right")
    axes[0].set_title(title, fontsize=10)
    axes[-1].set_xlabel("seconds since the start")
    _mark(axes, marks)
    return _save(figure, folder, "qoe", formats, start)


# ---------------------------------------------------------------------------- a folder


def _title(folder: Path) -> str:
    try:
        item = json.loads((folder / "item.json").read_text(encoding="utf-8"))
        return str(item.get("item") or folder.name)
    except (OSError, ValueError):
        return folder.name


def _members(folder: Path) -> list[Path]:
    return sorted(p.parent for p in folder.glob(f"*/{FILES['timeline']}"))


def _marks_of(folder: Path, start: float, scenario: bool) -> Marks:
    if not scenario:
        timeline = folder / FILES["timeline"]
        return state_changes(timeline, start) if timeline.is_file() else Marks()
    marks = Marks()
    for member in _members(folder):
        marks.at += state_changes(member / FILES["timeline"], start, f"{member.name}: ").at
    marks.at.sort()
    return marks


def draw(folder: Path, formats: Iterable[str] = FORMATS) -> list[Path]:
    """Draw the plots ``folder``'s captures allow, in ``formats``; the files written.

    Throughput needs ``capture.pcap``; quality needs ``qoe.jsonl`` or ``webrtc.jsonl``
    (a scenario's members' own). A folder with neither gets nothing. Raises :class:`PlotError` for a
    file that cannot be read, naming it; nothing is written then.
    """
    formats = tuple(formats)
    title = _title(folder)
    pcap, flows = folder / FILES["pcap"], folder / "flows.csv"
    scenario = flows.is_file()
    start: float | None = None
    plans: list[tuple[str, Any, Marks, float]] = []
    if pcap.is_file():
        start, lines = throughput(pcap, flows if scenario else None)
        if lines:
            plans.append(("throughput", lines, _marks_of(folder, start, scenario), start))
    places = [(m, f"{m.name}: ") for m in _members(folder)] if scenario else []
    places.append((folder, ""))
    videos: dict[str, Line] = {}
    for place, prefix in places:
        for kind in ("qoe", "webrtc"):
            if (samples := place / FILES[kind]).is_file():
                start, found = qoe(samples, start, prefix, webrtc=kind == "webrtc")
                videos.update(found)
    if videos:
        plans.append(("qoe", videos, _marks_of(folder, start or 0.0, scenario), start or 0.0))
    written: list[Path] = []
    if not plans:
        return written
    with _drawing():
        for name, lines, marks, origin in plans:
            drawer = _draw_throughput if name == "throughput" else _draw_qoe
            written += drawer(folder, lines, marks, formats, title, origin)
    return written


def plots_beside(path: Path) -> list[Path]:
    """The SVG plots in the folder of ``path`` (a trace), in :data:`PLOTS` order."""
    return [p for name in PLOTS if (p := path.parent / f"{name}.svg").is_file()]


def main(argv: list[str]) -> int:
    """``netgent plot FOLDER... [--format svg,png]``: draw the plots of captured items.

    A folder is an item's (or a scenario's) artifacts folder; a folder holding item
    folders (a whole ``--netgent-artifacts`` tree) plots each. Returns 0, or 2 when a
    folder or one of its files cannot be read (each named on stderr).
    """
    parser = argparse.ArgumentParser(
        prog="netgent plot",
        description="Draw throughput and video quality plots of captured items.",
    )
    parser.add_argument("folders", nargs="+", metavar="FOLDER", type=Path)
    parser.add_argument("--format", default="svg,png", help="svg, png or both (default)")
    try:
        args = parser.parse_args(argv)
        formats = parse_formats(args.format, "--format")
    except SystemExit as stop:  # argparse has printed its usage message
        return stop.code if isinstance(stop.code, int) else 2
    except ValueError as exc:
        print(f"netgent plot: {exc}", file=sys.stderr)
        return 2
    status = 0
    for folder in args.folders:
        items = sorted({p.parent for p in folder.rglob("item.json")}) if folder.is_dir() else []
        if not items:
            print(f"netgent plot: {folder}: no captured item in it (no item.json)", file=sys.stderr)
            status = 2
        for item in items:
            if item.parent in items:
                continue  # a scenario member: its scenario's plots show it
            try:
                written = draw(item, formats)
            except PlotError as exc:
                print(f"netgent plot: {exc}", file=sys.stderr)
                status = 2
                continue
            for path in written:
                print(path)
    return status
