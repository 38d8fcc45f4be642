"""WebRTC quality metrics (``start_webrtc_tracking``, ``collect_webrtc_metrics``) of the
video-call example: a sample per stream every second, aligned with the timeline, and a
shaped network that shows in them."""

from __future__ import annotations

import itertools
import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent import NetgentBrowser
from pytest_netgent.plugin.shaping import unavailable
from pytest_netgent.workflow.automaton import parse_automaton

from .helpers import QUIET, Project, embedded_call, embedded_call_totals, read_rows
from .test_scenario import CONFTEST  # the sites served in the session's network namespace

EXAMPLE = Path(__file__).parent.parent / "example_suites" / "call" / "quality.netgent.yaml"
CACHE = EXAMPLE.parent / "__netgent__" / "quality" / "call-quality.json"


def test_a_call_is_sampled_every_second_per_stream_and_summed_up(
    netgent_browser: NetgentBrowser, tmp_path: Path
) -> None:
    result = netgent_browser.run(EXAMPLE, artifacts=tmp_path)
    streams: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for sample in result.webrtc:
        streams[(sample["direction"], sample["kind"])].append(sample)
    assert set(streams) == {(d, k) for d in ("inbound", "outbound") for k in ("audio", "video")}
    for (direction, kind), samples in streams.items():
        gaps = [b["elapsed"] - a["elapsed"] for a, b in itertools.pairwise(samples)]
        assert len(samples) >= 5 and 0.8 <= statistics.median(gaps) <= 1.2, gaps
        later = samples[1:]  # the first has no earlier sample to make a rate from
        assert all(s["bitrate_bps"] > 0 for s in later), (direction, kind, later)
        assert all(s["state"] == "In call" and "/meet/room" in s["page"] for s in samples)
        assert any(s["rtt"] is not None for s in samples)
        if kind == "video":
            assert all(s["width"] > 0 and s["height"] > 0 for s in later), later
            assert statistics.median(s["frames_per_second"] for s in later) >= 10
    # aligned with the timeline: the samples fall between the state's start and the end
    started = next(e.elapsed for e in result.timeline if e.state == "In call")
    assert all(started - 1.5 <= s["elapsed"] <= result.duration + 0.5 for s in result.webrtc)
    summary = json.loads((tmp_path / "meeting.json").read_text("utf-8"))
    assert summary["page_count"] == 1
    (page,) = summary["pages"]
    assert "/meet/room" in page["url"]
    totals = page["webrtc"]
    assert totals["connection_count"] == 1 and totals["connection_states"] == ["connected"]
    assert totals["bytes_received"] > 10_000 and totals["bytes_sent"] > 10_000
    assert totals["frames_decoded"] > 0 and totals["frames_encoded"] > 0


def test_a_call_embedded_from_another_site_is_sampled_too(
    netgent_browser: NetgentBrowser, tmp_path: Path
) -> None:
    """A call in a frame of another site (as call SDKs embed it; Chromium runs it in a
    process of its own): the tracker reaches it through the browser's guard, and its
    samples are read through WebDriver when the run ends."""
    from pytest_netgent import State, Workflow

    spec = Workflow.model_validate(
        {
            "name": "embedded-call",
            "start_url": "{base_url}/components/embed-call",
            "states": [{"name": "In call", "end": "done"}, {"name": "Page"}],
        }
    )
    leave = {"by": "css selector", "selector": "#call >> #leave-button"}
    states = [
        State.model_validate(
            {
                "name": "Page",
                "checks": [
                    {"type": "element", "params": {"by": "css selector", "selector": "#start"}}
                ],
                "actions": [
                    {"type": "start_webrtc_tracking", "params": {}},
                    {"type": "click", "params": {"by": "css selector", "selector": "#start"}},
                ],
            }
        ),
        State.model_validate(
            {
                "name": "In call",
                "checks": [{"type": "element", "params": leave}],
                "actions": [
                    {"type": "wait", "params": {"seconds": 5}},
                    {"type": "collect_webrtc_metrics", "params": {"out_path": "meeting.json"}},
                ],
                "end_state": "done",
            }
        ),
    ]
    result = netgent_browser.run(spec, states=states, artifacts=tmp_path)
    assert result.states_visited == ["Page", "In call"]
    kinds = {(s["direction"], s["kind"]) for s in result.webrtc}
    assert kinds == {(d, k) for d in ("inbound", "outbound") for k in ("audio", "video")}
    assert all("//localhost:" in s["page"] and "/meet/room" in s["page"] for s in result.webrtc)
    inbound = [s for s in result.webrtc if s["direction"] == "inbound" and s["kind"] == "video"]
    assert len(inbound) >= 3 and any(s["bitrate_bps"] for s in inbound), inbound
    # read at the end, each stamped with the state that ran when the frame took it
    assert {s["state"] for s in result.webrtc} == {"In call"}
    # NetGent's summary of the tab counts the call its frame of another site holds
    (page,) = json.loads((tmp_path / "meeting.json").read_text("utf-8"))["pages"]
    assert page["url"].endswith("/components/embed-call")
    totals = page["webrtc"]
    assert totals["connection_count"] == 1 and totals["connection_states"] == ["connected"]
    assert totals["bytes_received"] > 10_000 and totals["frames_decoded"] > 0


def test_a_sample_read_later_keeps_the_state_it_was_taken_in() -> None:
    """Samples of a tab in the background are read when the run has moved on (at its
    end): each is stamped with the state that ran when the page took it."""
    import time

    from pytest_netgent.browser.meter import Meter

    meter = Meter(driver=None, started=time.time())  # type: ignore[arg-type]
    before = time.time()
    meter.state = "In call"
    during = time.time()
    time.sleep(0.01)
    meter.state = "Second viewer"
    meter.state = "Second viewer"  # the same state again: no new span
    after = time.time()
    stamped = [meter.envelope({"t": at * 1000, "page": "p"})["state"] for at in
               (before - 1, during, after)]  # fmt: skip
    assert stamped == ["", "In call", "Second viewer"]
    assert meter.state == "Second viewer"


def _inbound_bitrates(samples: list[dict[str, Any]]) -> list[float]:
    """The call's received bitrate in each second: its inbound streams' sum."""
    per_second: dict[str, float] = defaultdict(float)
    for s in samples:
        if s["direction"] == "inbound" and s["bitrate_bps"] is not None:
            per_second[s["time"]] += s["bitrate_bps"]
    return list(per_second.values())


@pytest.mark.skipif(bool(unavailable("")), reason=unavailable(""))
def test_a_shaped_call_shows_a_lower_bitrate_and_a_longer_round_trip(
    project: Project, tmp_path: Path
) -> None:
    project.pytester.makeconftest(CONFTEST)
    project.pytester.makeini(  # the call's camera, microphone and loopback ICE (pyproject.toml)
        "[pytest]\nnetgent_state_timeout = 10\nnetgent_browser_args =\n"
        "    --use-fake-device-for-media-stream\n    --use-fake-ui-for-media-stream\n"
        "    --allow-loopback-in-peer-connection\n"
    )
    text = EXAMPLE.read_text("utf-8").replace(
        "vars: {me: Ada, seconds: 8}",
        'vars: {me: Ada, seconds: 8}\nnetwork: "{net}"\nparametrize:\n'
        '  net: [none, "rate=64kbit,delay=100ms"]',
    )
    file = project.workflow("quality", text)
    automaton = parse_automaton(json.loads(CACHE.read_text("utf-8")))
    project.states(file, "call-quality", {s.name: (s.checks, s.actions) for s in automaton.states})
    root = tmp_path / "artifacts"
    result = project.pytester.runpytest_subprocess(
        *QUIET, "-n", "0", "--netgent-capture=pcap", f"--netgent-artifacts={root}"
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    samples = {}
    for row in read_rows(root / "manifest.csv"):
        net = json.loads(row["parameters"])["net"]
        lines = (root / row["webrtc"]).read_text("utf-8").splitlines()
        samples[net] = [json.loads(line) for line in lines]
    plain, shaped = samples["none"], samples["rate=64kbit,delay=100ms"]
    # 64 kbit/s down holds less than the call sends (its audio alone is about 120 kbit/s)
    shaped_rate = statistics.median(_inbound_bitrates(shaped))
    assert shaped_rate <= 64_000 < statistics.median(_inbound_bitrates(plain)), (shaped, plain)
    # both 100 ms delays are in every round trip; a queue at 64 kbit/s adds more
    shaped_rtt = [s["rtt"] for s in shaped if s["rtt"] is not None]
    plain_rtt = [s["rtt"] for s in plain if s["rtt"] is not None]
    assert shaped_rtt and min(shaped_rtt) >= 0.19, shaped_rtt
    assert statistics.median(plain_rtt) < statistics.median(shaped_rtt)
    lost = max((s["packets_lost"] or 0) for s in shaped if s["direction"] == "inbound")
    assert lost > 0  # the bottleneck's full queue drops


@pytest.mark.uc
def test_in_uc_mode_a_call_in_a_frame_of_another_site_is_measured(project: Project) -> None:
    """UC mode has no guard: tracking WebRTC opens a DevTools connection of its own that
    only runs the tracker in frames of other sites (none is opened when a run does not
    track), so NetGent's summary counts the call embedded from the other host name; and
    its media flow (SeleniumBase's profile would keep WebRTC off UDP unless proxied)."""
    embedded_call(project)
    project.run_subprocess("--netgent-uc").assert_outcomes(passed=1)
    totals = embedded_call_totals(project)
    assert totals["connection_count"] == 1 and totals["bytes_received"] > 10_000, totals
