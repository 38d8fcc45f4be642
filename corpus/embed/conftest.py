"""The corpus's MkDocs Material site framing the Panel dashboard from another site."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from corpus import serve
from fixtures.goals import pytest_netgent_end_reached, pytest_netgent_run_finished  # noqa: F401  (goals.yaml)


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The documentation site on 127.0.0.1; its dashboard page frames the dashboard from
    localhost, another site, so Chromium runs the frame in a process of its own."""
    with serve("panel") as dashboard:
        frame = dashboard.replace("127.0.0.1", "localhost") + "/app"
        with serve("docs-embed", frame=frame) as url:
            yield url
