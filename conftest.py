"""Root conftest: serves the local applications of fixtures/ for the example suites.

``--site-variant=changed`` serves the changed UI, so that every example workflow can be
shown to fail with a UI-drift report. Every workflow item's final page is checked against
its independent goal (the ``goals.yaml`` of its folder, see fixtures/goals.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fixtures import VARIANTS, serve
from fixtures.goals import pytest_netgent_end_reached, pytest_netgent_run_finished  # noqa: F401  (each goals.yaml)

# The passwords of the local NetWiki's and Chirp's test accounts, which the
# example workflows read as a secret from the environment; a real site's password
# would be exported by the user or the CI job instead.
os.environ.setdefault("NETWIKI_PASSWORD", "netgent-pass")
os.environ.setdefault("CHIRP_PASSWORD", "chirp-pass")  # fixtures/social.py's account


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--site-variant",
        dest="site_variant",
        choices=VARIANTS,
        default="original",
        help="UI variant of the local applications in fixtures/ (default: original).",
    )


@pytest.fixture(scope="session")
def base_url(pytestconfig: pytest.Config) -> Iterator[str]:
    """URL of the local applications, served on 127.0.0.1 for this session."""
    with serve(pytestconfig.getoption("site_variant")) as server:
        yield server.url
