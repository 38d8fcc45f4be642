"""The corpus's Django admin, served for this folder's workflows."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from corpus import ADMIN_PASSWORD, serve
from fixtures.goals import pytest_netgent_end_reached, pytest_netgent_run_finished  # noqa: F401  (goals.yaml)

os.environ.setdefault("CORPUS_ADMIN_PASSWORD", ADMIN_PASSWORD)


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The admin site's URL on 127.0.0.1."""
    with serve("django-admin") as url:
        yield url
