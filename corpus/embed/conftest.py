"""The corpus's MkDocs Material site framing the Panel dashboard from another site."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from corpus import serve


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The documentation site on 127.0.0.1; its dashboard page frames the dashboard from
    localhost, another site, so Chromium runs the frame in a process of its own."""
    with serve("panel") as dashboard:
        frame = dashboard.replace("127.0.0.1", "localhost") + "/app"
        with serve("docs-embed", frame=frame) as url:
            yield url
