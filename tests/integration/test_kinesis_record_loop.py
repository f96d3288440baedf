"""KinesisConsumer's record loop against kinesis-local and a coordinator on DynamoDB Local, as a
user runs it: GetRecords about once a second per shard while records flow; a group reset with
`groupcoord offsets reset --to-sequence 0` (or to a record inside a KPL aggregate) reads from
there; a shard taken away is committed on revocation, so its new owner reads none of it again;
the topic's initial position is the consumer's default, and an explicit one overrides it."""

from __future__ import annotations

import threading
import time

import boto3
from aws_kinesis_agg.aggregator import RecordAggregator

from groupcoord.cli import main
from groupcoord.client import GroupMember, TopicPartition
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.client.kinesis_shard import FETCH_INTERVAL_S, StartAt
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.kinesis import (
    FAST_LOOP_SETTINGS,
    REGION,
    Streams,
    deployment_fixture,
    fetched_position,
    new_topic,
    streams_fixture,
)
from tests.support.kinesis_loop import Running, group_name, put

SETTINGS = FAST_LOOP_SETTINGS
deployed = deployment_fixture(SETTINGS)
streams = streams_fixture()


def reset(api: Api, group: str, topic: str, to: str) -> None:
    """`groupcoord offsets reset GROUP --topic T --to-sequence TO`, as an operator runs it."""
    argv = ["offsets", "reset", group, "--topic", topic, "--url", api.base_url]
    assert main([*argv, "--to-sequence", to]) == 0


def test_getrecords_about_once_a_second_per_shard_while_records_flow(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    """The default pace leaves the shard's other 4 calls a second to the stream's other
    readers, records flowing or not (it was 5 a second while they flowed: the whole limit)."""
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    flowing = threading.Event()

    def producer() -> None:
        while not flowing.is_set():
            put(streams, arn, "r")
            time.sleep(0.05)

    putter = threading.Thread(target=producer, daemon=True)
    putter.start()
    running = Running(api, group_name(), topic, kinesis_endpoint)
    try:
        running.until(lambda: running.records, "the first records")
        window_s, before = 6.0, running.get_records
        time.sleep(window_s)
        calls = running.get_records - before
    finally:
        flowing.set()
        putter.join(timeout=10)
        running.close()
    assert 2 <= calls <= window_s + 2, calls  # at 5 a second: about 30


def test_a_group_reset_to_sequence_0_reads_its_shard_from_the_first_record(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    """`--to-sequence 0` stores sequence number 0, which Kinesis refuses as
    AT_SEQUENCE_NUMBER (kinesis-local too): the consumer starts at the trim horizon."""
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn, configs={"groupcoord.kinesis.initial.position": "LATEST"})
    put(streams, arn, "a", "b", "c")
    group = group_name()
    reset(api, group, topic, "0")
    running = Running(api, group, topic, kinesis_endpoint, initial_position="LATEST")
    try:
        running.until(lambda: len(running.data()) >= 3, "the shard's records")
    finally:
        running.close()
    assert running.data() == ["a", "b", "c"]
    assert fetched_position(api, group, topic, 0)["sequenceNumber"] != "0"  # moved on


def test_a_group_reset_inside_a_kpl_aggregate_resumes_after_that_record(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    """An aggregate's records share its sequence number; the checkpoint's sub-sequence
    number says how far into it the group got: the records at or below it are skipped."""
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    put(streams, arn, "plain-0")
    aggregator = RecordAggregator()
    for i in range(5):
        assert aggregator.add_user_record(f"key-{i}", f"agg-{i}".encode()) is None
    key, hash_key, blob = aggregator.clear_and_get().get_contents()
    where = {"ExplicitHashKey": hash_key} if hash_key is not None else {}
    aggregate = streams.client.put_record(StreamARN=arn, PartitionKey=key, Data=blob, **where)[
        "SequenceNumber"
    ]
    (last,) = put(streams, arn, "plain-1")
    group = group_name()
    reset(api, group, topic, f"{aggregate}:2")
    running = Running(api, group, topic, kinesis_endpoint)
    try:
        running.until(lambda: len(running.data()) >= 3, "the records after the checkpoint")
        time.sleep(1.5)  # a GetRecords more: nothing else comes
    finally:
        running.close()  # commits
    assert running.data() == ["agg-3", "agg-4", "plain-1"]
    assert [(r.sequence_number, r.sub_sequence_number) for r in running.records[:2]] == [
        (aggregate, 3),
        (aggregate, 4),
    ]
    assert fetched_position(api, group, topic, 0)["sequenceNumber"] == last


def test_a_revoked_shard_is_committed_so_its_new_owner_reads_none_of_it_again(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    """At least once (no exactly_once), with no interval commit in the test's time: the
    first member's revocation commits what it processed before the shard moves."""
    api, _ = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    hash_keys = [s["HashKeyRange"]["StartingHashKey"] for s in streams.shards(arn)]
    for p, hash_key in enumerate(hash_keys):
        put(streams, arn, *(f"{p}-{i}" for i in range(5)), hash_key=hash_key)
    group = group_name()
    first = Running(api, group, topic, kinesis_endpoint, commit_interval_s=3600.0)
    second = None
    try:
        first.until(lambda: len(first.data()) >= 10, "every record, by the first member")
        second = Running(api, group, topic, kinesis_endpoint, commit_interval_s=3600.0)
        second.until(lambda: len(second.owned()) == 1 and len(first.owned()) == 1, "a shard each")
        (moved,) = second.owned()
        second.until(lambda: second.get_records >= 2, "the new owner's reads")
        assert second.data() == []  # nothing it was handed had been processed already
        position = fetched_position(api, group, topic, moved)
        assert position is not None and position["sequenceNumber"] == next(
            r.sequence_number for r in reversed(first.records) if r.data.startswith(b"%d-" % moved)
        )
        put(streams, arn, "new", hash_key=hash_keys[moved])
        second.until(lambda: second.data() == ["new"], "the new record, by its new owner")
    finally:
        first.close()
        if second is not None:
            second.close()


def test_the_topic_s_initial_position_is_the_default_and_an_explicit_one_overrides_it(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn, configs={"groupcoord.kinesis.initial.position": "LATEST"})
    put(streams, arn, "old")
    explicit = Running(api, group_name(), topic, kinesis_endpoint, initial_position="TRIM_HORIZON")
    try:
        explicit.until(lambda: explicit.data() == ["old"], "the record put before")
    finally:
        explicit.close()
    (entry,) = api.ok("metadata", {"topics": [{"name": topic}]})["topics"]
    assert entry["kinesisInitialPosition"] == {"type": "LATEST", "timestampMs": None}
    time.sleep(1.5)  # "old" before the margin a LATEST start keeps for clocks that disagree
    default = Running(api, group_name(), topic, kinesis_endpoint)
    try:
        assert default.consumer.initial_position == StartAt.parse("LATEST")
        default.until(lambda: default.get_records >= 1, "its first read, from LATEST")
        put(streams, arn, "new")
        default.until(lambda: default.data(), "the record put after")
        time.sleep(1.5)  # a GetRecords more: nothing else comes
    finally:
        default.close()
    assert default.data() == ["new"]


def test_a_latest_group_reads_a_shard_from_its_start_whoever_opens_it(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    """LATEST is where the group started (its creation, as the lineage gating counts it): a
    shard handed over before its first checkpoint is read by its next owner from there, not
    from a later LATEST that would skip what was put since the group started."""
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn, configs={"groupcoord.kinesis.initial.position": "LATEST"})
    put(streams, arn, "before")
    time.sleep(1.5)  # "before" older than the group by more than the clock margin
    group = group_name()
    first = GroupMember(api.base_url, group, topics=[topic])  # holds the shard, reads nothing
    deadline = time.monotonic() + 60
    while not first.poll(0.2):
        assert time.monotonic() < deadline, "the first member got no assignment"
    put(streams, arn, "after")
    later = Running(api, group, topic, kinesis_endpoint)
    try:
        first.close()  # leaves: the shard moves, with no checkpoint in it
        later.until(lambda: later.data(), "the record put after the group started")
        time.sleep(1.5)  # a GetRecords more: nothing else comes
    finally:
        later.close()
    assert later.data() == ["after"]


def test_a_shard_handed_over_is_read_first_in_the_step_that_opens_it(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    """A handoff waits on the shard's new owner: the step that opens it reads it before the
    shards the consumer had (due again too), not after them."""
    api, _ = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    shards = streams.client.list_shards(StreamARN=arn)["Shards"]
    hash_keys = [s["HashKeyRange"]["StartingHashKey"] for s in shards]
    group = group_name()
    leaving = Running(api, group, topic, kinesis_endpoint)
    read: list[int] = []

    def handle(tp: TopicPartition, records: list[KinesisRecord]) -> None:
        read.append(tp.partition)

    kinesis = boto3.client("kinesis", endpoint_url=kinesis_endpoint, region_name=REGION)
    stepped = KinesisConsumer(api.base_url, group, topic, handle, kinesis=kinesis)
    try:
        deadline = time.monotonic() + 60
        while len(stepped.member.assignment()) != 1 or len(leaving.owned()) != 1:
            assert time.monotonic() < deadline, "a shard each"
            stepped.step()
            time.sleep(0.05)
        (kept,) = {tp.partition for tp in stepped.member.assignment()}
        leaving.close()  # commits and leaves: its shard moves to `stepped`
        for hash_key in hash_keys:  # a record on each shard, after the leaver's last read
            put(streams, arn, "r", hash_key=hash_key)
        assert stepped.member.wait_for_work(30), "the leaver's shard assigned"
        time.sleep(FETCH_INTERVAL_S + 0.2)  # the kept shard is due again as well
        read.clear()
        stepped.step()
    finally:
        leaving.close()
        stepped.close()
    assert read == [1 - kept, kept], read
