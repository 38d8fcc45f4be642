"""The corpus's live HLS channel played by Plyr, served for this folder's workflows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from corpus import serve
from fixtures.goals import pytest_netgent_end_reached, pytest_netgent_run_finished  # noqa: F401  (goals.yaml)


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The application's URL on 127.0.0.1."""
    with serve("plyr-live") as url:
        yield url
