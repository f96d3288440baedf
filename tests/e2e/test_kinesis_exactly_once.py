"""examples/kinesis_counts.py against kinesis-local and DynamoDB Local: two workers count a
stream into a sink table exactly once while the stream is re-counted (UpdateShardCount) and
one worker stops gracefully (its shards handed over, measured); every counter exact."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.store.dynamo import make_client
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.kinesis import Streams, kinesis_deployment, new_topic, streams_fixture
from tests.support.sink import count_of, create_sink_table, sink_name

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kinesis_counts.py"
TABLE = sink_name()
SETTINGS = {
    "groupcoord.kinesis.shard.sync.interval.ms": "60000",
    "group.consumer.heartbeat.interval.ms": "200",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.assignment.interval.ms": "0",
    "groupcoord.sink.tables": TABLE,
    # A killed worker's shards move after its session: short, for the test (7 heartbeats).
    "group.consumer.session.timeout.ms": "1500",
    "group.consumer.min.session.timeout.ms": "1000",
}
KEYS = [f"key-{i}" for i in range(10)]


def example() -> Any:
    spec = importlib.util.spec_from_file_location("kinesis_counts", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def deployed(dynamodb_endpoint: str, kinesis_endpoint: str) -> Iterator[tuple[Api, Store, Any]]:
    client = make_client(endpoint_url=dynamodb_endpoint)
    create_sink_table(client, TABLE)
    with kinesis_deployment(dynamodb_endpoint, SETTINGS) as (api, store):
        yield api, store, client


streams = streams_fixture()


def committed(api: Api, group: str, topic: str) -> dict[int, dict[str, Any]]:
    """The group's checkpoints by partition."""
    topics = [{"name": topic, "partitionIndexes": [0, 1]}]
    answer = api.ok("offset-fetch", {"groups": [{"groupId": group, "topics": topics}]})
    partitions = answer["groups"][0]["topics"][0]["partitions"]
    return {p["partitionIndex"]: p["kinesisPosition"] for p in partitions if p["kinesisPosition"]}


def records_upto(streams: Streams, arn: str, positions: dict[int, dict[str, Any]]) -> int:
    """How many of the stream's records are at or below the checkpoints (per shard)."""
    total = 0
    shards = streams.shards(arn)
    for partition, position in positions.items():
        iterator = streams.client.get_shard_iterator(
            StreamARN=arn, ShardId=shards[partition]["ShardId"], ShardIteratorType="TRIM_HORIZON"
        )["ShardIterator"]
        records = streams.client.get_records(ShardIterator=iterator, Limit=10000)["Records"]
        upto = int(position["sequenceNumber"])
        total += sum(1 for r in records if int(r["SequenceNumber"]) <= upto)
    return total


class Worker:
    def __init__(
        self, api: Api, group: str, topic: str, streams: Streams, dynamodb: Any = None
    ) -> None:
        self.stop = threading.Event()
        self.failures: list[BaseException] = []
        self.consumer = example().consumer(
            api.base_url, group, topic, TABLE, dynamodb, kinesis=streams.client,
            fetch_interval_s=0.2,
        )  # fmt: skip
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.consumer.run(self.stop)
        except BaseException as error:
            self.failures.append(error)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=20)
        assert not self.thread.is_alive() and not self.failures, self.failures


def test_two_workers_count_exactly_once_through_a_reshard_and_a_handoff(
    deployed: tuple[Api, Store, Any], streams: Streams
) -> None:
    api, _, client = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    prefix = uuid.uuid4().hex[:6]
    sent: Counter[str] = Counter()

    def put(rounds: int) -> None:
        entries = [
            {"PartitionKey": f"{prefix}-{key}", "Data": f"{i}".encode()}
            for i in range(rounds)
            for key in KEYS
        ]
        answer = streams.client.put_records(StreamARN=arn, Records=entries)
        assert answer["FailedRecordCount"] == 0
        sent.update(entry["PartitionKey"] for entry in entries)

    def counted() -> Counter[str]:
        return Counter({k: count_of(client, TABLE, k) for k in sent})

    def settled(timeout_s: float = 40.0) -> None:
        deadline = time.monotonic() + timeout_s
        while counted() != sent:
            for w in workers:
                assert not w.failures, w.failures
            assert time.monotonic() < deadline, (counted(), sent)
            time.sleep(0.2)

    group = f"g-{uuid.uuid4().hex[:8]}"
    workers = [Worker(api, group, topic, streams) for _ in range(2)]
    try:
        put(5)
        settled()
        name = arn.rsplit("/", 1)[1]
        streams.client.update_shard_count(
            StreamName=name, TargetShardCount=4, ScalingType="UNIFORM_SCALING"
        )
        streams.wait_active(name)
        put(5)
        settled()
        # A graceful stop: the other worker takes its shards over.
        leaving = workers.pop(0)
        leaving.close()
        put(5)
        settled()
        time.sleep(1.0)
        assert counted() == sent  # none twice
    finally:
        for w in workers:
            w.close()


@pytest.mark.parametrize("exactly_once", [True, False])
def test_a_sigkilled_workers_shards_resume_from_its_last_commit(
    deployed: tuple[Api, Store, Any],
    streams: Streams,
    kinesis_endpoint: str,
    dynamodb_endpoint: str,
    exactly_once: bool,
) -> None:
    """The example as a process, SIGKILLed mid-stream: the survivor takes its shards after
    the session timeout, from the killed worker's last checkpoint; exactly once, it counts
    nothing twice; at least once, at most the killed worker's uncommitted tail twice."""
    api, _, client = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    prefix = uuid.uuid4().hex[:6]
    sent: Counter[str] = Counter()
    # One PutRecords (the counts need no order across keys; per key, order is the other
    # tests' business).
    entries = [
        {"PartitionKey": f"{prefix}-{key}", "Data": f"{i}".encode()}
        for i in range(20)
        for key in KEYS
    ]
    assert streams.client.put_records(StreamARN=arn, Records=entries)["FailedRecordCount"] == 0
    sent.update(entry["PartitionKey"] for entry in entries)
    group = f"g-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "AWS_ENDPOINT_URL_KINESIS": kinesis_endpoint}
    args = ["--url", api.base_url, "--group", group, "--topic", topic, "--table", TABLE]
    if not exactly_once:
        # Checkpoints twice a second: killed soon after its first, with a tail counted since.
        args += ["--at-least-once", dynamodb_endpoint, "--commit-interval", "0.5"]
    process = subprocess.Popen([sys.executable, str(EXAMPLE), *args], env=env)
    try:
        # Killed once it has checkpointed something (and counted more since, at least once).
        deadline = time.monotonic() + 30
        while not committed(api, group, topic):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    counted_at_kill = sum(count_of(client, TABLE, k) for k in sent)
    checkpointed = records_upto(streams, arn, committed(api, group, topic))
    survivor = Worker(api, group, topic, streams, dynamodb=None if exactly_once else client)
    try:
        deadline = time.monotonic() + 40  # the killed member's session (1.5 s) and the rest
        while any(count_of(client, TABLE, k) < n for k, n in sent.items()):
            assert not survivor.failures, survivor.failures
            assert time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1.0)
        counted = Counter({k: count_of(client, TABLE, k) for k in sent})
    finally:
        survivor.close()
    if exactly_once:
        assert counted == sent  # none twice
    else:
        # Every record, and twice at most the killed worker's tail past its checkpoints.
        assert checkpointed > 0
        assert all(counted[k] >= n for k, n in sent.items())
        assert 0 <= sum(counted.values()) - sum(sent.values()) <= counted_at_kill - checkpointed
