"""groupcoord.client.kinesis against kinesis-local and a coordinator on DynamoDB Local: a
consumer reads a stream while it is split and merged, and every record is processed once, in
order per partition key across parents and children; its checkpoints are the group's. A
classic group's leader spreads only the shards the group may read."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from groupcoord.client import TopicPartition
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.store.store import Store
from tests.e2e.helpers import CONVERGE_S, no_errors, settled, start_member, wait_until
from tests.support.api import Api
from tests.support.kinesis import (
    FAST_LOOP_SETTINGS,
    Streams,
    deployment_fixture,
    new_topic,
    resharded,
    streams_fixture,
)

SETTINGS = FAST_LOOP_SETTINGS
KEYS = [f"key-{i}" for i in range(8)]


deployed = deployment_fixture(SETTINGS)
streams = streams_fixture()


def put(streams: Streams, arn: str, round_: int) -> list[tuple[str, str]]:
    sent = []
    for i in range(3):
        for key in KEYS:
            data = f"{round_}-{i}-{key}"
            streams.client.put_record(StreamARN=arn, PartitionKey=key, Data=data.encode())
            sent.append((key, data))
    return sent


def until(condition: Any, failures: list[BaseException], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert not failures, failures
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def lags_shown(api: Api, group_id: str) -> bool:
    """Whether describe-group-activity shows a lag on every partition the group owns."""
    body = {"groupIds": [group_id], "includeMembers": True}
    (group,) = api.ok("describe-group-activity", body)["groups"]
    owned = [p for p in group["partitions"] if p.get("owner")]
    return bool(owned) and all(isinstance(p.get("lagMs"), int) for p in owned)


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_every_record_once_in_key_order_through_a_split_and_a_merge(
    deployed: tuple[Api, Store], streams: Streams, protocol: str
) -> None:
    """Both protocols: the consumer protocol's assignor and the classic leader (from metadata
    asked with its groupId) hand out only the shards the group may read."""
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def handle(tp: TopicPartition, records: list[KinesisRecord]) -> None:
        with lock:
            seen.extend((r.partition_key, r.data.decode()) for r in records)

    group_id = f"g-{uuid.uuid4().hex[:8]}"
    consumer = KinesisConsumer(
        api.base_url,
        group_id,
        topic,
        handle,
        kinesis=streams.client,
        commit_interval_s=0.5,
        fetch_interval_s=0.2,
        protocol=protocol,
        **(
            {"heartbeat_interval_ms": 300, "session_timeout_ms": 6000}
            if protocol == "classic"
            else {}
        ),
    )
    stop = threading.Event()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            consumer.run(stop)
        except BaseException as error:  # shown by the test, not lost on the thread
            failures.append(error)
            raise

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    try:
        sent = put(streams, arn, 0)
        until(lambda: len(seen) >= len(sent), failures)
        streams.split(arn, streams.open_shards(arn)[0]["ShardId"])
        sent += put(streams, arn, 1)
        until(lambda: len(seen) >= len(sent), failures)
        first, second = (s["ShardId"] for s in streams.open_shards(arn))
        streams.merge(arn, first, second)
        sent += put(streams, arn, 2)
        until(lambda: len(seen) >= len(sent), failures)
        if protocol == "consumer":  # MillisBehindLatest reaches the coordinator
            until(lambda: lags_shown(api, group_id), failures)
        time.sleep(1.0)  # anything more would be a record twice
    finally:
        stop.set()
        runner.join(timeout=20)
    assert not runner.is_alive()
    assert sorted(seen) == sorted(sent)  # every record, none twice
    for key in KEYS:  # in order per key, across parent and children
        assert [d for k, d in seen if k == key] == [d for k, d in sent if k == key]
    # The group's checkpoints: the parents' ends, the merged child's last record.
    partitions = api.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]["partitions"]
    assert len(partitions) == 4


def test_a_classic_leader_spreads_only_the_assignable_shards(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    """The leader asks metadata with its groupId, so it assigns only the shards the group may
    read, balanced over the members, with nothing for sync-group to strip: a range over every
    partition would give one member both readable shards and the other only children that
    wait for their parent."""
    api, store = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    resharded(store, topic)  # 0 closed, 1 open; 2 and 3 the children of 0
    group = f"classic-{uuid.uuid4().hex[:8]}"
    members = [start_member(api.base_url, group, [topic], "classic") for _ in range(2)]

    def settled_on(*partitions: int) -> bool:
        wanted = {TopicPartition(topic, p) for p in partitions}
        return settled(api.base_url, group, "classic", members, wanted)

    try:
        wait_until(lambda: settled_on(0, 1), CONVERGE_S, "0 and 1, one each")
        (owner,) = [m for m in members if TopicPartition(topic, 0) in m.owned]
        owner.member.commit({}, positions={TopicPartition(topic, 0): {"shardEnd": True}})
        # The end tells the group; the next round spreads 1 and the children.
        wait_until(lambda: settled_on(1, 2, 3), CONVERGE_S, "1, 2 and 3, balanced")
        no_errors(members)
    finally:
        for member in members:
            member.close()
