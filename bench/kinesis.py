"""Kinesis-backed topics beside KCL (docs/kinesis.md, docs/performance.md "Kinesis shards
beside KCL"):

- handoff on a graceful stop: from the SIGTERM sent to a worker process
  (examples/kinesis_counts.py, which then commits and leaves the group) to the other worker's
  first record of a shard the first one had; sent right after the other worker got its share
  (as a rolling deploy that stops the old worker once the new one owns its shards: the
  survivor has just heartbeated, the worst moment), and at a random moment of the survivor's
  heartbeat interval (a stop that does not wait on the group);
- failover on a kill: the same worker process SIGKILLed (no commit, no leave), to the other
  worker's first record of its shard (bounded by the session timeout);
- children start: from the commit of a parent shard's end to the first record of a child;
- $ per shard-month of the coordination, derived from the calls this run audits and times
  (bench/kinesis_cost.py), beside KCL's lease renewals.

KCL's figures beside them: a deploy's 20-40 s without processing (its issues #474, #845: a
stopped worker's leases are taken when they expire, by lease takers that run every 20 s); a
failover of 20-40 s with its defaults (failoverTimeMillis 10 s: a lease taker runs every
2 x (10 s + 25 ms) and takes a lease whose counter it saw stand still for 10 s, so from one to
two taker runs after the last renewal); children started by its shard sync and lease taking.

Runs kinesis-local, DynamoDB Local and `groupcoord serve` on it (the consumer protocol at its
default 5 s heartbeat and 45 s session) on 127.0.0.1, each a process. The surviving worker
runs in this process (its records timed here); the stopped one is a process of its own.

    python -m bench.kinesis [--repeat 5] [--no-failover] [--cost-only]
    python -m bench.kinesis --smoke   # --repeat 1 --no-failover; writes nothing
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3

from groupcoord.client import TopicPartition
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.client.transport import Transport
from groupcoord.store.dynamo import make_client

from .common import dynamodb_local, kinesis_local, parse_args, running_serve
from .kinesis_cost import measure, print_costs

COMMAND = "python -m bench.kinesis"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "kinesis_counts.py"
SESSION_MS = 45_000  # group.consumer.session.timeout.ms, Kafka's default
HEARTBEAT_S = 5.0  # group.consumer.heartbeat.interval.ms, Kafka's default
KCL_HANDOFF = "20-40 s"
KCL_FAILOVER = "20-40 s (failoverTimeMillis 10 s, lease taker every 20 s)"
KCL_CHILDREN = "a shard sync and a lease taker run"
Api = Callable[[str, Any], Any]  # a coordinator call: (api, body) -> the answer's body


class Timed(KinesisConsumer):
    """A consumer that notes when each shard's end was committed."""

    ended_at: dict[int, float]

    def _end(self, shard: Any, children: list[str]) -> None:
        super()._end(shard, children)
        self.ended_at = {
            **getattr(self, "ended_at", {}),
            shard.partition.partition: time.monotonic(),
        }


class Worker:
    """A KinesisConsumer on a thread of this process (the survivor, or the children's reader),
    noting when each batch of records came."""

    def __init__(self, url: str, group: str, topic: str, kinesis: Any) -> None:
        self.batches: dict[int, list[float]] = {}  # partition -> when each batch came
        self.stop = threading.Event()
        # The client's defaults (GetRecords 1 s apart): a shard handed over is read at once.
        self.consumer = Timed(
            url, group, topic, self._handle, kinesis=kinesis, session_timeout_ms=SESSION_MS
        )
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _handle(self, tp: TopicPartition, records: list[KinesisRecord]) -> None:
        self.batches.setdefault(tp.partition, []).append(time.monotonic())

    def first_after(self, partition: int, at: float) -> float:
        """When the first batch of `partition` after `at` came (0: none yet)."""
        return min((t for t in self.batches.get(partition, ()) if t > at), default=0.0)

    def _run(self) -> None:
        self.consumer.run(self.stop)

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.member.assignment()}

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


class ExampleWorker:
    """examples/kinesis_counts.py as a process, counting exactly once into `table`: the worker
    that is stopped (SIGTERM: it commits and leaves) or killed (SIGKILL)."""

    def __init__(self, url: str, group: str, topic: str, table: str) -> None:
        args = ["--url", url, "--group", group, "--topic", topic, "--table", table]
        self.process = subprocess.Popen([sys.executable, str(EXAMPLE), *args])

    def signal(self, number: int) -> float:
        """Send the signal; when it was sent (time.monotonic())."""
        at = time.monotonic()
        self.process.send_signal(number)
        return at

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)


def _until(condition: Callable[[], Any], timeout_s: float = 120.0, pause_s: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(pause_s)
    return found


class Producer:
    """A record on every open shard about every 20 ms (one partition key per shard's hash
    range), in one PutRecords a round; the shards listed again every LIST_EVERY_S (a split
    opens children). One call a round, not one per shard and a ListShards: the producer runs
    in the process of the worker that is timed, and its boto3 calls took that worker's CPU."""

    LIST_EVERY_S = 1.0

    def __init__(self, kinesis: Any, arn: str) -> None:
        self.kinesis, self.arn, self.stop = kinesis, arn, threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _open_hash_keys(self) -> list[str]:
        shards = self.kinesis.list_shards(StreamARN=self.arn)["Shards"]
        return [
            s["HashKeyRange"]["StartingHashKey"]
            for s in shards
            if "EndingSequenceNumber" not in s["SequenceNumberRange"]
        ]

    def _run(self) -> None:
        listed_at, hash_keys = 0.0, []
        while not self.stop.is_set():
            if time.monotonic() - listed_at >= self.LIST_EVERY_S:
                listed_at, hash_keys = time.monotonic(), self._open_hash_keys()
            records = [{"PartitionKey": "k", "ExplicitHashKey": h, "Data": b"x"} for h in hash_keys]
            if records:
                self.kinesis.put_records(StreamARN=self.arn, Records=records)
            time.sleep(0.02)


def stream(kinesis: Any, shards: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:10]}"
    kinesis.create_stream(StreamName=name, ShardCount=shards)
    while True:
        found = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
        if found["StreamStatus"] == "ACTIVE":
            return found["StreamARN"]
        time.sleep(0.05)


def topic_on(url_call: Api, arn: str) -> str:
    topic = f"k-{uuid.uuid4().hex[:10]}"
    config = [{"name": "groupcoord.kinesis.stream.arn", "value": arn}]
    url_call("create-topics", {"topics": [{"name": topic, "configs": config}]})
    return topic


def moves(
    url: str, api: Api, kinesis: Any, table: str, kill: bool, at_random: bool = False
) -> float:
    """One handoff (SIGTERM) or failover (SIGKILL) of the example's worker process: seconds
    until the other worker's first record of the shard the stopped one read. Sent as soon as
    the stopped worker is seen checkpointing that shard once the other got its share, or
    (`at_random`) a uniformly random time within a heartbeat interval later."""
    arn = stream(kinesis, 2)
    producer = Producer(kinesis, arn)
    topic, group = topic_on(api, arn), f"g-{uuid.uuid4().hex[:8]}"
    a = ExampleWorker(url, group, topic, table)
    b = Worker(url, group, topic, kinesis)
    try:
        _until(lambda: len(b.owned()) == 1)
        (moved,) = {0, 1} - b.owned()
        seen = checkpoint(api, group, topic, moved)
        # A reads it now (offset-fetch 10 a second: the coordinator serves the workers too).
        _until(lambda: checkpoint(api, group, topic, moved) != seen, pause_s=0.1)
        if at_random:
            time.sleep(random.uniform(0.0, HEARTBEAT_S))
        stopped = a.signal(signal.SIGKILL if kill else signal.SIGTERM)
        return _until(lambda: b.first_after(moved, stopped), 2 * SESSION_MS / 1000) - stopped
    finally:
        producer.stop.set()
        a.close()
        b.close()


def checkpoint(api: Api, group: str, topic: str, partition: int) -> Any:
    """The group's checkpoint of the partition (offset-fetch)."""
    topics = [{"name": topic, "partitionIndexes": [partition]}]
    answer = api("offset-fetch", {"groups": [{"groupId": group, "topics": topics}]})
    return answer["groups"][0]["topics"][0]["partitions"][0]["kinesisPosition"]


def children_start(url: str, api: Api, kinesis: Any) -> float:
    """Seconds from the commit of a parent's end to the first record of a child."""
    arn = stream(kinesis, 1)
    producer = Producer(kinesis, arn)
    topic = topic_on(api, arn)
    worker = Worker(url, f"g-{uuid.uuid4().hex[:8]}", topic, kinesis)
    try:
        _until(lambda: worker.batches.get(0))
        parent = kinesis.list_shards(StreamARN=arn)["Shards"][0]
        hashes = parent["HashKeyRange"]
        middle = (int(hashes["StartingHashKey"]) + int(hashes["EndingHashKey"])) // 2
        kinesis.split_shard(
            StreamName=arn.rsplit("/", 1)[1],
            ShardToSplit=parent["ShardId"],
            NewStartingHashKey=str(middle),
        )
        ended = _until(lambda: getattr(worker.consumer, "ended_at", {}).get(0))
        child = _until(lambda: min((ts[0] for p, ts in worker.batches.items() if p > 0), default=0))
        return child - ended
    finally:
        producer.stop.set()
        worker.close()


def measure_timings(
    endpoint: str, settings: dict[str, str], kinesis: Any, repeat: int, failover: bool = True
) -> dict[str, tuple[list[float], str]]:
    table = settings["groupcoord.sink.tables"]
    with running_serve(endpoint, settings) as url:
        transport = Transport(url)

        def api(name: str, body: Any) -> Any:
            return transport.call(name, body).body

        handoffs = [moves(url, api, kinesis, table, kill=False) for _ in range(repeat)]
        anytime = [
            moves(url, api, kinesis, table, kill=False, at_random=True) for _ in range(repeat)
        ]
        kills = max(1, repeat // 2) if failover else 0
        failovers = [moves(url, api, kinesis, table, kill=True) for _ in range(kills)]
        children = [children_start(url, api, kinesis) for _ in range(repeat)]
    found = {
        "handoff on a SIGTERM right after the survivor's share came (to the new owner's "
        "first record)": (handoffs, KCL_HANDOFF),
        "handoff on a SIGTERM at a random moment": (anytime, KCL_HANDOFF),
        f"failover on a SIGKILL (session {SESSION_MS // 1000} s)": (failovers, KCL_FAILOVER),
        "children start after the parent's end is committed": (children, KCL_CHILDREN),
    }
    return {name: found[name] for name in found if found[name][0]}


def sink_table(endpoint: str) -> str:
    """The example's count table (exactly once: a sink table of the coordinator)."""
    name = f"bench-counts-{uuid.uuid4().hex[:8]}"
    make_client(endpoint_url=endpoint).create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def print_timings(timings: dict[str, tuple[list[float], str]]) -> None:
    print("| what | runs | median | min | max | KCL |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, (values, kcl) in timings.items():
        print(
            f"| {name} | {len(values)} | {statistics.median(values):.2f} s | "
            f"{min(values):.2f} s | {max(values):.2f} s | {kcl} |"
        )
    for name, (values, _) in timings.items():
        print(f"\n{name}: " + ", ".join(f"{v:.2f}" for v in values))
    print()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cost-only", action="store_true", help="skip the timings")
    parser.add_argument("--no-failover", action="store_true", help="skip the kills (45 s each)")
    args = parse_args(parser, argv, repeat=1, no_failover=True)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    with kinesis_local() as kinesis_url, dynamodb_local() as endpoint:
        os.environ["AWS_ENDPOINT_URL_KINESIS"] = kinesis_url  # the example's too
        kinesis = boto3.client("kinesis", endpoint_url=kinesis_url)
        settings = {"groupcoord.sink.tables": sink_table(endpoint)}
        timings = (
            {}
            if args.cost_only
            else measure_timings(endpoint, settings, kinesis, args.repeat, not args.no_failover)
        )
        costs = measure(endpoint, lambda shards: stream(kinesis, shards))
    print(f"Measured by `{COMMAND} --repeat {args.repeat}` (kinesis-local, DynamoDB Local).\n")
    if timings:
        print_timings(timings)
    print_costs(costs)


if __name__ == "__main__":
    main()
