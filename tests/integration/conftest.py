"""Fixtures that several integration modules share (tests/conftest.py has the coordinators')."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.acls import ADMIN
from tests.support.api import Api
from tests.support.classic_client import Consumer
from tests.support.crash_points import normal_deployment
from tests.support.servers import InProcessCoordinator


@pytest.fixture
def consumers() -> Iterator[list[Consumer]]:
    """Classic consumers a test starts; stopped at the end whatever happens."""
    started: list[Consumer] = []
    yield started
    for consumer in started:
        consumer.stop()


@pytest.fixture(scope="module")
def admin(url: str) -> Api:
    """The module's coordinator as its ACL administrator (a module with an authorizer)."""
    return Api(url, principal=ADMIN)


@pytest.fixture(scope="module")
def normal() -> Iterator[InProcessCoordinator]:
    """The crash-point modules' deployment the clients use, on the skewed clock."""
    with normal_deployment() as coordinator:
        yield coordinator
