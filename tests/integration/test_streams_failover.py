"""Failover to the most caught-up standby (beyond Kafka 4.2) over HTTP on DynamoDB Local: when
a stateful task's active member dies, the previous standby whose reported lag is within
`acceptable.recovery.lag` becomes the new active, not one whose state lags behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.api import Api
from tests.support.consumer import create_topic, unique
from tests.support.servers import running_service
from tests.support.streams import StreamsMember, counter, offsets, settle

SETTINGS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.acceptable.recovery.lag": "10",
    "group.streams.num.standby.replicas": "2",
}


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> Iterator[str]:
    with running_service(dynamodb_endpoint, SETTINGS) as base:
        yield base


def test_the_caught_up_standby_becomes_active_when_the_owner_leaves(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 1)
    group = unique("g")
    owner = StreamsMember(api, group, counter(words, unique("app")))
    owner.join()
    assert owner.active == {"0": {0}}
    b = StreamsMember(api, group, owner.topology)
    c = StreamsMember(api, group, owner.topology)
    b.join()
    c.join()
    settle([owner, b, c])
    assert owner.active == {"0": {0}} and b.standby == c.standby == {"0": {0}}
    # Between equally loaded standbys the assignor picks by member id: the first one lags
    # 1,000 behind, the second 5 (within the acceptable lag of 10).
    lagging, caught_up = sorted([b, c], key=lambda m: m.member_id)
    lagging.heartbeat(taskOffsets=offsets({0}, 0), taskEndOffsets=offsets({0}, 1000))
    caught_up.heartbeat(taskOffsets=offsets({0}, 995), taskEndOffsets=offsets({0}, 1000))
    assert owner.leave()["errorCode"] == 0
    settle([lagging, caught_up])
    assert caught_up.active == {"0": {0}} and not caught_up.warmup
    assert not lagging.active and lagging.standby == {"0": {0}}
