"""Kinesis-backed topics from a test: kinesis-local's streams made, resharded and waited for
(boto3 on the endpoint the `kinesis_endpoint` fixture started), a coordinator deployed on
DynamoDB Local that reaches it, and the requests the endpoint tests share (topics bound to a
stream, positions committed and fetched, the registry synced).

A test module declares its fixtures in two lines:

    deployed = deployment_fixture(SETTINGS)   # (Api, Store), module-scoped
    streams = streams_fixture()               # Streams on kinesis-local, module-scoped
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3
import pytest

if TYPE_CHECKING:
    from groupcoord.service.kinesis.sync import Synced
    from groupcoord.store.store import Store
    from groupcoord.store.topics import TopicRecord
    from tests.support.api import Api
    from tests.support.consumer import Member

REGION = "us-east-1"
# A coordinator for KinesisConsumer loops under test: heartbeats every 200 ms, installs and
# the first rebalance at once, the scheduled shard sync out of the way (a minute).
FAST_LOOP_SETTINGS = {
    "groupcoord.kinesis.shard.sync.interval.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "200",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "group.initial.rebalance.delay.ms": "0",
}


class Streams:
    def __init__(self, endpoint: str) -> None:
        self.client: Any = boto3.client("kinesis", endpoint_url=endpoint, region_name=REGION)

    def create(self, shards: int, name: str | None = None) -> str:
        """A new stream of `shards` shards, once ACTIVE; its ARN."""
        name = name or f"s-{uuid.uuid4().hex[:12]}"
        self.client.create_stream(StreamName=name, ShardCount=shards)
        return self.wait_active(name)

    def wait_active(self, name: str, timeout_s: float = 20.0) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                summary = self.client.describe_stream_summary(StreamName=name)
            except self.client.exceptions.ResourceNotFoundException:
                summary = None
            found = summary["StreamDescriptionSummary"] if summary else None
            if found is not None and found["StreamStatus"] == "ACTIVE":
                return found["StreamARN"]
            assert time.monotonic() < deadline, f"stream {name} not ACTIVE"
            time.sleep(0.05)

    def delete(self, name: str, timeout_s: float = 20.0) -> None:
        self.client.delete_stream(StreamName=name)
        deadline = time.monotonic() + timeout_s
        while name in self.client.list_streams()["StreamNames"]:
            assert time.monotonic() < deadline, f"stream {name} not deleted"
            time.sleep(0.05)

    def shards(self, arn: str) -> list[dict[str, Any]]:
        return self.client.list_shards(StreamARN=arn)["Shards"]

    def open_shards(self, arn: str) -> list[dict[str, Any]]:
        return [
            s for s in self.shards(arn) if "EndingSequenceNumber" not in s["SequenceNumberRange"]
        ]

    def split(self, arn: str, shard_id: str) -> None:
        """Split the shard in the middle of its hash range."""
        shard = next(s for s in self.shards(arn) if s["ShardId"] == shard_id)
        hashes = shard["HashKeyRange"]
        middle = (int(hashes["StartingHashKey"]) + int(hashes["EndingHashKey"])) // 2
        name = arn.rsplit("/", 1)[1]
        self.client.split_shard(
            StreamName=name, ShardToSplit=shard_id, NewStartingHashKey=str(middle)
        )
        self.wait_active(name)

    def merge(self, arn: str, shard_id: str, adjacent_id: str) -> None:
        name = arn.rsplit("/", 1)[1]
        self.client.merge_shards(
            StreamName=name, ShardToMerge=shard_id, AdjacentShardToMerge=adjacent_id
        )
        self.wait_active(name)


@contextmanager
def kinesis_deployment(dynamodb_endpoint: str, settings: dict[str, str]) -> Iterator[Any]:
    """A coordinator in this process (with its sweeper) on a fresh table of DynamoDB Local;
    yields (its Api, its Store). Start the `kinesis_endpoint` fixture first: the store's
    Kinesis client reaches kinesis-local through AWS_ENDPOINT_URL_KINESIS."""
    from groupcoord.settings import Settings
    from groupcoord.store.store import Store
    from tests.support.api import Api
    from tests.support.servers import running_coordinator, unique_table

    mapping = {"groupcoord.table.name": unique_table(), **settings}
    store = Store.connect(Settings.from_mapping(mapping), endpoint_url=dynamodb_endpoint)
    store.ensure_table()
    with running_coordinator(mapping, store=store) as coordinator:
        yield Api(coordinator.url), coordinator.store


def kinesis_topic(api: Any, name: str, arn: str, **extra: Any) -> dict[str, Any]:
    """create-topics of a topic backed by the stream; its result entry."""
    configs = [{"name": "groupcoord.kinesis.stream.arn", "value": arn}]
    configs += [{"name": k, "value": v} for k, v in extra.pop("configs", {}).items()]
    body = api.ok("create-topics", {"topics": [{"name": name, "configs": configs, **extra}]})
    return body["topics"][0]


def deployment_fixture(settings: dict[str, str]) -> Callable[..., Iterator[tuple[Api, Store]]]:
    """A module-scoped `deployed` fixture: kinesis_deployment's (Api, Store) on `settings`."""

    @pytest.fixture(scope="module")
    def deployed(dynamodb_endpoint: str, kinesis_endpoint: str) -> Iterator[tuple[Api, Store]]:
        with kinesis_deployment(dynamodb_endpoint, settings) as found:
            yield found

    return deployed


def streams_fixture() -> Callable[..., Streams]:
    """A module-scoped `streams` fixture: Streams on the session's kinesis-local."""

    @pytest.fixture(scope="module")
    def streams(kinesis_endpoint: str) -> Streams:
        return Streams(kinesis_endpoint)

    return streams


def topic_name() -> str:
    return f"k-{uuid.uuid4().hex[:10]}"


def new_topic(api: Any, arn: str, **extra: Any) -> str:
    """A new topic backed by the stream (kinesis_topic's `extra`); its name."""
    name = topic_name()
    created = kinesis_topic(api, name, arn, **extra)
    assert created["errorCode"] == 0, created
    return name


def commit_position(
    api: Any,
    member: Member | None,
    topic: str,
    partition: int,
    at: dict[str, Any] | None,
    group: str | None = None,
    epoch: int | None = None,
) -> int:
    """One partition's offset-commit with a kinesisPosition (none if `at` is None), from
    `member` at its epoch (or `epoch`), or from outside the group (`member` None, `group`
    given); the partition's error code."""
    entry: dict[str, Any] = {"partitionIndex": partition, "committedOffset": 0}
    if at is not None:
        entry["kinesisPosition"] = at
    group = group if group is not None else member.group if member is not None else None
    assert group is not None, "a commit from outside names its group"
    body: dict[str, Any] = {"groupId": group, "topics": [{"name": topic, "partitions": [entry]}]}
    if member is not None:
        body["memberId"] = member.member_id
        body["generationIdOrMemberEpoch"] = member.epoch if epoch is None else epoch
    answer = api.ok("offset-commit", body)
    return answer["topics"][0]["partitions"][0]["errorCode"]


def fetched_position(api: Any, group: str, topic: str, partition: int) -> dict[str, Any] | None:
    """The group's committed kinesisPosition of the partition (offset-fetch)."""
    topics = [{"name": topic, "partitionIndexes": [partition]}]
    answer = api.ok("offset-fetch", {"groups": [{"groupId": group, "topics": topics}]})
    return answer["groups"][0]["topics"][0]["partitions"][0]["kinesisPosition"]


def record_of(store: Store, name: str) -> TopicRecord:
    record = store.topics.get(name)
    assert record is not None, name
    return record


def synced(store: Store, name: str, now_ms: int | None = None) -> Synced:
    """One shard sync of the topic (at `now_ms`, default the store's clock)."""
    from groupcoord.service.kinesis.sync import sync_topic

    at = store.clock.now_ms() if now_ms is None else now_ms
    return sync_topic(store, record_of(store, name), at)


def resharded(store: Store, name: str) -> None:
    """A sync that finds the stream's new shards."""
    from groupcoord.service.kinesis.sync import Synced

    assert synced(store, name) is Synced.CHANGED


def owned(member: Member) -> set[int]:
    """The partitions a test Member owns, of whichever topic."""
    return {p for partitions in member.owned.values() for p in partitions}
