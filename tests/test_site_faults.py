"""Faults of the site, not of the workflow, are named as what they are and never as UI
drift: a site that is down (also while recording), a server error, a slow page or API, a
script check that never returns, a page that takes the browser to a host not allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .helpers import HUNG, Project, away_workflow, free_port


def one_state(url: str) -> str:
    return f"""
name: faulty
start_url: "{url}"
states:
  - name: Page
    triggers: [The login form is visible]
    end: Seen
"""


def cache_one_state(project: Project, path: Path) -> None:
    project.states(
        path,
        "faulty",
        {"Page": ([{"type": "element", "params": {"by": "id", "selector": "login-form"}}], [])},
    )


def test_recording_against_a_site_that_is_down_says_so(project: Project) -> None:
    """Record mode does not synthesise on the browser's error page: it said "synthesis
    failure ... no element on chrome-error://" and asked for a better synthesiser."""
    url = f"http://127.0.0.1:{free_port()}/"
    # the first page loads, then sends the browser to the site that is down
    start = f"data:text/html,<meta http-equiv=refresh content='0;url={url}'>"
    text = one_state(start).replace("states:", "allowed_hosts: [127.0.0.1]\nstates:")
    project.workflow("faulty", text)
    result = project.run("--netgent-record", "-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "network error in workflow 'faulty' (faulty.netgent.yaml:*)",
            f"  reason: the page did not load: ERR_CONNECTION_REFUSED at {url} (the site is "
            "down or unreachable; no re-recording heals this); no state can be recorded on "
            "a page that did not load",
        ]
    )
    assert "synthesis failure" not in result.stdout.str()
    assert not (project.path / "__netgent__").exists()  # nothing was written


def test_a_server_that_is_down_is_a_network_error_not_ui_drift(project: Project) -> None:
    url = f"http://127.0.0.1:{free_port()}/"
    cache_one_state(project, project.workflow("faulty", one_state(url)))
    result = project.run("-o", "netgent_state_timeout=1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "network error in workflow 'faulty' (faulty.netgent.yaml:*)",
            f"  reason: the page did not load: ERR_CONNECTION_REFUSED at {url} (the site is "
            "down or unreachable; no re-recording heals this); *",
        ]
    )
    assert "heal with" not in result.stdout.str()


def test_a_server_error_status_is_named(project: Project) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Down(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"<h1>maintenance</h1>")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Down)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        cache_one_state(project, project.workflow("faulty", one_state(url)))
        result = project.run("-o", "netgent_state_timeout=1")
    finally:
        server.shutdown()
        server.server_close()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "server error in workflow 'faulty' (faulty.netgent.yaml:*)",
            f"  reason: the server answered 503 for {url} (a fault of the site, not of the "
            "workflow); no state matched the page within 1s*",
        ]
    )


def test_a_script_check_that_never_returns_fails_its_item_only(project: Project) -> None:
    path = project.workflow("hung", HUNG)
    spin = {"type": "script", "params": {"script": "(() => { while (true) {} })()"}}
    project.raw_states(path, "hung", [{"name": "Home", "checks": [spin], "end_state": "Home"}])
    project.workflow("fine", HUNG.replace("hung", "fine"))
    project.raw_states(
        project.path / "fine.netgent.yaml",
        "fine",
        [{"name": "Home", "checks": [{"type": "text", "params": {"text": "Featured"}}],
          "end_state": "Home"}],
    )  # fmt: skip
    result = project.run("-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "script error in workflow 'hung'*",
            "  reason: the page stopped answering while the checks of the candidate states "
            "ran: a script check (of 'Home') never returns; its tab was closed to stop it*",
        ]
    )
    assert "heal with" not in result.stdout.str()


def test_a_page_load_gets_only_what_is_left_of_the_workflow_timeout(
    project: Project, slow_server: str
) -> None:
    project.workflow(
        "slow",
        f"""
        name: slow
        start_url: "{slow_server}/page?seconds=30"
        timeout: 3
        states:
          - name: Page
            triggers: [The page says slow]
            end: Page
        """,
    )
    project.raw_states(
        project.path / "slow.netgent.yaml",
        "slow",
        [{"name": "Page", "checks": [{"type": "text", "params": {"text": "slow"}}],
          "end_state": "Page"}],
    )  # fmt: skip
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*start_url: navigate: */page?seconds=30 did not finish loading within *s (what was "
         "left of the workflow's timeout; raise 'timeout' if it needs longer)*"]
    )  # fmt: skip
    assert float(result.duration) < 20


def test_a_slow_api_is_a_timeout_not_ui_drift(project: Project, slow_server: str) -> None:
    path = project.workflow(
        "items",
        f"""
        name: items
        start_url: "{slow_server}/app?seconds=30"
        states:
          - name: Items
            triggers: [The list shows one]
            end: Items
        """,
    )
    project.raw_states(
        path,
        "items",
        [{"name": "Items", "checks": [{"type": "text", "params": {"text": "one"}}],
          "end_state": "Items"}],
    )  # fmt: skip
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "timeout in workflow 'items'*",
            f"  reason: the page was still waiting for its server: GET {slow_server}/api?"
            "seconds=30 unanswered after *s (a slow server or API, not a UI change; raise "
            "'state_timeout' if the site is this slow); no state matched the page within 3s*",
        ]
    )
    assert "heal with" not in result.stdout.str()


def test_a_page_that_takes_the_browser_elsewhere_is_stopped_before_it_leaves(
    project: Project, slow_site: Any
) -> None:
    elsewhere = away_workflow(project, slow_site.url)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "navigation blocked in workflow 'away'*",
            f"  reason: the page tried to open {elsewhere}, outside allowed_hosts "
            "['127.0.0.1']: it was stopped before any request left; add the host to the "
            "workflow's 'allowed_hosts' if this is expected",
        ]
    )
    assert "/landing" not in slow_site.hits
