"""NetGent's own files, as NetGent writes them today, replay unchanged: through the
``netgent`` command, the SDK and as converted pytest items.

The repositories below use NetGent's exact format: a bare list of states beginning with
the ``chrome://new-tab-page/`` start state, ``terminate`` actions, element checks with
``check_visibility`` and ``timeout``, NetGent's ``%name%`` variables, ``x``/``y`` screen
points beside selectors, ``scroll`` by ``pixels``, ``move``, ``config.continuous`` and
the QoE "Stats for Nerds" actions.
"""

from __future__ import annotations

import itertools
import json
import statistics
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_netgent import NetGent
from pytest_netgent.cli import main
from pytest_netgent.workflow.automaton import parse_automaton

from .helpers import QUIET

TERMINATE = {
    "type": "terminate",
    "params": {"reason": "The previous action completed the instruction. Therefore, done."},
}


def start_state(url: str) -> dict[str, Any]:
    """NetGent's first state: the fresh browser's new-tab page, then a navigation."""
    return {
        "name": "On Browser Home Page",
        "description": "Start the Process",
        "checks": [{"type": "url", "params": {"url": "chrome://new-tab-page/"}}],
        "actions": [{"type": "navigate", "params": {"url": url}}, TERMINATE],
        "end_state": "",
        "executed": [],
    }


# Search the wiki and open an article. The search box is on every wiki page, so the
# article and results states come before the search state (NetGent's priority order).
WIKI = [
    start_state("%base_url%/wiki/"),
    {
        "name": "Article",
        "description": "An article is open",
        "checks": [
            {
                "type": "element",
                "params": {
                    "by": "css selector",
                    "selector": "h1#firstHeading",
                    "check_visibility": True,
                    "timeout": 0.1,
                },
            }
        ],
        "actions": [
            {"type": "scroll", "params": {"pixels": 300, "direction": "down"}},
            {
                "type": "move",
                "params": {"by": "css selector", "selector": "#search-input", "x": 90.0, "y": 60.0},
            },
            TERMINATE,
        ],
        "end_state": "Article opened",
        "executed": [],
    },
    {
        "name": "Results",
        "description": "Search results are listed",
        "checks": [
            {
                "type": "element",
                "params": {
                    "by": "css selector",
                    "selector": "#results li.result",
                    "check_visibility": False,
                    "timeout": 2,
                },
            }
        ],
        "actions": [
            {
                "type": "click",
                "params": {
                    "by": "css selector",
                    "selector": "#results li.result a",
                    "x": 132.0,
                    "y": 375.0,
                },
            },
            TERMINATE,
        ],
        "end_state": "",
        "executed": [],
    },
    {
        "name": "Search for the query",
        "description": "On the wiki home page",
        "checks": [
            {
                "type": "element",
                "params": {
                    "by": "css selector",
                    "selector": "#search-input",
                    "check_visibility": True,
                    "timeout": 0.1,
                },
            }
        ],
        "actions": [
            {
                "type": "type",
                "params": {
                    "text": "%query%",
                    "by": "css selector",
                    "selector": "#search-input",
                    "x": 584.53125,
                    "y": 446.0,
                },
            },
            {"type": "press_key", "params": {"key": "enter"}},
            {"type": "wait", "params": {"seconds": 0.2}},
            TERMINATE,
        ],
        "end_state": "",
        "executed": [],
    },
]


def watching(url_part: str, out_path: str, interval: float) -> list[dict[str, Any]]:
    """NetGent's QoE pattern: start logging once the player is there, and stay in a
    continuous state for the session."""
    return [
        start_state(f"%base_url%{url_part}"),
        {
            "name": "Watching",
            "description": "On a watch page - log QoE stats for the session",
            "config": {"continuous": True},
            "checks": [
                {
                    "type": "element",
                    "params": {
                        "by": "css selector",
                        "selector": "video",
                        "check_visibility": False,
                        "timeout": 5,
                    },
                }
            ],
            "actions": [
                {
                    "type": "start_stats_logging",
                    "params": {"out_path": out_path, "interval": interval},
                },
                {"type": "wait", "params": {"seconds": 1}},
            ],
            "end_state": "",
            "executed": [],
        },
    ]


VOD_SIZES = {(426, 240), (640, 360), (960, 540)}
"""The local VOD app's renditions (fixtures/vod.py); the live app plays its 360p one."""


def netgent(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(list(args))
    return status, capsys.readouterr().err


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def assert_one_line_per_interval(lines: list[dict[str, Any]], interval: float) -> None:
    """Samples every ``interval`` seconds, within 20%: the gaps and the count."""
    stamps = [line["ts"] for line in lines]
    assert stamps == sorted(stamps)
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert abs(statistics.median(gaps) - interval) <= 0.2 * interval, gaps
    expected = (stamps[-1] - stamps[0]) / interval + 1
    assert abs(len(lines) - expected) <= 0.2 * expected, (len(lines), expected)


# --------------------------------------------------------------------------- netgent -e


def test_netgent_repository_replays_with_netgent_e(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "wiki_result.json", WIKI)
    out = tmp_path / "out" / "result.json"
    out.parent.mkdir()
    variables = json.dumps({"base_url": base_url, "query": "QUIC"})
    status, err = netgent(capsys, "-e", str(repo), "--variables", variables, "-o", str(out))
    assert status == 0, err
    result = json.loads(out.read_text())
    assert result["reached_end"] and result["end_state"] == "Article opened"
    assert result["final_url"] == f"{base_url}/wiki/article/quic"
    assert [e["name"] for e in result["executed"]] == [
        "On Browser Home Page",
        "Search for the query",
        "Results",
        "Article",
    ]
    # The round trip: the repository comes back in NetGent's fields, unchanged.
    assert result["state_repository"] == WIKI


def test_start_page_check_means_what_it_says_once_a_page_has_loaded(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The start state navigates to a wiki page that no other state recognises, then the
    # page goes back to about:blank: the start state must not fire again there.
    repo = [
        start_state("%base_url%/wiki/"),
        {
            "name": "Leave",
            "checks": [{"type": "url", "params": {"url": "%base_url%/wiki/"}}],
            "actions": [{"type": "navigate", "params": {"url": "about:blank"}}],
            "end_state": "",
        },
        {
            "name": "Blank again",
            "checks": [{"type": "url", "params": {"url": "about:blank"}}],
            "actions": [],
            "end_state": "Blank again",
        },
    ]
    path = write(tmp_path / "blank.json", repo)
    status, err = netgent(capsys, "-e", str(path), "--var", f"base_url={base_url}", "-o",
                          str(tmp_path / "r.json"))  # fmt: skip
    assert status == 0, err
    executed = [e["name"] for e in json.loads((tmp_path / "r.json").read_text())["executed"]]
    # about:blank after a real page: only the state that names it holds
    assert executed == ["On Browser Home Page", "Leave", "Blank again"]


def test_vod_stats_log_one_sample_per_interval_at_the_rendition_size(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write(tmp_path / "vod_result.json", watching("/vod/watch/ocean-deep", "vod.jsonl", 0.5))
    out = tmp_path / "out" / "result.json"
    out.parent.mkdir()
    status, err = netgent(
        capsys, "-e", str(repo), "--var", f"base_url={base_url}", "--duration", "6",
        "-o", str(out),
    )  # fmt: skip
    assert status == 0, err
    result = json.loads(out.read_text())
    assert result["reached_end"] and result["end_state"] == "duration 6s reached"
    log = out.parent / "vod.jsonl"  # relative out_path: beside the -o file
    lines = read_log(log)
    assert_one_line_per_interval(lines, 0.5)
    playing = [line for line in lines if line.get("current_time", 0) > 0]
    assert len(playing) >= 5
    assert {(line["width"], line["height"]) for line in playing} <= VOD_SIZES
    assert playing[-1]["current_time"] > playing[0]["current_time"] + 2
    for line in lines:
        assert line["state"] == "Watching"
        assert line["url"] == f"{base_url}/vod/watch/ocean-deep"
        for key in ("ts", "paused", "buffered_ahead", "dropped_frames", "total_frames"):
            assert key in line
    # The continuous state fired again and again, and starting again changed nothing.
    assert sum(1 for e in result["executed"] if e["name"] == "Watching") >= 3


def test_netgents_docker_out_path_is_the_output_folder(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # NetGent's published workflows log to /out/<file>: its Docker image's output folder
    # (-v "$PWD/out:/out"); here that is the run's output folder, the -o file's
    repo = watching("/vod/watch/ocean-deep", "/out/twitch_stats.jsonl", 0.5)
    repo[1]["config"] = {}
    repo[1]["end_state"] = "Action Completed"
    repo[1]["actions"] += [
        {"type": "wait", "params": {"seconds": 2}},
        {"type": "stop_stats_logging", "params": {}},
        TERMINATE,
    ]
    path = write(tmp_path / "twitch_result.json", repo)
    out = tmp_path / "out" / "smoke_result.json"
    out.parent.mkdir()
    status, err = netgent(
        capsys, "-e", str(path), "--var", f"base_url={base_url}", "-o", str(out)
    )  # fmt: skip
    assert status == 0, err
    assert len(read_log(out.parent / "twitch_stats.jsonl")) >= 3
    assert not Path("/out").exists()


def test_live_stats_log_through_the_sdk(tmp_path: Path, base_url: str) -> None:
    repo = watching("/live/channel/news-24", "live.jsonl", 1.0)
    with NetGent(llm=None, llm_enabled=False, config={"duration": 6}) as agent:
        results = agent.run(
            state_prompts=[],
            state_repository={"state_repository": repo},
            variables={"base_url": base_url},
            output_dir=tmp_path,
        )
    assert results.reached_end, results.error and results.error.report()
    lines = read_log(tmp_path / "live.jsonl")
    assert_one_line_per_interval(lines, 1.0)
    playing = [line for line in lines if line.get("current_time", 0) > 0]
    assert playing and {(line["width"], line["height"]) for line in playing} == {(640, 360)}
    assert results.state_repository == repo


@pytest.fixture
def youtube_like(tmp_path: Path) -> Iterator[str]:
    """A page with YouTube's player API (``#movie_player``), served on 127.0.0.1."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "watch.html").write_text(
        """<!doctype html><title>Player</title><div id="movie_player">player</div>
<video id="v" width="320" height="180" muted></video>
<script>
const player = document.getElementById("movie_player");
player.getStatsForNerds = () => ({resolution: "1280x720@30", bandwidth_kbps: "5120 Kbps",
  buffer_health_seconds: "12.34 s", dropped_frames: "0 / 900"});
player.getVideoData = () => ({video_id: "abc123", title: "A title", author: "An author"});
setTimeout(() => document.body.insertAdjacentHTML("beforeend", '<p id="late">late</p>'), 4000);
</script><input type="hidden" id="token" value="t">""",
        encoding="utf-8",
    )

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_youtube_player_api_adds_stats_for_nerds(
    tmp_path: Path, youtube_like: str, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = [
        start_state(f"{youtube_like}/watch.html"),
        {
            "name": "Player",
            "checks": [
                {
                    "type": "element",
                    "params": {
                        "by": "css selector",
                        "selector": "#movie_player",
                        "check_visibility": False,
                        "timeout": 5,
                    },
                },
                # present but never visible: check_visibility false must mean "present"
                {
                    "type": "element",
                    "params": {"by": "id", "selector": "token", "check_visibility": False},
                },
            ],
            "actions": [
                {
                    "type": "start_stats_logging",
                    "params": {"out_path": "yt.jsonl", "interval": 0.3},
                },
                {"type": "wait", "params": {"seconds": 1.2}},
                {"type": "stop_stats_logging", "params": {}},
            ],
            "end_state": "",
        },
        # shows 4 s after the page loads: a check's timeout of 5 s outlasts the state
        # timeout of 1 s
        {
            "name": "Late",
            "checks": [
                {"type": "element", "params": {"by": "id", "selector": "late", "timeout": 5}}
            ],
            "actions": [],
            "end_state": "Logged",
        },
    ]
    path = write(tmp_path / "yt.json", repo)
    status, err = netgent(
        capsys, "-e", str(path), "-o", str(tmp_path / "result.json"), "--state-timeout", "1"
    )
    assert status == 0, err
    lines = read_log(tmp_path / "yt.jsonl")
    assert len(lines) >= 3
    for line in lines:
        assert line["stats_for_nerds"]["resolution"] == "1280x720@30"
        assert line["video_data"] == {
            "video_id": "abc123",
            "title": "A title",
            "author": "An author",
        }
        assert line["width"] == 0 and line["paused"] is True  # a video that never played


@pytest.mark.parametrize("out_path", ["../escape.jsonl", "/tmp/netgent-escape.jsonl"])
def test_stats_out_path_outside_the_output_folder_is_refused(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str], out_path: str
) -> None:
    repo = watching("/vod/watch/ocean-deep", out_path, 0.5)
    repo[1]["end_state"] = "Logged"
    path = write(tmp_path / "run" / "escape.json", repo)
    status, err = netgent(
        capsys, "-e", str(path), "--var", f"base_url={base_url}", "-o",
        str(tmp_path / "run" / "r.json"), "--state-timeout", "3",
    )  # fmt: skip
    assert status == 1
    assert f"start_stats_logging: out_path {out_path!r} leaves the output folder" in err
    assert not (tmp_path / "escape.jsonl").exists()
    assert not Path("/tmp/netgent-escape.jsonl").exists()


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"type": "clik", "params": {}},
            "state 'Results': action 1 (clik): unknown action type 'clik'; did you mean "
            "'click'? (action types: navigate, click, type, press_key, scroll, scroll_to, "
            "hover, move, select, set_value, wait, switch_tab, go_back, start_video_sampling, "
            "stop_video_sampling, start_stats_logging, stop_stats_logging, terminate, "
            "remember_tab, store_current_url, open_stored_url, click_first_text, "
            "click_accessible_name, wait_for_element, wait_for_text, start_webrtc_tracking, "
            "collect_webrtc_metrics, set_env_value, type_env, click_first, click_text_env, "
            "play_video, go_to_url, click_element, input_text, send_keys, scroll_to_text, "
            "select_dropdown_option, ping, iperf, ndt, wget)",
        ),
        (
            {"type": "scroll", "params": {"pixel": 300, "direction": "down"}},
            "state 'Results': action 1 (scroll): scroll action: unknown parameter 'pixel'; "
            "did you mean 'pixels'? (scroll takes direction, amount, times, pixels, down, "
            "num_pages, by, selector, index, alternatives, role, name, within, x, y)",
        ),
        (
            {"type": "start_stats_logging", "params": {"path": "a.jsonl"}},
            "state 'Results': action 1 (start_stats_logging): start_stats_logging action: "
            "unknown parameter 'path'; did you mean 'out_path'? (start_stats_logging takes "
            "out_path, interval)",
        ),
    ],
)
def test_unknown_action_type_or_parameter_names_state_action_and_allowed_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    repo = json.loads(json.dumps(WIKI))
    repo[2]["actions"][0] = change
    status, err = netgent(capsys, "-e", str(write(tmp_path / "bad.json", repo)))
    assert status == 2
    assert message in err


def test_unknown_check_parameter_names_the_allowed_ones() -> None:
    repo = json.loads(json.dumps(WIKI))
    repo[1]["checks"][0]["params"]["check_visiblity"] = True
    with pytest.raises(ValueError, match="did you mean 'check_visibility'"):
        parse_automaton(repo)


def test_every_netgent_parameter_is_read_not_dropped() -> None:
    """Each NetGent check and action parameter survives loading, under its own name."""
    automaton = parse_automaton(WIKI + watching("/vod/", "s.jsonl", 2.0)[1:])
    params = {
        (kind.type, name)
        for state in automaton.states
        for kind in (*state.checks, *state.actions)
        for name in kind.params
    }
    for expected in [
        ("element", "check_visibility"),
        ("element", "timeout"),
        ("scroll", "pixels"),
        ("scroll", "direction"),
        ("move", "x"),
        ("click", "x"),
        ("type", "y"),
        ("terminate", "reason"),
        ("start_stats_logging", "out_path"),
        ("start_stats_logging", "interval"),
    ]:
        assert expected in params
    watching_state = automaton.states[-1]
    assert watching_state.continuous and watching_state.config == {"continuous": True}


def test_continuous_state_without_duration_is_bounded_by_recursion_limit(
    tmp_path: Path, base_url: str
) -> None:
    repo = watching("/vod/", "s.jsonl", 2.0)
    repo[1]["checks"] = [{"type": "element", "params": {"by": "id", "selector": "browse-heading"}}]
    repo[1]["actions"] = [{"type": "wait", "params": {"seconds": 0.1}}]
    with NetGent(config={"recursion_limit": 6}) as agent:
        results = agent.run(state_repository=repo, variables={"base_url": base_url})
    assert results.reached_end
    assert results.end_state == "max_steps (6) reached in a continuous state"
    # with no checks it holds on any page: running out its steps proves nothing, and fails
    repo[1]["checks"] = []
    with NetGent(config={"recursion_limit": 6}) as agent:
        results = agent.run(state_repository=repo, variables={"base_url": base_url})
    assert not results.reached_end
    assert "max_steps (6) reached in continuous state 'Watching', which has no checks" in str(
        results.error
    )


def test_duration_in_a_state_that_is_not_continuous_fails(tmp_path: Path, base_url: str) -> None:
    repo = watching("/vod/", "s.jsonl", 2.0)
    repo[1].pop("config")
    repo[1]["checks"] = [{"type": "element", "params": {"by": "id", "selector": "browse-heading"}}]
    repo[1]["actions"] = []
    with NetGent(config={"duration": 2, "state_timeout": 30}) as agent:
        results = agent.run(state_repository=repo, variables={"base_url": base_url})
    assert not results.reached_end and results.error is not None
    assert "duration 2s reached in state 'Watching', which is not continuous" in str(results.error)


# --------------------------------------------------------------------------- convert


def test_converted_repositories_replay_as_pytest_items_in_parallel(
    pytester: pytest.Pytester, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = pytester.path / "netgent"
    write(folder / "wiki_result.json", WIKI)
    write(folder / "vod_result.json", watching("/vod/watch/ocean-deep", "vod.jsonl", 0.5))
    write(folder / "notes.json", {"not": "a repository"})
    status, err = netgent(capsys, "convert", str(folder), "-o", str(pytester.path))
    assert status == 0, err
    wiki_yaml = pytester.path / "wiki.netgent.yaml"
    text = wiki_yaml.read_text()
    assert "start_url: '%base_url%/wiki/'" in text
    assert "- The browser shows its start page" in text
    assert "end: Article opened" in text
    assert "query: ''" in text
    wiki_yaml.write_text(text.replace("query: ''", "query: QUIC"))
    vod_yaml = (pytester.path / "vod.netgent.yaml").read_text()
    assert "continuous: true" in vod_yaml and "duration: 60" in vod_yaml
    (pytester.path / "vod.netgent.yaml").write_text(vod_yaml.replace("duration: 60", "duration: 4"))
    # The repositories themselves are the trusted cache, byte for byte.
    cached = pytester.path / "__netgent__" / "wiki" / "wiki.json"
    assert cached.read_text() == (folder / "wiki_result.json").read_text()

    result = pytester.runpytest_subprocess(
        *QUIET, f"--netgent-base-url={base_url}", "-n", "2", "-p", "xdist",
        "--netgent-artifacts", "artifacts",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    log = pytester.path / "artifacts"
    logs = list(log.rglob("vod.jsonl"))
    assert len(logs) == 1  # in the item's own artifacts folder
    assert len(read_log(logs[0])) >= 5


def test_convert_refuses_an_empty_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "empty_result.json", [])
    status, err = netgent(capsys, "convert", str(path))
    assert status == 2
    assert f"{path}: the repository is empty ([]): it holds no states or state prompts" in err


# ------------------------------------------------- the shapes of NetGent's published files


def test_two_states_of_one_name_both_replay_and_convert(
    pytester: pytest.Pytester, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """NetGent names a synthesised state after the prompt it served, so a repository may
    hold two 'On Browser Home Page' states (its X example does)."""
    repo = [
        start_state("%base_url%/wiki/"),
        {
            "name": "On Browser Home Page",
            "description": "Start the Process",
            "checks": [{"type": "url", "params": {"url": "%base_url%/wiki/"}}],
            "actions": [{"type": "navigate", "params": {"url": "%base_url%/wiki/article/quic"}}],
            "end_state": "",
            "executed": [],
        },
        WIKI[1],
    ]
    path = write(pytester.path / "twice.json", repo)
    status, err = netgent(capsys, "-e", str(path), "--var", f"base_url={base_url}")
    assert status == 0, err
    assert "end state reached: Article opened" in err

    status, err = netgent(capsys, "convert", str(path))
    assert status == 0, err
    text = (pytester.path / "twice.netgent.yaml").read_text()
    assert "- name: On Browser Home Page (2)" in text
    cached = json.loads((pytester.path / "__netgent__" / "twice" / "twice.json").read_text())
    assert [s["name"] for s in cached] == [
        "On Browser Home Page",
        "On Browser Home Page (2)",
        "Article",
    ]
    result = pytester.runpytest_subprocess(*QUIET, f"--netgent-base-url={base_url}")
    result.assert_outcomes(passed=1)


def test_a_netgent_result_file_replays_with_its_variables(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``netgent -e ... -o`` in NetGent writes its whole run: the repository under
    ``state_repository``, the variables it ran with, and its own bookkeeping."""
    start = start_state("%base_url%/wiki/")
    start["checks"] = [{"type": "url", "params": {"url": "data:,"}}]
    result = {
        "state_repository": [start, *WIKI[1:]],
        "state_prompts": ["## State: START\n- **Triggers:**\n\t1. If on the home screen"],
        "passed_states": [WIKI[1]],
        "recursion_count": 4,
        "last_passed_state_name": "Article",
        "variables": {"base_url": "http://127.0.0.1:9", "query": "QUIC"},
        "executed_states": [],
    }
    path = write(tmp_path / "wiki_result.json", result)
    # base_url given again (the saved one is not this machine's); query comes from the file
    status, err = netgent(capsys, "-e", str(path), "--var", f"base_url={base_url}")
    assert status == 0, err
    assert "end state reached: Article opened" in err


def test_netgents_first_format_of_calls_and_values_replays(
    tmp_path: Path, base_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """NetGent's first examples wrote checks as {type, value} and actions as calls."""
    repo = [
        {
            "name": "Article",
            "description": "An article",
            "checks": [{"type": "text", "value": "QUIC"}, {"type": "url", "value": "%u%"}],
            "actions": ["scroll(direction='down', scroll_amount=20)"],
            "end_state": "Action Completed",
        },
        {
            "name": "On Browser Home Page",
            "description": "Start the Process",
            "checks": [{"type": "url", "value": "chrome://new-tab-page/"}],
            "actions": [
                "navigate_to(url='%u%')",
                "click(by='css selector', selector='h1', button='left', percentage=0.5, "
                "scroll_to=True, fallback_x=581.75, fallback_y=5015.1, fallback_width=47.6, "
                "fallback_height=20.0)",
            ],
            "end_state": "",
        },
    ]
    path = write(tmp_path / "old.json", repo)
    status, err = netgent(
        capsys, "-e", str(path), "--variables", json.dumps({"u": f"{base_url}/wiki/article/quic"})
    )
    assert status == 0, err
    bad = [dict(repo[1], actions=["__import__('os').system('touch pwned')"])]
    status, err = netgent(capsys, "-e", str(write(tmp_path / "bad.json", bad)))
    assert status == 2
    assert "is neither an action object" in err and not Path("pwned").exists()


def test_duration_ending_inside_a_continuous_state_passes(base_url: str) -> None:
    # the duration ends during the first wait: the next action must not be reported as a
    # workflow timeout
    repo = watching("/vod/", "s.jsonl", 2.0)
    repo[1]["checks"] = [{"type": "element", "params": {"by": "id", "selector": "browse-heading"}}]
    repo[1]["actions"] = [
        {"type": "wait", "params": {"seconds": 10}},
        {"type": "wait", "params": {"seconds": 1}},
    ]
    with NetGent(config={"duration": 2}) as agent:
        results = agent.run(state_repository=repo, variables={"base_url": base_url})
    assert results.reached_end, results.error and results.error.report()
    assert results.end_state == "duration 2s reached"
    assert results.timeline[-1].elapsed < 9  # the 10 s wait was cut short
