"""Shared fixtures of the test suite: local sites and pytester projects."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures import serve

from .helpers import Project

pytest_plugins = ["pytester"]


@pytest.fixture(scope="session")
def changed_url() -> Iterator[str]:
    """URL of the local applications in their changed-UI variant."""
    with serve("changed") as server:
        yield server.url


@pytest.fixture
def project(pytester: pytest.Pytester, base_url: str) -> Project:
    """An empty workflow project against the original local sites."""
    pytester.makeini("[pytest]\nnetgent_state_timeout = 3\n")
    return Project(pytester, base_url)
