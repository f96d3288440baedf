"""Kinesis-backed topics against kinesis-local, on DynamoDB Local: create-topics binds a
stream, partitions follow its splits and merges in lineage order with indexes never moved or
reused, metadata shows each partition's shard and the topic's initial position, the sweeper
and a join (a consumer group's, a classic leader's) sync the shards, a sync is single-flight,
and a stream re-created under the same name is refused."""

from __future__ import annotations

import time
from typing import Any

from groupcoord.core.kinesis.shards import ShardRow
from groupcoord.service.kinesis.sync import Synced, sync_stale
from groupcoord.store import schema
from groupcoord.store.dynamo import Update
from groupcoord.store.store import Store
from groupcoord.wire.consumer_protocol import Assignment, encode_assignment
from tests.support.api import Api
from tests.support.classic_client import ClassicClient, encode_subscription
from tests.support.consumer import Member, settle, unique
from tests.support.kinesis import (
    Streams,
    deployment_fixture,
    kinesis_topic,
    record_of,
    streams_fixture,
    synced,
    topic_name,
)
from tests.support.streams import StreamsMember, word_count

# Long enough that no scheduled sync runs during a test unless the test makes it due.
SYNC_MS = 60_000
SETTINGS = {
    "groupcoord.kinesis.shard.sync.interval.ms": str(SYNC_MS),
    "group.streams.initial.rebalance.delay.ms": "0",
}
deployed = deployment_fixture(SETTINGS)
streams = streams_fixture()
create = kinesis_topic


def partitions(api: Api, name: str) -> list[dict[str, Any]]:
    topic = api.ok("metadata", {"topics": [{"name": name}]})["topics"][0]
    assert topic["errorCode"] == 0, topic
    return topic["partitions"]


def shards_of(api: Api, name: str) -> list[tuple[str, list[str], bool]]:
    return [
        (
            p["kinesisShard"]["shardId"],
            p["kinesisShard"]["parentShardIds"],
            p["kinesisShard"]["closed"],
        )
        for p in partitions(api, name)
    ]


def age(store: Store, name: str, attribute: str, to_ms: int) -> None:
    """Set a topic item's time attribute (its scheduled sync's due time, its last sync)."""
    names = {"#at": attribute}
    update = Update(schema.topic_key(name), "SET #at = :to", names=names, values={":to": to_ms})
    store.dynamo.update(update)


def test_create_binds_the_stream_and_metadata_shows_its_shards(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(2)
    name = topic_name()
    created = create(api, name, arn, configs={"groupcoord.kinesis.initial.position": "LATEST"})
    assert created["errorCode"] == 0, created
    assert created["numPartitions"] == 2
    listed = streams.shards(arn)
    topic = api.ok("metadata", {"topics": [{"name": name}]})["topics"][0]
    assert topic["kinesisStreamArn"] == arn
    assert [p["partitionIndex"] for p in topic["partitions"]] == [0, 1]
    for partition, shard in zip(topic["partitions"], listed, strict=True):
        assert partition["kinesisShard"] == {
            "shardId": shard["ShardId"],
            "parentShardIds": [],
            "hashKeyRange": {
                "startingHashKey": shard["HashKeyRange"]["StartingHashKey"],
                "endingHashKey": shard["HashKeyRange"]["EndingHashKey"],
            },
            "startingSequenceNumber": shard["SequenceNumberRange"]["StartingSequenceNumber"],
            "closed": False,
        }
    record = record_of(store, name)
    assert record.kinesis is not None
    assert record.kinesis.initial_position.encode() == "LATEST"
    summary = streams.client.describe_stream_summary(StreamARN=arn)["StreamDescriptionSummary"]
    assert record.kinesis.stream_created_ms == int(
        summary["StreamCreationTimestamp"].timestamp() * 1000
    )
    # Another topic's partitions carry no shard.
    plain = topic_name()
    api.ok("create-topics", {"topics": [{"name": plain, "numPartitions": 1}]})
    assert partitions(api, plain)[0]["kinesisShard"] is None


def test_metadata_tells_where_a_group_without_a_checkpoint_starts(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, _ = deployed
    arn = streams.create(1)

    def initial(configs: dict[str, str]) -> Any:
        name = topic_name()
        assert create(api, name, arn, configs=configs)["errorCode"] == 0
        found = api.ok("metadata", {"topics": [{"name": name}]})["topics"][0]
        return found["kinesisInitialPosition"]

    position = "groupcoord.kinesis.initial.position"
    assert initial({}) == {"type": "TRIM_HORIZON", "timestampMs": None}  # the default
    assert initial({position: "LATEST"}) == {"type": "LATEST", "timestampMs": None}
    at = {position: "AT_TIMESTAMP:1700000000123"}
    assert initial(at) == {"type": "AT_TIMESTAMP", "timestampMs": 1700000000123}
    plain = topic_name()
    api.ok("create-topics", {"topics": [{"name": plain, "numPartitions": 1}]})
    found = api.ok("metadata", {"topics": [{"name": plain}]})["topics"][0]
    assert found["kinesisInitialPosition"] is None


def test_asked_with_a_group_latest_tells_where_that_group_started(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    """LATEST means the group's start (its creation, as the lineage gating counts it): asked
    with the group's id, metadata tells that moment, so every member that opens a shard
    without a checkpoint reads from the same place."""
    api, store = deployed
    name = topic_name()
    configs = {"groupcoord.kinesis.initial.position": "LATEST"}
    assert create(api, name, streams.create(1), configs=configs)["errorCode"] == 0
    group = unique("g")

    def position() -> Any:
        body = {"topics": [{"name": name}], "groupId": group}
        return api.ok("metadata", body)["topics"][0]["kinesisInitialPosition"]

    assert position() == {"type": "LATEST", "timestampMs": None}  # no such group yet
    before = int(time.time() * 1000)
    Member(api, group, topics=[name]).join()
    created = store.conversions.read_group_item(group, consistent=True)["createdAt"]
    assert before - 5000 <= created <= int(time.time() * 1000) + 5000
    assert position() == {"type": "LATEST", "timestampMs": created}


def test_split_and_merge_append_partitions_in_lineage_order(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(2)
    name = topic_name()
    create(api, name, arn)
    first, second = (s["ShardId"] for s in streams.shards(arn))
    streams.split(arn, first)
    assert synced(store, name) is Synced.CHANGED
    children = [s["ShardId"] for s in streams.shards(arn)[2:]]
    assert shards_of(api, name) == [
        (first, [], True),
        (second, [], False),
        (children[0], [first], False),
        (children[1], [first], False),
    ]
    streams.merge(arn, children[0], children[1])
    assert synced(store, name) is Synced.CHANGED
    merged = streams.shards(arn)[-1]["ShardId"]
    assert shards_of(api, name) == [
        (first, [], True),
        (second, [], False),
        (children[0], [first], True),
        (children[1], [first], True),
        (merged, [children[0], children[1]], False),
    ]
    # Nothing new: nothing written, and the indexes stay.
    assert synced(store, name) is Synced.UNCHANGED
    assert [s[0] for s in shards_of(api, name)] == [first, second, *children, merged]


def test_the_sweeper_syncs_when_the_schedule_is_due(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    name = topic_name()
    create(api, name, arn)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    time.sleep(1.5)  # a sweep or more (one a second): the sync is not due yet
    assert len(partitions(api, name)) == 1
    age(store, name, schema.DEADLINE, store.clock.now_ms() - 1)
    deadline = time.monotonic() + 20  # generous for a loaded CI
    while len(partitions(api, name)) < 3:
        assert time.monotonic() < deadline, "the sweeper did not sync the shards"
        time.sleep(0.1)
    assert [closed for _, _, closed in shards_of(api, name)] == [True, False, False]
    # The next sync is scheduled an interval on.
    item = store.dynamo.get(schema.topic_key(name), consistent=True)
    assert item is not None
    assert item[schema.DEADLINE] == item["shardSyncAt"] + SYNC_MS


def test_a_sync_is_single_flight_per_topic(deployed: tuple[Api, Store], streams: Streams) -> None:
    api, store = deployed
    arn = streams.create(1)
    name = topic_name()
    create(api, name, arn)
    now = store.clock.now_ms()
    token = store.shards.take_lease(record_of(store, name), now, 60_000)
    assert token is not None
    assert store.shards.take_lease(record_of(store, name), now, 60_000) is None
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    assert synced(store, name, now) is Synced.BUSY
    assert len(partitions(api, name)) == 1
    # A lease that ran out is taken over; one released is free at once.
    assert synced(store, name, now + 60_001) is Synced.CHANGED
    assert len(partitions(api, name)) == 3
    store.shards.release(record_of(store, name), "not-the-holder")  # no effect, no error


def test_a_re_created_stream_is_refused_not_mixed(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(2)
    name = topic_name()
    create(api, name, arn)
    before = shards_of(api, name)
    stream = arn.rsplit("/", 1)[1]
    streams.delete(stream)
    assert streams.create(3, stream) == arn  # the same ARN, another stream
    assert synced(store, name) is Synced.RECREATED
    assert shards_of(api, name) == before


def test_a_join_syncs_a_stale_topic(deployed: tuple[Api, Store], streams: Streams) -> None:
    api, store = deployed
    arn = streams.create(1)
    name = topic_name()
    create(api, name, arn)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    record = record_of(store, name)
    # Fresh: left alone.
    assert not sync_stale(store, [record], record.shard_sync_at_ms + SYNC_MS - 1)
    assert len(partitions(api, name)) == 1
    # Older than the interval: a consumer group's join (its target install) syncs it.
    age(store, name, "shardSyncAt", store.clock.now_ms() - SYNC_MS)
    member = Member(api, unique("g"), topics=[name])
    assert member.join()["errorCode"] == 0
    settle([member])
    assert len(partitions(api, name)) == 3
    # The parent, not yet its children (test_kinesis_lineage.py).
    assert [sorted(p) for p in member.owned.values()] == [[0]]


def test_a_classic_leaders_join_syncs_a_stale_topic(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed

    def bound() -> tuple[str, str]:
        arn = streams.create(1)
        name = topic_name()
        create(api, name, arn)
        return name, arn

    def split_unseen(name: str, arn: str) -> None:
        """The stream splits after the topic's last sync, which is older than the interval."""
        streams.split(arn, streams.shards(arn)[0]["ShardId"])
        age(store, name, "shardSyncAt", store.clock.now_ms() - SYNC_MS)
        assert len(partitions(api, name)) == 1

    def leader_of(topic: str) -> ClassicClient:
        subscription = [("range", encode_subscription([topic]))]
        return ClassicClient(api.base_url, unique("classic"), protocols=subscription)

    def leaders_view(leader: ClassicClient, topic: str) -> list[tuple[int, bool]]:
        body = {"topics": [{"name": topic}], "groupId": leader.group_id}
        found = api.ok("metadata", body)["topics"][0]["partitions"]
        return [(p["partitionIndex"], p["kinesisShard"]["closed"]) for p in found]

    # A new group's first join.
    name, arn = bound()
    split_unseen(name, arn)
    first = leader_of(name)
    first.join()
    assert first.is_leader
    assert len(partitions(api, name)) == 3
    assert leaders_view(first, name) == [(0, True)]  # closed; its children wait for its end
    # A stable group's leader rejoining (a rebalance): synced before its barrier closes, so
    # the sync's topic change is taken into this rebalance, not a second one.
    name, arn = bound()
    leader = leader_of(name)
    leader.join()
    assignment = {leader.member_id: encode_assignment(Assignment({name: [0]}))}
    leader.sync(assignment)
    assert leader.heartbeat() == 0
    split_unseen(name, arn)
    generation = leader.generation
    leader.join()
    assert leader.is_leader and leader.generation == generation + 1
    assert len(partitions(api, name)) == 3
    assert leaders_view(leader, name) == [(0, True)]
    leader.sync(assignment)
    assert leader.heartbeat() == 0


def test_refusals(deployed: tuple[Api, Store], streams: Streams) -> None:
    api, store = deployed
    arn = streams.create(1)

    def error_of(**extra: Any) -> int:
        name = topic_name()
        found = create(api, name, extra.pop("arn", arn), **extra)
        assert store.topics.get(name) is None
        return found["errorCode"]

    assert error_of(numPartitions=3) == 37  # the shards decide
    assert error_of(arn="orders") == 40
    assert error_of(arn=arn.replace(arn.rsplit("/", 1)[1], "no-such-stream")) == 40
    assert error_of(configs={"groupcoord.kinesis.retention": "1"}) == 40
    assert error_of(configs={"groupcoord.kinesis.initial.position": "EARLIEST"}) == 40
    name = topic_name()
    checked = api.ok(
        "create-topics",
        {
            "topics": [
                {"name": name, "configs": [{"name": "groupcoord.kinesis.stream.arn", "value": arn}]}
            ],
            "validateOnly": True,
        },
    )["topics"][0]
    assert (checked["errorCode"], checked["numPartitions"]) == (0, 1)
    assert store.topics.get(name) is None
    create(api, name, arn)
    grown = api.ok("create-partitions", {"topics": [{"name": name, "count": 5}]})
    assert grown["results"][0]["errorCode"] == 42


def test_a_deleted_topic_takes_its_rows_and_a_new_one_starts_afresh(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    name = topic_name()
    create(api, name, arn)
    old = record_of(store, name)
    assert api.ok("delete-topics", {"topics": [{"name": name}]})["responses"][0]["errorCode"] == 0
    assert store.shards.rows(old) == []
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    assert create(api, name, arn)["numPartitions"] == 3
    rows = store.shards.rows(record_of(store, name))
    assert [row.index for row in rows] == [0, 1, 2]
    assert all(isinstance(row, ShardRow) for row in rows)


def test_a_streams_group_does_not_read_a_kinesis_backed_topic(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    """Tasks have no lineage, so a shard's children would be processed beside their parent:
    the group stays NotReady (status 1) and says why, and a regex source skips the topic."""
    api, _ = deployed
    topic = unique("kstreams")
    kinesis_topic(api, topic, streams.create(1))
    member = StreamsMember(api, unique("g"), word_count(topic, unique("app")))
    answer = member.join()
    assert answer["errorCode"] == 0, answer
    ((code, detail),) = [(s["statusCode"], s["statusDetail"]) for s in answer["status"]]
    assert code == 1 and f"Source topics {topic} are backed by Kinesis streams" in detail
    assert not member.active
    by_regex = {"epoch": 1, "subtopologies": [
        {"subtopologyId": "0", "sourceTopicRegex": [f"{topic}.*"]}
    ]}  # fmt: skip
    regex_member = StreamsMember(api, unique("g"), by_regex)
    (status,) = regex_member.join()["status"]
    assert status["statusCode"] == 1 and "No topic matches" in status["statusDetail"]
