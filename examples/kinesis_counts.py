#!/usr/bin/env python3
"""Count a Kinesis stream's records per partition key into a DynamoDB table, exactly once.

The topic is backed by the stream (docs/kinesis.md); every worker started with the same group
shares its shards, as KCL workers share a lease table. Each batch of a shard's records adds its
counts to the table with DynamoDB's non-idempotent `ADD`, in the SAME transaction as the
batch's checkpoint (`KinesisConsumer(..., exactly_once=True)`: `GroupMember.commit(writes=...,
positions=...)`, docs/exactly-once.md): a worker killed before its commit wrote nothing, and a
zombie's writes are refused with its checkpoint. Across splits and merges the children wait
for their parents, so each key's records are counted in order, and every counter is exact.

    groupcoord dynamodb-local --port 8000 &  groupcoord kinesis-local --port 4568 &
    export AWS_ENDPOINT_URL_KINESIS=http://127.0.0.1:4568
    groupcoord serve --dynamodb-endpoint http://127.0.0.1:8000 -c groupcoord.sink.tables=counts &
    # create the stream and the table, then bind a topic to the stream:
    #   create-topics {"name": "orders",
    #                  "configs": [{"name": "groupcoord.kinesis.stream.arn", "value": ARN}]}
    python examples/kinesis_counts.py --topic orders --table counts &    # start several
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections import Counter
from typing import Any

from botocore.exceptions import NoCredentialsError

from groupcoord.client import TopicPartition, sink
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.client.local_aws import CREDENTIALS_HINT, AwsConfigMissing, client_arguments

# A commit's transaction holds 100 items: the fence, the checkpoint, at most 98 writes.
BATCH = 90


def counting(table: str) -> Any:
    """The handler: one ADD per key of the batch, returned as the batch's writes."""

    def handle(tp: TopicPartition, records: list[KinesisRecord]) -> list[dict[str, Any]]:
        counts = Counter(r.partition_key for r in records)
        return [
            sink.update(table, {"k": key}, "ADD #n :by", names={"#n": "n"}, values={":by": count})
            for key, count in sorted(counts.items())
        ]

    return handle


def at_least_once(table: str, dynamodb: Any) -> Any:
    """The handler without transactions: the counts written first, the checkpoint later (on
    the interval), as a KCL consumer does: a crash between the two counts a tail twice."""
    writes = counting(table)

    def handle(tp: TopicPartition, records: list[KinesisRecord]) -> None:
        for write in writes(tp, records):
            dynamodb.update_item(**write["Update"])

    return handle


def consumer(
    url: str, group: str, topic: str, table: str, dynamodb: Any = None, **options: Any
) -> KinesisConsumer:
    """Exactly once; or, given a DynamoDB client, at least once."""
    if dynamodb is not None:
        return KinesisConsumer(url, group, topic, at_least_once(table, dynamodb), **options)
    return KinesisConsumer(
        url, group, topic, counting(table), exactly_once=True, limit=BATCH, **options
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--group", default="kinesis-counts")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument(
        "--at-least-once",
        metavar="DYNAMODB_ENDPOINT",
        help="write the counts first and checkpoint later (no transaction), for comparison",
    )
    parser.add_argument(
        "--commit-interval", type=float, default=5.0, help="seconds between checkpoints"
    )
    args = parser.parse_args()
    # The consumer says what it does (joins, shards, checkpoints, dummy local credentials).
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("groupcoord.client.kinesis").setLevel(logging.INFO)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # a graceful stop hands over at once
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    dynamodb = None
    if args.at_least_once:
        dynamodb = aws_client("dynamodb", args.at_least_once)
    options = {"commit_interval_s": args.commit_interval}
    try:
        consumer(args.url, args.group, args.topic, args.table, dynamodb, **options).run(stop)
    except NoCredentialsError:
        sys.exit(f"no AWS credentials: {CREDENTIALS_HINT}")


def aws_client(service: str, endpoint_url: str | None = None) -> Any:
    """A boto3 client; on a loopback endpoint, dummy credentials and region where the
    environment has none (a local engine takes any), said on stdout."""
    import boto3

    try:
        arguments, note = client_arguments(service, endpoint_url=endpoint_url)
    except AwsConfigMissing as missing:
        sys.exit(str(missing))
    if note:
        print(note, flush=True)
    return boto3.client(service, **arguments)


if __name__ == "__main__":
    main()
