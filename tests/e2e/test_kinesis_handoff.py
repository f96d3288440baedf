"""How soon groupcoord.client.kinesis starts a shard the group hands it, against kinesis-local
and a coordinator at the default 5 s heartbeat: children once their parent's end is
committed (the consumer heartbeats at once, not at its interval), and a shard a stopped worker
left (opened as soon as the assignment arrives, not when the consumer's own GetRecords pause
is over). The consumers pause between empty fetches (30 s; 10 s in the children's test), well
beyond each test's bound on a start, so a start that waited on the pause would show."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from groupcoord.client import TopicPartition
from groupcoord.client.kinesis import KinesisConsumer, KinesisRecord
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.kinesis import (
    Streams,
    deployment_fixture,
    fetched_position,
    new_topic,
    streams_fixture,
)

HEARTBEAT_S = 5.0
PAUSE_S = 30.0  # the consumers' fetch_interval_s: far longer than any start below
# The children's test waits out one pause on the parent before its end shows (its last fetch
# found nothing yet): a shorter one there, still four times that test's bound on a start.
CHILDREN_PAUSE_S = 10.0
SETTINGS = {
    "groupcoord.kinesis.shard.sync.interval.ms": "60000",
    "group.consumer.heartbeat.interval.ms": str(int(HEARTBEAT_S * 1000)),
    "group.consumer.assignment.interval.ms": "0",
}
deployed = deployment_fixture(SETTINGS)
streams = streams_fixture()


class Worker:
    """A KinesisConsumer run on its thread, noting when each partition's records came."""

    def __init__(
        self, api: Api, group: str, topic: str, streams: Streams, pause_s: float = PAUSE_S
    ) -> None:
        self.came: dict[int, list[float]] = {}
        self.failures: list[BaseException] = []
        self.stop = threading.Event()
        self.consumer = KinesisConsumer(
            api.base_url, group, topic, self._handle, kinesis=streams.client,
            fetch_interval_s=pause_s,
        )  # fmt: skip
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _handle(self, tp: TopicPartition, records: list[KinesisRecord]) -> None:
        self.came.setdefault(tp.partition, []).append(time.monotonic())

    def _run(self) -> None:
        try:
            self.consumer.run(self.stop)
        except BaseException as error:
            self.failures.append(error)

    def owned(self) -> set[int]:
        return {tp.partition for tp in self.consumer.member.assignment()}

    def first(self, partitions: Callable[[int], bool], after: float = 0.0) -> float:
        """When the first batch of a partition that `partitions` accepts came after `after`
        (0: none yet)."""
        found = [t for p, ts in self.came.items() if partitions(p) for t in ts if t > after]
        return min(found, default=0.0)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive() and not self.failures, self.failures


def until(condition: Callable[[], Any], workers: list[Worker], timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        for worker in workers:
            assert not worker.failures, worker.failures
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return found


class Producer:
    """A record every 20 ms on each open shard that `wanted` accepts (by its index in
    ListShards' order, which is the registry's for these streams)."""

    def __init__(self, streams: Streams, arn: str, wanted: Callable[[int], bool]) -> None:
        self.streams, self.arn, self.wanted = streams, arn, wanted
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            for i, shard in enumerate(self.streams.shards(self.arn)):
                if self.wanted(i) and "EndingSequenceNumber" not in shard["SequenceNumberRange"]:
                    self.streams.client.put_record(
                        StreamARN=self.arn, PartitionKey="k", Data=b"x",
                        ExplicitHashKey=shard["HashKeyRange"]["StartingHashKey"],
                    )  # fmt: skip
            time.sleep(0.02)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


def test_children_start_at_once_after_their_parent_s_end(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    producer = Producer(streams, arn, lambda i: True)
    worker = Worker(api, f"g-{time.monotonic_ns()}", topic, streams, CHILDREN_PAUSE_S)
    try:
        until(lambda: worker.first(lambda p: p == 0), [worker])
        streams.split(arn, streams.shards(arn)[0]["ShardId"])
        group = worker.consumer.member.group_id
        until(lambda: (fetched_position(api, group, topic, 0) or {}).get("shardEnd"), [worker])
        ended = time.monotonic()  # within a poll of the end's commit
        started = until(lambda: worker.first(lambda p: p > 0), [worker]) - ended
        assert started < HEARTBEAT_S / 2, f"children started {started:.2f} s after the end"
    finally:
        producer.close()
        worker.close()


def test_a_shard_handed_over_is_opened_as_soon_as_it_is_assigned(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, _ = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    group = f"g-{time.monotonic_ns()}"
    # Records on both shards before the workers start, so that each one's first GetRecords
    # (at once) finds some: a 30 s pause follows every read. Once the group settled, records on
    # the shard that moves only.
    moving: list[int] = []
    producer = Producer(streams, arn, lambda i: not moving or i == moving[0])
    a, b = Worker(api, group, topic, streams), Worker(api, group, topic, streams)
    try:
        until(lambda: len(a.owned()) == len(b.owned()) == 1, [a, b])
        (moved,) = a.owned()
        moving.append(moved)
        until(lambda: a.first(lambda p: p == moved), [a, b])
        stopped = time.monotonic()
        a.close()  # commits and leaves
        took = until(lambda: b.first(lambda p: p == moved, stopped), [b]) - stopped
        # The survivor hears of it at its next heartbeat, then opens it at once.
        assert took < HEARTBEAT_S + 1.5, f"handed over in {took:.2f} s"
    finally:
        producer.close()
        a.close()
        b.close()
