"""The fixture ladder under ``netgent_browser``: each rung overridden in a conftest.py
changes what the rungs above it get, and the rungs run in their order (the browser
first, then the wire, then the captures, the reset last)."""

from __future__ import annotations

import json

from .helpers import SEARCH_STATES, SEARCH_WORKFLOW, Project, read_rows


def test_a_conftest_gives_the_browser_its_own_launch_options(project: Project) -> None:
    project.pytester.makeconftest(
        """
        import dataclasses
        import pytest

        @pytest.fixture(scope="session")
        def netgent_browser_options(netgent_browser_options):
            return dataclasses.replace(netgent_browser_options, window_size=(700, 500))
        """
    )
    project.pytester.makepyfile(
        test_size="""
        def test_size(netgent_browser):
            size = netgent_browser.driver.execute_script(
                "return [window.outerWidth, window.outerHeight]")
            assert size == [700, 500], size
        """
    )
    result = project.run()
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=1)


def test_the_rungs_run_in_order_and_a_workflow_item_climbs_them(project: Project) -> None:
    """A conftest wraps the capture rung and the web driver rung: a workflow item (no
    Python of its own) gets its browser through them, in their order, and the capture it
    is given is the one its row is written from."""
    project.states(project.workflow("search", SEARCH_WORKFLOW), "search", SEARCH_STATES)
    log = project.path / "rungs.json"
    project.pytester.makeconftest(
        f"""
        import json
        import pytest

        LOG = []

        @pytest.fixture
        def netgent_webdriver(netgent_webdriver):
            LOG.append("webdriver")
            yield netgent_webdriver
            LOG.append("webdriver done")

        @pytest.fixture
        def netgent_capture(netgent_capture):
            LOG.append("capture " + netgent_capture.capture.nodeid)
            netgent_capture.capture.category = "from-the-conftest"
            yield netgent_capture
            LOG.append("capture done")

        @pytest.fixture
        def netgent_browser(netgent_browser):
            LOG.append("browser")
            yield netgent_browser
            LOG.append("browser done " + ", ".join(r.workflow for r in netgent_browser.results))

        def pytest_sessionfinish():
            with open({str(log)!r}, "w") as f:
                f.write(json.dumps(LOG))
        """
    )
    artifacts = project.path / "artifacts"
    result = project.run("--netgent-capture=har", f"--netgent-artifacts={artifacts}")
    assert result.ret == 0, result.stdout.str()[-3000:]
    order = json.loads(log.read_text())
    assert order == [
        "webdriver",
        "capture search.netgent.yaml::search",
        "browser",
        "browser done search",
        "capture done",
        "webdriver done",
    ], order
    (row,) = read_rows(artifacts / "manifest.csv")
    assert row["category"] == "from-the-conftest"
    assert row["workflow"] == "search" and row["har"], row


def test_without_capture_the_capture_rung_gives_none(project: Project) -> None:
    project.pytester.makepyfile(
        test_none="""
        def test_none(netgent_capture, netgent_network, netgent_browser):
            assert netgent_capture is None and netgent_network is None
            assert netgent_browser.network == ""
        """
    )
    result = project.run()
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=1)
