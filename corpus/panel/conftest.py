"""The corpus's Panel dashboard, served for this folder's workflows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from corpus import serve


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The application's URL on 127.0.0.1."""
    with serve("panel") as url:
        yield url
