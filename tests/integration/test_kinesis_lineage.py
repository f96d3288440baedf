"""Lineage gating in the consumer protocol, on DynamoDB Local with kinesis-local: a child shard
is assigned only once every parent (a merge's two) is done for the group: its end committed
(at once: the end bumps the group epoch, and preferably to the parent's last owner), expired,
or closed before a LATEST group started; a commit on a shard that is not assignable yet is
refused, retriably (27). An expired shard leaves metadata after the grace period; one that
closed and expired between two syncs is expired all the same."""

from __future__ import annotations

import copy
from base64 import b64decode
from dataclasses import replace

from groupcoord.core.kinesis.shards import Shard
from groupcoord.service.kinesis.sync import Synced, sync_topic
from groupcoord.store.kinesis.streams import Streams as KinesisStreams
from groupcoord.store.store import Store
from groupcoord.wire.consumer_protocol import Assignment, encode_assignment
from tests.support.api import Api
from tests.support.classic_client import ClassicClient, decode_assignment, encode_subscription
from tests.support.consumer import Member, settle, unique
from tests.support.kinesis import (
    Streams,
    deployment_fixture,
    new_topic,
    owned,
    record_of,
    resharded,
    streams_fixture,
)
from tests.support.kinesis import commit_position as commit

GRACE_MS = 600_000
SETTINGS = {
    "groupcoord.kinesis.shard.sync.interval.ms": "60000",
    "group.consumer.assignment.interval.ms": "0",
    "groupcoord.kinesis.expired.shard.grace.ms": str(GRACE_MS),
}
deployed = deployment_fixture(SETTINGS)
streams = streams_fixture()

END = {"shardEnd": True}


def test_children_wait_for_their_parent_then_go_to_its_owner(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    group = unique("g")
    a, b = Member(api, group, topics=[topic]), Member(api, group, topics=[topic])
    a.join()
    b.join()
    settle([a, b])
    assert sorted([owned(a), owned(b)], key=min) == [{0}, {1}]
    parent_owner, other = (a, b) if owned(a) == {0} else (b, a)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    resharded(store, topic)  # partitions 2 and 3: the children of 0
    settle([a, b])
    assert owned(parent_owner) | owned(other) == {0, 1}  # the children wait
    assert commit(api, other, topic, 2, {"sequenceNumber": "1"}) == 27  # not assignable yet
    # The parent's end: its children are assigned at once, to the parent's owner.
    assert commit(api, parent_owner, topic, 0, END) == 0
    settle([a, b])
    assert owned(parent_owner) == {2, 3}
    assert owned(other) == {1}
    assert commit(api, parent_owner, topic, 2, {"sequenceNumber": "1"}) == 0


def test_a_merged_child_waits_for_both_parents(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    member = Member(api, unique("g"), topics=[topic])
    member.join()
    settle([member])
    first, second = (s["ShardId"] for s in streams.shards(arn))
    streams.merge(arn, first, second)
    resharded(store, topic)  # partition 2, child of 0 and 1
    settle([member])
    assert owned(member) == {0, 1}
    assert commit(api, member, topic, 0, END) == 0
    settle([member])
    assert owned(member) == {1}  # 0 is done; 2 still waits for 1
    assert commit(api, member, topic, 1, END) == 0
    settle([member])
    assert owned(member) == {2}


def test_classic_leaders_see_and_keep_only_assignable_shards(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    resharded(store, topic)  # 0 closed, 1 and 2 its children
    group = unique("classic")
    leader = ClassicClient(api.base_url, group, protocols=[("range", encode_subscription([topic]))])
    leader.join()
    assert leader.is_leader

    def visible() -> list[tuple[int, list[str]]]:
        body = {"topics": [{"name": topic}], "groupId": group}
        found = api.ok("metadata", body)["topics"][0]["partitions"]
        return [(p["partitionIndex"], p["kinesisShard"]["parentShardIds"]) for p in found]

    parent = streams.shards(arn)[0]["ShardId"]
    assert visible() == [(0, [])]  # the children wait for 0's end
    # A leader that hands out everything: sync-group keeps only what is assignable.
    everything = encode_assignment(Assignment({topic: [0, 1, 2]}))
    leader.sync({leader.member_id: everything})
    answer = leader.sync_once({leader.member_id: everything}).body
    assert decode_assignment(b64decode(answer["assignment"])) == {(topic, 0)}
    ended = {
        "groupId": group,
        "memberId": leader.member_id,
        "generationIdOrMemberEpoch": leader.generation,
        "topics": [
            {
                "name": topic,
                "partitions": [{"partitionIndex": 0, "committedOffset": 0, "kinesisPosition": END}],
            }
        ],
    }
    assert api.ok("offset-commit", ended)["topics"][0]["partitions"][0]["errorCode"] == 0
    assert visible() == [(1, [parent]), (2, [parent])]
    # The end told the group: it rebalances, and the children can be handed out.
    assert leader.heartbeat() == 27
    leader.join()
    leader.sync({leader.member_id: everything})
    answer = leader.sync_once({leader.member_id: everything}).body
    assert decode_assignment(b64decode(answer["assignment"])) == {(topic, 1), (topic, 2)}


def test_a_latest_group_gets_the_children_of_a_split_before_it_started(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    latest = new_topic(api, arn, configs={"groupcoord.kinesis.initial.position": "LATEST"})
    horizon = new_topic(api, arn)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    resharded(store, latest)  # 0 closed, 1 and 2 its children
    resharded(store, horizon)
    # Created after the split: the open children are where it starts, their parent is done.
    member = Member(api, unique("g"), topics=[latest])
    member.join()
    settle([member])
    assert owned(member) == {1, 2}
    assert commit(api, member, latest, 1, {"sequenceNumber": "1"}) == 0
    # From TRIM_HORIZON the same split waits for the parent's end.
    reader = Member(api, unique("g"), topics=[horizon])
    reader.join()
    settle([reader])
    assert owned(reader) == {0}
    assert commit(api, reader, horizon, 1, {"sequenceNumber": "1"}) == 27


def test_a_classic_member_may_not_commit_on_a_shard_closed_before_its_group_started(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    latest = new_topic(api, arn, configs={"groupcoord.kinesis.initial.position": "LATEST"})
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    resharded(store, latest)  # 0 closed, 1 and 2 its children
    group = unique("classic")
    member = ClassicClient(
        api.base_url, group, protocols=[("range", encode_subscription([latest]))]
    )
    member.join()
    member.sync({member.member_id: encode_assignment(Assignment({latest: [1, 2]}))})

    def commit_classic(partition: int, at: dict[str, object]) -> int:
        entry = {"partitionIndex": partition, "committedOffset": 0, "kinesisPosition": at}
        body = {
            "groupId": group,
            "memberId": member.member_id,
            "generationIdOrMemberEpoch": member.generation,
            "topics": [{"name": latest, "partitions": [entry]}],
        }
        return api.ok("offset-commit", body)["topics"][0]["partitions"][0]["errorCode"]

    # A classic commit is fenced by the generation only: the shard's lineage refuses it. 0 is
    # an ancestor of where the group started, done for it (27, retriable); its children not.
    assert commit_classic(0, {"sequenceNumber": "1"}) == 27
    assert commit_classic(0, END) == 27
    assert commit_classic(1, {"sequenceNumber": "1"}) == 0


def test_an_expired_parent_is_done_and_leaves_metadata_after_the_grace(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    for shard in streams.shards(arn):
        streams.split(arn, shard["ShardId"])
    resharded(store, topic)  # 0 and 1 closed; 2, 3 children of 0; 4, 5 of 1
    record = record_of(store, topic)
    # kinesis-local keeps its shards for a day: the sync's finding (ListShards no longer
    # showing a closed shard, core/kinesis/shards.plan_registry) written as a sync writes it.
    now = store.clock.now_ms()
    parents = store.shards.rows_at(record, [0, 1])  # BatchGetItem: in no particular order
    old, recent = parents[0], parents[1]
    store.shards.write_rows(
        record.topic_id,
        [replace(old, expired_at_ms=now - 2 * GRACE_MS), replace(recent, expired_at_ms=now)],
    )
    member = Member(api, unique("g"), topics=[topic])
    member.join()
    settle([member])
    assert owned(member) == {2, 3, 4, 5}  # from TRIM_HORIZON, yet no parent's end committed
    found = api.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]["partitions"]
    assert [p["partitionIndex"] for p in found] == [1, 2, 3, 4, 5]  # 0 past its grace


class PastRetention(KinesisStreams):
    """kinesis-local's answers as Kinesis gives them once `gone` shards passed the stream's
    retention (kinesis-local keeps its shards for a day): ListShards no longer shows them."""

    def __init__(self, gone: set[str]) -> None:
        super().__init__()
        self.gone = gone

    def list_shards(self, arn: str, max_shards: int) -> list[Shard]:
        return [s for s in super().list_shards(arn, max_shards) if s.shard_id not in self.gone]


def test_a_shard_that_closed_and_expired_between_two_syncs_lets_its_children_go(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    member = Member(api, unique("g"), topics=[topic])
    member.join()
    settle([member])
    assert owned(member) == {0}
    parent = streams.shards(arn)[0]["ShardId"]
    streams.split(arn, parent)
    # No sync saw the parent close before it expired: the next one finds its children only.
    later = copy.copy(store)
    later.kinesis = PastRetention({parent})
    assert sync_topic(later, record_of(store, topic), store.clock.now_ms()) is Synced.CHANGED
    settle([member])
    assert owned(member) == {1, 2}  # no end committed for 0: it expired
    found = api.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]["partitions"]
    assert [(p["partitionIndex"], p["kinesisShard"]["closed"]) for p in found] == [
        (0, True),  # within the grace period, shown closed
        (1, False),
        (2, False),
    ]
    assert commit(api, member, topic, 1, {"sequenceNumber": "1"}) == 0
