"""``--netgent-trace``: a trace per item, written from real runs of the example suites
against the local sites in headless Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from pytest_netgent import NetgentBrowser

from .helpers import headless_chromium

ROOT = Path(__file__).resolve().parent.parent
LIKE = "example_suites/wiki/like.netgent.yaml"  # logs in: a secret typed into the page
SEARCH = "example_suites/wiki/search.netgent.yaml"
PASSWORD = "netgent-pass"  # conftest.py's NETWIKI_PASSWORD


def _pytest(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += [f"--netgent-artifacts={tmp / 'artifacts'}", f"--junitxml={tmp / 'junit.xml'}"]
    return subprocess.run(
        [*command, *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


def _trace(path: Path) -> tuple[dict[str, Any], zipfile.ZipFile]:
    archive = zipfile.ZipFile(path)
    return json.loads(archive.read("trace.json")), archive


def test_a_trace_holds_each_tick_action_picture_and_request_and_no_secret(
    tmp_path: Path,
) -> None:
    done = _pytest(tmp_path, LIKE, "--netgent-trace=on", "--netgent-capture=har")
    assert done.returncode == 0, done.stdout[-3000:]
    (path,) = (tmp_path / "artifacts").glob("*/trace.zip")
    document, archive = _trace(path)
    with archive:
        assert document["format"] == "netgent-trace" and document["outcome"] == "passed"
        (run,) = document["runs"]
        assert run["path"] == ["Login form", "Account page", "Results", "Article to like", "Liked"]
        assert [s["name"] for s in run["states"]][:1] == ["Login form"]
        kinds = [e["kind"] for e in run["events"]]
        assert kinds[0] == "start" and kinds[-1] == "end" and "tick" in kinds
        actions = [e for e in run["events"] if e["kind"] == "action"]
        declared = {s["name"]: len(s["actions"]) for s in run["states"]}
        assert len(actions) == 1 + sum(declared[name] for name in run["path"])  # + start page
        assert len(actions) == 8
        assert all("after_snapshot" in a for a in actions)
        ticks = [e for e in run["events"] if e["kind"] == "tick"]
        assert any(c["matched"] and all(ok for ok, _ in c["results"]) for c in ticks[0]["checks"])
        frames = [n for n in archive.namelist() if n.startswith("frames/")]
        assert frames and all(archive.read(n)[:2] == b"\xff\xd8" for n in frames)  # JPEG
        assert all(archive.getinfo(n).file_size < 200_000 for n in frames)
        assert any(r["url"].endswith("/wiki/login") for r in run["network"])  # from the HAR
        assert any("favicon.ico" in m["text"] and m["level"] == "severe" for m in run["console"])
        everything = b"".join(archive.read(n) for n in archive.namelist())
        for form in (PASSWORD, quote(PASSWORD), json.dumps(PASSWORD)[1:-1]):
            assert form.encode() not in everything
        assert b"{password}" in archive.read("trace.json")  # the typed value, by its name
    junit = (tmp_path / "junit.xml").read_text()
    assert f'name="netgent_trace" value="{path}"' in junit


def test_retain_on_failure_keeps_the_trace_of_a_drifted_item_only(tmp_path: Path) -> None:
    done = _pytest(
        tmp_path,
        SEARCH,
        "-k",
        "networking",
        "--netgent-trace=retain-on-failure",
        "--site-variant=changed",
        "--netgent-state-timeout=2",
    )
    assert done.returncode == 1, done.stdout[-3000:]
    (path,) = (tmp_path / "artifacts").glob("*/trace.zip")
    assert f"netgent show-trace {path}" in done.stdout
    document, archive = _trace(path)
    archive.close()
    (run,) = document["runs"]
    assert document["outcome"] == "failed" and not run["passed"] and run["error"]
    assert run["events"][-1]["kind"] == "failure"
    ticks = [e for e in run["events"] if e["kind"] == "tick"]
    assert any(not ok for c in ticks[-1]["checks"] for ok, _ in c["results"])  # what failed
    _the_viewer_shows(path, run)
    passing = _pytest(
        tmp_path / "pass", SEARCH, "-k", "networking", "--netgent-trace=retain-on-failure"
    )
    assert passing.returncode == 0, passing.stdout[-3000:]
    assert not list((tmp_path / "pass" / "artifacts").glob("*/trace.zip"))


def test_no_trace_by_default_and_a_bad_ini_value_names_the_key(tmp_path: Path) -> None:
    done = _pytest(tmp_path, SEARCH, "-k", "networking")
    assert done.returncode == 0, done.stdout[-3000:]
    assert not list((tmp_path / "artifacts").glob("*/trace.zip"))
    netgent = str(Path(sys.executable).parent / "netgent")
    shown = subprocess.run(
        [netgent, "show-trace", str(tmp_path / "none.zip")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 2 and "netgent show-trace:" in shown.stderr
    assert "none.zip" in shown.stderr
    bad = _pytest(tmp_path, SEARCH, "-o", "netgent_trace=always", "--co")
    assert bad.returncode == pytest.ExitCode.USAGE_ERROR
    assert "ini netgent_trace = always: expected off, on or retain-on-failure" in bad.stderr


def _the_viewer_shows(path: Path, run: dict[str, Any]) -> None:
    """``netgent show-trace`` of a real failed item, opened in headless Chromium: its
    actions in the timeline, the failure selected, its failed checks in red."""
    from selenium.webdriver.support.ui import WebDriverWait

    from pytest_netgent.studio.viewer import serve

    with headless_chromium() as driver, serve(path) as server:
        driver.get(server.url)
        count = "return document.querySelectorAll('#events li.event.action').length"
        actions = sum(e["kind"] == "action" for e in run["events"])
        WebDriverWait(driver, 10).until(lambda d: d.execute_script(count) == actions)
        assert driver.execute_script(
            "return document.querySelector('#events li.selected').classList.contains('failed')"
        )
        assert driver.execute_script("return document.querySelectorAll('#checks tr.failed').length")
        states = driver.execute_script("return document.querySelectorAll('#graph .node').length")
        assert states == len(run["states"])


def test_a_snapshot_of_a_page_of_web_components_holds_their_shadow_roots(
    tmp_path: Path,
) -> None:
    """The dashboard renders every control in shadow roots up to four deep, the search
    box in a closed one: its snapshots write them as declarative shadow roots."""
    done = _pytest(
        tmp_path, "example_suites/components/dashboard.netgent.yaml", "--netgent-trace=on"
    )
    assert done.returncode == 0, done.stdout[-3000:]
    (path,) = (tmp_path / "artifacts").glob("*/trace.zip")
    with zipfile.ZipFile(path) as archive:
        snapshots = [
            archive.read(n).decode() for n in archive.namelist() if n.startswith("snapshots/")
        ]
    typed = [s for s in snapshots if 'shadowrootmode="closed"' in s]
    assert typed and all('shadowrootmode="open"' in s for s in typed)
    assert any("Lisbon" in s for s in snapshots)  # the results, rendered in shadow roots


def test_a_snapshot_holds_a_closed_root_the_html_declares(
    netgent_browser: NetgentBrowser, base_url: str
) -> None:
    """No script attached the coupon form's closed root (the parser did): the snapshot
    has it handed over through DevTools, and writes it as it writes the others."""
    from pytest_netgent.browser.chain import Chain
    from pytest_netgent.replay.trace import _snapshot

    driver = netgent_browser.driver
    driver.get(base_url + "/components/declared")
    html = _snapshot(driver, Chain(driver))
    assert '<template shadowrootmode="closed">' in html and "Promo code" in html, html


def test_a_snapshot_shows_what_each_frame_showed(tmp_path: Path) -> None:
    """A form three frames deep (each frame of the page's own site), and a widget framed
    from another site (Chromium runs it in a process of its own): the snapshot writes
    each frame's page into its ``srcdoc``, so the viewer shows the form where the page
    had it."""
    from pytest_netgent.studio.viewer import serve

    suite = "example_suites/components/frames.netgent.yaml"
    done = _pytest(tmp_path, suite, "--netgent-trace=on")
    assert done.returncode == 0, done.stdout[-3000:]
    paths = {p.parent.name: p for p in (tmp_path / "artifacts").glob("*/trace.zip")}
    (deep,) = [p for name, p in paths.items() if "deep-frame-note" in name]
    (widget,) = [p for name, p in paths.items() if "widget-note" in name]
    with zipfile.ZipFile(deep) as archive:
        names = [n for n in archive.namelist() if n.startswith("snapshots/")]
        framed = [n for n in names if "Level 3" in archive.read(n).decode()]
    assert framed, "no snapshot holds the innermost frame's page"
    with zipfile.ZipFile(widget) as archive:
        snapshots = [archive.read(n).decode() for n in archive.namelist() if "snapshots/" in n]
    assert any("Widget ready" in s and "srcdoc" in s for s in snapshots)
    assert not any("data-netgent-frame" in s for s in snapshots)  # no marker left behind
    with headless_chromium() as driver, serve(deep) as server:
        driver.get(server.url + "files/" + framed[0])
        for depth, frame in enumerate(("outer", "level1", "level2")):
            if depth:
                assert driver.find_element("css selector", "p").text == f"Level {depth}"
            driver.switch_to.frame(driver.find_element("id", frame))
        assert driver.find_element("css selector", "p").text == "Level 3"
        assert driver.find_element("id", "message").tag_name == "input"  # the form itself
