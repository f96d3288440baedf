"""Warm-up tasks by lag (beyond Kafka 4.2) over HTTP on DynamoDB Local: a stateful task moves
to a new member only once its state there is caught up; until then the new member warms it up
and the old owner keeps it active."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.api import Api
from tests.support.consumer import create_topic, unique
from tests.support.servers import running_service
from tests.support.streams import StreamsMember, counter, describe, offsets, settle

SETTINGS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.acceptable.recovery.lag": "10",
    "group.streams.num.warmup.replicas": "2",
}


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> Iterator[str]:
    with running_service(dynamodb_endpoint, SETTINGS) as base:
        yield base


def test_a_warm_up_that_catches_up_is_promoted(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 4)
    group = unique("g")
    a = StreamsMember(api, group, counter(words, unique("app")))
    a.join()
    assert a.active == {"0": {0, 1, 2, 3}}
    b = StreamsMember(api, group, a.topology)
    b.join()
    settle([a, b])
    # b has no state yet: a keeps every task, b warms up the ones it is meant to take.
    assert a.active == {"0": {0, 1, 2, 3}}
    assert not b.active and len(b.warmup["0"]) == 2
    warming = b.warmup["0"]
    # b reports its restore: still 50 behind, then 5 behind (within the acceptable lag).
    b.heartbeat(taskOffsets=offsets(warming, 50), taskEndOffsets=offsets(warming, 100))
    settle([a, b])
    assert not b.active and b.warmup["0"] == warming
    b.heartbeat(taskOffsets=offsets(warming, 95))  # end offsets unchanged: kept from before
    settle([a, b])
    assert b.active == {"0": warming} and not b.warmup
    assert a.active == {"0": {0, 1, 2, 3} - warming}


def test_describe_shows_each_members_latest_report(api: Api) -> None:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, counter(words, unique("app")))
    b = StreamsMember(api, group, a.topology)
    a.join()
    b.join()
    settle([a, b])
    b.heartbeat(taskOffsets=offsets({1, 0}, 40), taskEndOffsets=offsets({0, 1}, 100))
    b.heartbeat(taskOffsets=offsets({1}, 70))  # end offsets null: the last ones stay
    by_id = {m["memberId"]: m for m in describe(api, group)["members"]}
    assert by_id[b.member_id]["taskOffsets"] == offsets({1}, 70)
    assert by_id[b.member_id]["taskEndOffsets"] == offsets({0, 1}, 100)
    assert by_id[a.member_id]["taskOffsets"] == by_id[a.member_id]["taskEndOffsets"] == []
