"""kinesis-local from a test: streams made, resharded and waited for (boto3 on the endpoint
the `kinesis_endpoint` fixture started)."""

from __future__ import annotations

import time
import uuid
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
