"""The corpus's Wagtail site, served for this folder's workflows."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from corpus import serve
from corpus.launchers.wagtail_site import EDITOR_PASSWORD
from fixtures.goals import pytest_netgent_end_reached, pytest_netgent_run_finished  # noqa: F401  (goals.yaml)


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The application's URL on 127.0.0.1; the editor's password in the environment
    variable this folder's workflows read it from (their ``secrets:``)."""
    os.environ.setdefault("WAGTAIL_EDITOR_PASSWORD", EDITOR_PASSWORD)
    with serve("wagtail") as url:
        yield url
