#!/usr/bin/env python3
"""Count records per key into a DynamoDB table exactly once, however workers fail.

The source is synthetic and known: topic partition p holds `--records` records, and the
record at offset o has the key `key_of(p, o)` (one of `--keys`). Each worker of the group
processes the batches of the partitions it owns and adds each batch's counts to the table with
DynamoDB's non-idempotent `ADD`, in the SAME transaction as the batch's offset commit
(`GroupMember.commit(offsets, writes=...)`, docs/exactly-once.md): a worker killed before its
commit wrote nothing, and a zombie (a worker frozen past its session timeout, whose partitions
went to another) has its writes refused with its commit. At the end every counter is exact.

With `--at-least-once` the worker writes the counts first and commits after, as a consumer
without transactions does: a crash between the two, or a zombie, counts a batch twice.

    # a DynamoDB endpoint, and the coordinator on it with the sink table allowed
    groupcoord dynamodb-local --port 8000 &
    groupcoord serve --dynamodb-endpoint http://127.0.0.1:8000 \\
        -c groupcoord.sink.tables=record-counts &
    python examples/exactly_once_counts.py --dynamodb-endpoint http://127.0.0.1:8000 --setup
    python examples/exactly_once_counts.py --name a &      # start several; kill -9 some
    python examples/exactly_once_counts.py --name b &
    python examples/exactly_once_counts.py --dynamodb-endpoint http://127.0.0.1:8000 --verify

`--crash-after-batches N` and `--freeze-before-commit N` are fault injection for the tests
(tests/e2e/test_exactly_once.py): the worker dies (SIGKILL itself) at the point where it
has processed its N-th batch but not committed it, or stops itself (SIGSTOP) there until
someone sends it SIGCONT.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from groupcoord.client import CommitFailed, GroupMember, TopicPartition, sink
from groupcoord.client.errors import GroupcoordError
from groupcoord.client.local_aws import CREDENTIALS_HINT, AwsConfigMissing, client_arguments
from groupcoord.client.transport import Transport

KEY = "key"
COUNT = "records"


def key_of(partition: int, offset: int, keys: int) -> str:
    return f"key-{(partition * 31 + offset * 7) % keys:03d}"


def expected_counts(partitions: int, records: int, keys: int) -> Counter[str]:
    return Counter(key_of(p, o, keys) for p in range(partitions) for o in range(records))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("GROUPCOORD_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--group", default="record-counters")
    parser.add_argument("--topic", default="records")
    parser.add_argument("--table", default="record-counts", help="the sink table")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=500, help="records per partition")
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--batch", type=int, default=25, help="records per commit")
    parser.add_argument("--name", default=f"worker-{os.getpid()}")
    parser.add_argument("--protocol", choices=["consumer", "classic"], default="consumer")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    parser.add_argument("--dynamodb-endpoint", help="for --setup, --verify, --at-least-once")
    parser.add_argument("--setup", action="store_true", help="create the topic and the table")
    parser.add_argument("--verify", action="store_true", help="compare the table with the source")
    parser.add_argument("--at-least-once", action="store_true", help="write, then commit")
    parser.add_argument("--crash-after-batches", type=int, default=0)
    parser.add_argument("--freeze-before-commit", type=int, default=0)
    args = parser.parse_args(argv)
    if args.setup:
        return without_credentials_traceback(lambda: setup(args))
    if args.verify:
        return without_credentials_traceback(lambda: verify(args))
    worker = Worker(args)
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())
    signal.signal(signal.SIGINT, lambda *_: worker.stop())
    return worker.run()


def dynamodb(args: argparse.Namespace) -> Any:
    """A DynamoDB client; on a loopback endpoint, dummy credentials and region where the
    environment has none (a local engine takes any), said on stdout."""
    import boto3  # only where the worker talks to DynamoDB itself

    if not args.dynamodb_endpoint:
        sys.exit("--dynamodb-endpoint is needed here")
    try:
        arguments, note = client_arguments("dynamodb", endpoint_url=args.dynamodb_endpoint)
    except AwsConfigMissing as missing:
        sys.exit(str(missing))
    if note:
        print(note, flush=True)
    return boto3.client("dynamodb", **arguments)


def without_credentials_traceback(action: Callable[[], int]) -> int:
    """boto3 finding no credentials (against AWS) is one line naming what to set."""
    from botocore.exceptions import NoCredentialsError

    try:
        return action()
    except NoCredentialsError:
        sys.exit(f"no AWS credentials: {CREDENTIALS_HINT}")


def setup(args: argparse.Namespace) -> int:
    client = dynamodb(args)
    client.create_table(
        TableName=args.table,
        KeySchema=[{"AttributeName": KEY, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": KEY, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    Transport(args.url).call(
        "create-topics", {"topics": [{"name": args.topic, "numPartitions": args.partitions}]}
    )
    print(f"created table {args.table} and topic {args.topic} ({args.partitions} partitions)")
    return 0


def table_counts(client: Any, table: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for page in client.get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
        for item in page["Items"]:
            counts[item[KEY]["S"]] = int(item[COUNT]["N"])
    return counts


def verify(args: argparse.Namespace) -> int:
    want = expected_counts(args.partitions, args.records, args.keys)
    got = table_counts(dynamodb(args), args.table)
    wrong = {k: (got.get(k, 0), want.get(k, 0)) for k in want | got if got[k] != want[k]}
    for k, (g, w) in sorted(wrong.items()):
        print(f"{k}: counted {g}, expected {w}")
    print("every counter is exact" if not wrong else f"{len(wrong)} counters are wrong")
    return 0 if not wrong else 1


class Worker:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.positions: dict[TopicPartition, int] = {}
        self.batches = 0
        self.stopping = False
        self.direct = dynamodb(args) if args.at_least_once else None
        classic = args.protocol == "classic"
        self.member = GroupMember(
            args.url,
            args.group,
            topics=[args.topic],
            protocol=args.protocol,
            assignors=["cooperative-sticky"] if classic else ("range",),
            listener=self,
            session_timeout_ms=args.session_timeout_ms,
            heartbeat_interval_ms=args.heartbeat_interval_ms if classic else None,
            client_id=args.name,
        )

    def say(self, text: str) -> None:
        print(f"[{self.args.name}] {text}", flush=True)

    def stop(self) -> None:
        self.stopping = True

    # --- the rebalance listener ---

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        committed = self.member.committed(partitions)
        for tp in partitions:
            self.positions[tp] = committed.get(tp) or 0
        self.say(f"assigned {sorted((tp.partition, self.positions[tp]) for tp in partitions)}")

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        # Every processed batch is committed with its writes already: nothing to flush.
        for tp in partitions:
            self.positions.pop(tp, None)
        self.say(f"revoked {sorted(tp.partition for tp in partitions)}")

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        for tp in partitions:
            self.positions.pop(tp, None)
        self.say(f"lost {sorted(tp.partition for tp in partitions)}")

    # --- the main loop ---

    def run(self) -> int:
        self.say(f"joining {self.args.group} ({self.args.protocol}) on {self.args.url}")
        try:
            while not self.stopping:
                self.member.poll(timeout_s=0.0 if self.work_left() else 0.3)
                for tp in sorted(self.positions):
                    if self.stopping or tp not in self.positions:
                        break
                    self.process_batch(tp)
        finally:
            self.member.close()
            self.say("closed")
        return 0

    def work_left(self) -> bool:
        return any(pos < self.args.records for pos in self.positions.values())

    def process_batch(self, tp: TopicPartition) -> None:
        start = self.positions[tp]
        end = min(start + self.args.batch, self.args.records)
        if start >= end:
            return
        counts = Counter(key_of(tp.partition, o, self.args.keys) for o in range(start, end))
        writes = [
            sink.update(
                self.args.table, {KEY: k}, "ADD #n :c", names={"#n": COUNT}, values={":c": c}
            )
            for k, c in sorted(counts.items())
        ]
        self.batches += 1
        if self.direct is not None:  # at-least-once: the counts land before the commit
            for write in writes:
                update = write["Update"]
                self.direct.update_item(
                    **{k: v for k, v in update.items() if k != "TableName"},
                    TableName=update["TableName"],
                )
        self.fault_point()
        try:
            if self.direct is not None:
                self.member.commit({tp: end})
            else:
                self.member.commit({tp: end}, writes=writes)
        except CommitFailed as error:
            # A zombie: the partition moved on, and (exactly-once) nothing was written.
            self.say(f"batch {tp.partition}@{start}..{end} fenced ({error.error.name}); dropped")
            self.positions.pop(tp, None)
            return
        except GroupcoordError as error:
            self.say(f"batch {tp.partition}@{start}..{end} not committed: {error}; retrying")
            return
        self.positions[tp] = end
        self.say(f"committed {tp.partition}@{end}")

    def fault_point(self) -> None:
        """Between processing a batch and committing it (tests only)."""
        if self.batches == self.args.crash_after_batches:
            self.say(f"crashing before the commit of batch {self.batches}")
            os.kill(os.getpid(), signal.SIGKILL)
        if self.batches == self.args.freeze_before_commit:
            self.say(f"freezing before the commit of batch {self.batches}")
            os.kill(os.getpid(), signal.SIGSTOP)  # every thread stops, heartbeats too
            self.say("thawed")


if __name__ == "__main__":
    sys.exit(main())
