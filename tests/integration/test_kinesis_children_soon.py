"""A parent's end starts its children at once even right after an install: target installs
are batched in time (`group.consumer.assignment.interval.ms`, here a minute so that any wait
would show), but a topic change (a shard end, a new shard, a topic created or grown) is rare
and its group installs at the heartbeat that takes it in. Without that, a reshard that lands
within the interval of a rebalance left the children idle for a whole heartbeat interval."""

from __future__ import annotations

from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.consumer import Member, settle, unique
from tests.support.kinesis import (
    Streams,
    deployment_fixture,
    new_topic,
    owned,
    resharded,
    streams_fixture,
)
from tests.support.kinesis import commit_position as commit

SETTINGS = {
    "groupcoord.kinesis.shard.sync.interval.ms": "60000",
    "group.consumer.assignment.interval.ms": "60000",
}
deployed = deployment_fixture(SETTINGS)
streams = streams_fixture()


def test_the_heartbeat_after_a_parent_s_end_brings_its_children(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    member = Member(api, unique("g"), topics=[topic])
    member.join()  # the group's first target: installed at once, and the interval starts
    settle([member])
    assert owned(member) == {0}
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    resharded(store, topic)  # partitions 1 and 2, the children, not assignable yet
    member.heartbeat()
    assert owned(member) == {0}
    assert commit(api, member, topic, 0, {"shardEnd": True}) == 0
    member.heartbeat()  # well inside the minute: the new target, the parent revoked first
    assert owned(member) == set()
    member.heartbeat()  # the revocation acknowledged (as the client does at once)
    assert owned(member) == {1, 2}
