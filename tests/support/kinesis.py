"""kinesis-local from a test: streams made, resharded and waited for (boto3 on the endpoint
the `kinesis_endpoint` fixture started)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3

REGION = "us-east-1"


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
