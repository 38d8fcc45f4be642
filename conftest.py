"""Root conftest: serves the local applications of fixtures/ for the example suites.

``--site-variant=changed`` serves the changed UI, so that every example workflow can be
shown to fail with a UI-drift report.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures import VARIANTS, serve


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
