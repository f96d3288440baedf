"""Kinesis-backed topics beside KCL (docs/kinesis.md, docs/performance.md "Kinesis"):

- handoff on a graceful stop: from a worker's stop (SIGTERM in examples/kinesis_counts.py: it
  commits and leaves) to the other worker's first record of a shard the first one had; stopped
  right after the other worker got its share (as a rolling deploy that stops the old worker
  once the new one owns its shards: the survivor has just heartbeated, the worst moment), and
  at a random moment of the survivor's heartbeat interval (a stop that does not wait on the
  group);
- failover on a kill: a worker that stops heartbeating without leaving (as after SIGKILL), to
  the other worker's first record of its shard (bounded by the session timeout);
- children start: from the commit of a parent shard's end to the first record of a child;
- $ per shard-month of the coordination: a Kinesis checkpoint's DynamoDB units (measured
  in-process), the shard syncs, and the member's heartbeats shared by its shards, beside KCL's
  lease renewals.

Runs kinesis-local and DynamoDB Local on 127.0.0.1, and a coordinator in this process on
DynamoDB Local with the consumer protocol at its default 5 s heartbeat.

    python -m bench.kinesis [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import boto3

from groupcoord.client import TopicPartition
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.local.kinesis_local import running_kinesis_local
from groupcoord.settings import Settings
from groupcoord.store.store import Store

from .common import InProcess, dynamodb_local
from .cost_model import FRONT_DOORS, KCL_RENEWAL_S, LAMBDA_REQUEST, MONTH_S, RRU, WRU

COMMAND = "python -m bench.kinesis"
SESSION_MS = 45_000  # group.consumer.session.timeout.ms, Kafka's default
HEARTBEAT_S = 5.0  # group.consumer.heartbeat.interval.ms, Kafka's default
# Checkpoint intervals priced: KinesisConsumer's default, and once a minute.
COMMIT_INTERVALS_S = (5.0, 60.0)
# The cost model's measured $ per member-month at a 5 s heartbeat (docs/performance.md,
# "Cost model": consumer protocol, timer checks included), by front door.
MEMBER_MONTH_USD = {"function URL": 0.37, "HTTP API": 0.89}


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
    def __init__(self, url: str, group: str, topic: str, kinesis: Any) -> None:
        self.batches: dict[int, list[float]] = {}  # partition -> when each batch came
        self.stop = threading.Event()
        self.consumer = Timed(
            url, group, topic, self._handle, kinesis=kinesis, fetch_interval_s=0.2,
            session_timeout_ms=SESSION_MS,
        )  # fmt: skip
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

    def kill(self) -> None:
        """Stop as a SIGKILL would: no commit, no leave, no more heartbeats."""
        self.consumer.member._stop_beating.set()
        self.consumer.close = lambda: None  # type: ignore[method-assign]
        self.stop.set()


def _until(condition: Callable[[], Any], timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.02)
    return found


class Producer:
    """A record on every shard about every 20 ms (one partition key per shard's hash range)."""

    def __init__(self, kinesis: Any, arn: str) -> None:
        self.kinesis, self.arn, self.stop = kinesis, arn, threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for shard in self.kinesis.list_shards(StreamARN=self.arn)["Shards"]:
                if "EndingSequenceNumber" in shard["SequenceNumberRange"]:
                    continue
                self.kinesis.put_record(
                    StreamARN=self.arn,
                    PartitionKey="k",
                    ExplicitHashKey=shard["HashKeyRange"]["StartingHashKey"],
                    Data=b"x",
                )
            time.sleep(0.02)


def stream(kinesis: Any, shards: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:10]}"
    kinesis.create_stream(StreamName=name, ShardCount=shards)
    while True:
        found = kinesis.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
        if found["StreamStatus"] == "ACTIVE":
            return found["StreamARN"]
        time.sleep(0.05)


def topic_on(url_call: Callable[[str, Any], Any], arn: str) -> str:
    topic = f"k-{uuid.uuid4().hex[:10]}"
    config = [{"name": "groupcoord.kinesis.stream.arn", "value": arn}]
    url_call("create-topics", {"topics": [{"name": topic, "configs": config}]})
    return topic


def moves(
    url: str, api: Callable[[str, Any], Any], kinesis: Any, kill: bool, at_random: bool = False
) -> float:
    """One handoff (graceful stop) or failover (kill): seconds until the other worker's
    first record of a shard the stopped one owned. Stopped as soon as both read their shard,
    or (`at_random`) a uniformly random time within a heartbeat interval later."""
    arn = stream(kinesis, 2)
    producer = Producer(kinesis, arn)
    topic, group = topic_on(api, arn), f"g-{uuid.uuid4().hex[:8]}"
    a = Worker(url, group, topic, kinesis)
    b = Worker(url, group, topic, kinesis)
    try:
        _until(lambda: len(a.owned()) == len(b.owned()) == 1)
        (moved,) = a.owned()
        _until(lambda: a.first_after(moved, time.monotonic() - 0.5))  # A reads it now
        if at_random:
            time.sleep(random.uniform(0.0, HEARTBEAT_S))
        stopped = time.monotonic()
        if kill:
            a.kill()
        else:
            a.stop.set()  # run() commits and leaves
        return _until(lambda: b.first_after(moved, stopped), 2 * SESSION_MS / 1000) - stopped
    finally:
        producer.stop.set()
        b.stop.set()
        a.stop.set()
        for w in (a, b):
            w.thread.join(timeout=30)


def children_start(url: str, api: Callable[[str, Any], Any], kinesis: Any) -> float:
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
        worker.stop.set()
        worker.thread.join(timeout=30)


def checkpoint_units(endpoint: str, arn: str) -> tuple[float, float]:
    """A consumer member's Kinesis checkpoint of one shard: (read, write) units, measured
    in-process on DynamoDB Local (the update of a position already committed)."""
    coordinator = InProcess(endpoint)
    topic = topic_on(coordinator.call, arn)
    group, member = f"g-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
    join = {
        "groupId": group, "memberId": member, "memberEpoch": 0, "rebalanceTimeoutMs": 30000,
        "subscribedTopicNames": [topic], "topicPartitions": [],
    }  # fmt: skip
    epoch = coordinator.call("consumer-group-heartbeat", join).body["memberEpoch"]

    def commit(sequence: str) -> Any:
        position = {"sequenceNumber": sequence}
        partition = {"partitionIndex": 0, "committedOffset": 0, "kinesisPosition": position}
        body = {
            "groupId": group, "memberId": member, "generationIdOrMemberEpoch": epoch,
            "topics": [{"name": topic, "partitions": [partition]}],
        }  # fmt: skip
        return coordinator.call("offset-commit", body)

    commit("1")
    measured = commit("2")
    assert measured.error_code == 0, measured.body
    return measured.usage.read_units, measured.usage.write_units


def sync_units(endpoint: str, arn: str) -> tuple[float, float]:
    """One scheduled shard sync that finds nothing new: (read, write) units."""
    from groupcoord.service.kinesis.sync import sync_topic
    from groupcoord.store import capacity

    coordinator = InProcess(endpoint)
    topic = topic_on(coordinator.call, arn)
    store: Store = coordinator.store
    record = store.topics.get(topic)
    assert record is not None
    with capacity.metered() as usage:
        sync_topic(store, record, store.clock.now_ms())
    return usage.read_units, usage.write_units


def cost_rows(checkpoint: tuple[float, float], sync: tuple[float, float]) -> list[list[str]]:
    """$ per shard-month: the member's heartbeats shared by its shards (the cost model's
    figure) and the topic's scheduled syncs shared likewise; then a checkpoint per shard every
    5 s or 60 s (its DynamoDB units measured, its request charges: front door and Lambda; its
    billed duration left out), beside KCL's lease renewals (and its checkpoints, one 1-WRU
    UpdateItem each, at the same interval)."""
    units = checkpoint[0] * RRU + checkpoint[1] * WRU
    syncs = (
        MONTH_S
        / (Settings().kinesis_shard_sync_interval_ms / 1000)
        * (sync[0] * RRU + sync[1] * WRU + LAMBDA_REQUEST)
    )
    kcl = MONTH_S / KCL_RENEWAL_S * WRU
    rows = []
    for door, member in MEMBER_MONTH_USD.items():
        per_checkpoint = units + LAMBDA_REQUEST + FRONT_DOORS[door]
        for shards in (1, 4, 16):
            coordination = member / shards + syncs / shards
            with_checkpoints = [
                coordination + MONTH_S / interval * per_checkpoint
                for interval in COMMIT_INTERVALS_S
            ]
            kcl_checkpoints = [kcl + MONTH_S / i * WRU for i in COMMIT_INTERVALS_S]
            rows.append([
                door, str(shards), f"${coordination:.3f}",
                *(f"${v:.3f}" for v in with_checkpoints), f"${kcl:.3f}",
                *(f"${v:.3f}" for v in kcl_checkpoints),
            ])  # fmt: skip
    return rows


def measure_timings(
    mapping: dict[str, str], store: Store, kinesis: Any, repeat: int, failover: bool = True
) -> dict[str, tuple[list[float], str]]:
    from tests.support.api import Api
    from tests.support.servers import running_coordinator

    with running_coordinator(mapping, store=store) as coordinator:
        api, url = Api(coordinator.url).ok, coordinator.url
        handoffs = [moves(url, api, kinesis, kill=False) for _ in range(repeat)]
        anytime = [moves(url, api, kinesis, kill=False, at_random=True) for _ in range(repeat)]
        kills = max(1, repeat // 2) if failover else 0
        failovers = [moves(url, api, kinesis, kill=True) for _ in range(kills)]
        children = [children_start(url, api, kinesis) for _ in range(repeat)]
    found = {
        "handoff on a graceful stop right after the survivor's share came (to the new "
        "owner's first record)": (handoffs, "20-40 s"),
        "handoff on a graceful stop at a random moment": (anytime, "20-40 s"),
        "failover on a kill (session 45 s)": (failovers, "failoverTimeMillis + lease taking"),
        "children start after the parent's end is committed": (children, "a lease-sync cycle"),
    }
    return {name: found[name] for name in found if found[name][0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cost-only", action="store_true", help="skip the timings")
    parser.add_argument("--no-failover", action="store_true", help="skip the kills (45 s each)")
    args = parser.parse_args()
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    from tests.support.servers import unique_table

    with running_kinesis_local() as kinesis_url, dynamodb_local() as endpoint:
        os.environ["AWS_ENDPOINT_URL_KINESIS"] = kinesis_url
        kinesis = boto3.client("kinesis", endpoint_url=kinesis_url)
        mapping = {"groupcoord.table.name": unique_table()}
        store = Store.connect(Settings.from_mapping(mapping), endpoint_url=endpoint)
        store.ensure_table()
        timings = (
            {}
            if args.cost_only
            else measure_timings(mapping, store, kinesis, args.repeat, not args.no_failover)
        )
        arn = stream(kinesis, 1)
        checkpoint = checkpoint_units(endpoint, arn)
        sync = sync_units(endpoint, arn)
    print(f"Measured by `{COMMAND} --repeat {args.repeat}` (kinesis-local, DynamoDB Local).\n")
    if timings:
        print("| what | runs | median | min | max | KCL |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, (values, kcl) in timings.items():
            print(
                f"| {name} | {len(values)} | {statistics.median(values):.2f} s | "
                f"{min(values):.2f} s | {max(values):.2f} s | {kcl} |"
            )
        for name, (values, _) in timings.items():
            print(f"\n{name}: " + ", ".join(f"{v:.2f}" for v in values))
    print(
        f"\nA checkpoint: {checkpoint[0]:.1f} RRU + {checkpoint[1]:.1f} WRU; a shard sync "
        f"that finds nothing new: {sync[0]:.1f} RRU + {sync[1]:.1f} WRU.\n"
    )
    print(
        "| front door | shards per member | groupcoord / shard-month | with a checkpoint "
        "every 5 s | every 60 s | KCL lease renewals | with a checkpoint every 5 s | every 60 s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in cost_rows(checkpoint, sync):
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
