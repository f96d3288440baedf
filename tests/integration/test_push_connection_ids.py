"""A notice reaches its member's socket whatever the connection's id (docs/sessions.md, "Push").

API Gateway's connection ids are standard base64 ("L0SM9cOFvHcCIhw="), and so are the ones
`serve`'s push channel gives: `/`, `+` and `=` included, even first or last. The store posts to
`@connections/<id>` (the id percent-encoded), and the loopback endpoint must read back exactly
that id: a connection it did not find answers Gone, its item is deleted, and its member hears
of no change until it reconnects. The ids here are chosen (the channel's `connection_ids`);
the coordinator runs in this process on the in-memory adapter, the socket and the post are real.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.api import Api
from tests.support.consumer import Member, create_topic, settle, unique
from tests.support.push_sockets import member_socket, told
from tests.support.servers import IMMEDIATE_INSTALLS, InProcessCoordinator

SETTINGS = {**IMMEDIATE_INSTALLS, "group.consumer.heartbeat.interval.ms": "15000"}


@pytest.fixture(scope="module")
def coordinator() -> Iterator[InProcessCoordinator]:
    coordinator = InProcessCoordinator(SETTINGS, push=True)
    try:
        yield coordinator
    finally:
        coordinator.stop()


@pytest.mark.parametrize(
    "connection_id",
    [
        "/YyWJRS7I/jNR9Pw",  # a `/` first: seen lost in the side-by-side runs
        "ogPMexTqftsdP6o/",  # a `/` last
        "Dn//b+0Wx+5YwOa=",  # `/`, `+` and `=` inside
    ],
)
def test_a_notice_reaches_a_connection_whatever_its_id(
    coordinator: InProcessCoordinator, connection_id: str
) -> None:
    channel = coordinator.coordinator.push
    assert channel is not None
    channel.connection_ids = lambda: connection_id
    api = Api(coordinator.url)
    topic, group = unique("push-topic"), unique("push-group")
    create_topic(api, topic, 2)
    first = Member(api, group, topics=[topic])
    first.join()
    settle([first])
    with member_socket(api, group, first.member_id) as socket:
        Member(api, group, topics=[topic]).join()  # the first member's target loses a partition
        told(socket, group)
