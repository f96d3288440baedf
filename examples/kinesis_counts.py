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
    # the stream `orders` (2 shards), the table `counts`, the topic `orders` bound to the stream
    python examples/kinesis_counts.py --setup --dynamodb-endpoint http://127.0.0.1:8000
    python examples/kinesis_counts.py --name a &    # start several: each says which shards it
    python examples/kinesis_counts.py --name b &    # reads and every checkpoint it commits
    python examples/kinesis_counts.py --put 1000    # records for 10 keys, spread over the shards

Without AWS configuration, a loopback endpoint gets dummy credentials and region (said so).
`--setup` keeps a stream, table or topic that exists; `groupcoord topics create orders
--config groupcoord.kinesis.stream.arn=ARN` binds a topic by hand.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections import Counter
from typing import Any

from botocore.exceptions import NoCredentialsError

from groupcoord.client import TopicPartition, sink
from groupcoord.client.errors import error_of
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.client.local_aws import CREDENTIALS_HINT, AwsConfigMissing, client_arguments
from groupcoord.client.transport import Transport
from groupcoord.errors import Errors

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
    parser.add_argument("--url", default=os.environ.get("GROUPCOORD_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--group", default="kinesis-counts")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--table", default="counts", help="the sink table (key k, counter n)")
    parser.add_argument("--name", help="this worker's client id, shown in its lines")
    parser.add_argument("--setup", action="store_true", help="create the stream, table, topic")
    parser.add_argument("--stream", help="for --setup and --put (default: the topic's name)")
    parser.add_argument("--shards", type=int, default=2, help="for --setup")
    parser.add_argument("--dynamodb-endpoint", help="for --setup (the coordinator's DynamoDB)")
    parser.add_argument("--put", type=int, metavar="N", help="put N records into the stream")
    parser.add_argument(
        "--at-least-once",
        metavar="DYNAMODB_ENDPOINT",
        help="write the counts first and checkpoint later (no transaction), for comparison",
    )
    parser.add_argument(
        "--commit-interval", type=float, default=5.0, help="seconds between checkpoints"
    )
    args = parser.parse_args()
    if args.setup or args.put:
        try:
            if args.setup:
                setup(args)
            else:
                put(args)
        except NoCredentialsError:
            sys.exit(f"no AWS credentials: {CREDENTIALS_HINT}")
        return
    # The consumer says what it does (joins, shards, checkpoints, dummy local credentials).
    prefix = f"[{args.name}] " if args.name else ""
    logging.basicConfig(level=logging.WARNING, format=f"{prefix}%(message)s", stream=sys.stdout)
    logging.getLogger("groupcoord.client.kinesis").setLevel(logging.INFO)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # a graceful stop hands over at once
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    dynamodb = None
    if args.at_least_once:
        dynamodb = aws_client("dynamodb", args.at_least_once)
    options: dict[str, Any] = {"commit_interval_s": args.commit_interval}
    if args.name:
        options["client_id"] = args.name
    try:
        consumer(args.url, args.group, args.topic, args.table, dynamodb, **options).run(stop)
    except NoCredentialsError:
        sys.exit(f"no AWS credentials: {CREDENTIALS_HINT}")


def setup(args: argparse.Namespace) -> None:
    """The stream, the sink table and the topic bound to the stream (each kept if it exists)."""
    kinesis = aws_client("kinesis")
    stream = args.stream or args.topic
    try:
        kinesis.create_stream(StreamName=stream, ShardCount=args.shards)
        print(f"creating stream {stream} ({args.shards} shards)", flush=True)
    except kinesis.exceptions.ResourceInUseException:
        print(f"stream {stream} exists", flush=True)
    waiting = {"Delay": 1, "MaxAttempts": 120}
    kinesis.get_waiter("stream_exists").wait(StreamName=stream, WaiterConfig=waiting)
    arn = kinesis.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
    arn = arn["StreamARN"]
    dynamodb = aws_client("dynamodb", args.dynamodb_endpoint)
    try:
        dynamodb.create_table(
            TableName=args.table,
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        print(f"created table {args.table} (key k)", flush=True)
    except dynamodb.exceptions.ResourceInUseException:
        print(f"table {args.table} exists", flush=True)
    configs = [{"name": "groupcoord.kinesis.stream.arn", "value": arn}]
    body = {"topics": [{"name": args.topic, "configs": configs}]}
    created = Transport(args.url).call("create-topics", body).body["topics"][0]
    if error_of(created) == Errors.TOPIC_ALREADY_EXISTS:
        print(f"topic {args.topic} exists", flush=True)
    elif error_of(created) != Errors.NONE:
        sys.exit(f"topic {args.topic}: {created.get('errorMessage') or error_of(created).name}")
    else:
        print(f"bound topic {args.topic} to {arn} ({created['numPartitions']} shards)")


def put(args: argparse.Namespace) -> None:
    """N records for 10 keys (key-0 .. key-9), hashed over the stream's shards."""
    kinesis = aws_client("kinesis")
    stream = args.stream or args.topic
    for start in range(0, args.put, 500):  # PutRecords takes 500 at most
        records = [
            {"PartitionKey": f"key-{n % 10}", "Data": str(n).encode()}
            for n in range(start, min(start + 500, args.put))
        ]
        failed = kinesis.put_records(StreamName=stream, Records=records)["FailedRecordCount"]
        if failed:
            sys.exit(f"{failed} records of {len(records)} refused (throttled): try fewer")
    print(f"put {args.put} records into {stream}")


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
