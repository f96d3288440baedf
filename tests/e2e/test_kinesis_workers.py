"""KinesisConsumer workers as processes (tests/support/kinesis_worker.py) against kinesis-local
and a coordinator on DynamoDB Local, with records that carry a sequence per partition key:

- three workers, one joining and one stopped by SIGTERM on the way, while the stream is split,
  merged and re-counted (UpdateShardCount): every record handled, each key's records in order
  across parents and children (by when each worker handled them: one clock for the machine);
  exactly once, each record's write in the sink table once; at least once, a record handled
  twice only when no accepted commit had covered it (the uncommitted tail of a move);
- the example (examples/kinesis_counts.py) stopped by SIGTERM: it commits and leaves the
  group at once, as the bench's handoff figure assumes;
- a zombie: a worker frozen (SIGSTOP) in the middle of a batch past its session, its shards
  taken over, then thawed: its commit of that batch, writes and all, is refused with the
  error the client raises to its user, and the table shows none of its writes.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.errors import Errors
from groupcoord.store.dynamo import make_client
from tests.e2e.helpers import CLASSIC_HEARTBEAT_MS, CLASSIC_SESSION_MS, CONSUMER_SESSION_MS
from tests.e2e.helpers import SETTINGS as E2E_SETTINGS
from tests.support.api import Api
from tests.support.kinesis import Streams, kinesis_deployment, new_topic, streams_fixture
from tests.support.kinesis_workers import (
    ROOT,
    Commit,
    Handled,
    KeyedProducer,
    WorkerProcess,
    every_record,
    marks,
    marks_out_of_order,
    missing,
    out_of_order,
    redelivered_after_commit,
    spread_keys,
    twice,
    until,
)
from tests.support.sink import create_sink_table, sink_name

EXAMPLE = ROOT / "examples" / "kinesis_counts.py"
TABLE = sink_name()
# The e2e timers (a consumer-protocol session of 5 s); classic members choose theirs.
SETTINGS = {
    **E2E_SETTINGS,
    # The sweeper finds new shards within a second (the shortest interval), while their
    # parents are still read: lineage gating, not when syncs happen, keeps each key in order.
    "groupcoord.kinesis.shard.sync.interval.ms": "1000",
    "group.consumer.assignment.interval.ms": "0",
    "groupcoord.sink.tables": TABLE,
}
CLASSIC = {"session_ms": CLASSIC_SESSION_MS, "heartbeat_ms": CLASSIC_HEARTBEAT_MS}
WAIT_S = 60.0  # generous: each wait takes seconds on an idle machine
BACKLOG_ROUNDS = 200  # records on the parents as they close: seconds of reading

streams = streams_fixture()


@pytest.fixture(scope="module")
def deployed(dynamodb_endpoint: str, kinesis_endpoint: str) -> Iterator[tuple[Api, Any]]:
    client = make_client(endpoint_url=dynamodb_endpoint)
    create_sink_table(client, TABLE)
    with kinesis_deployment(dynamodb_endpoint, SETTINGS) as (api, _):
        yield api, client


class Workers:
    """The test's worker processes, all in one group on one topic."""

    def __init__(self, folder: Path, api: Api, topic: str, protocol: str, **options: Any):
        self.folder, self.url, self.topic = folder, api.base_url, topic
        self.group = f"g-{uuid.uuid4().hex[:8]}"
        self.options = {"protocol": protocol, **(CLASSIC if protocol == "classic" else {})}
        self.options |= options
        self.started: dict[str, WorkerProcess] = {}

    def start(self, name: str, **options: Any) -> WorkerProcess:
        worker = WorkerProcess(
            self.folder, name, self.url, self.group, self.topic, **self.options, **options
        )
        self.started[name] = worker
        return worker

    def handled(self) -> list[Handled]:
        return [h for w in self.started.values() for h in w.handled()]

    def commits(self) -> list[Commit]:
        return [c for w in self.started.values() for c in w.commits()]

    def close(self) -> None:
        for worker in self.started.values():
            worker.close()


def keys_past(workers: Workers, keys: list[str], round_: int) -> bool:
    """Every key has a record of round `round_` or later handled."""
    latest: dict[str, int] = {}
    for h in workers.handled():
        latest[h.key] = max(latest.get(h.key, -1), h.seq)
    return all(latest.get(key, -1) >= round_ for key in keys)


def reshard_and_catch_up(
    workers: Workers, producer: KeyedProducer, keys: list[str], change: Callable[[], None]
) -> None:
    """Reshard (`change()`, which waits for ACTIVE) behind a backlog, so that the parents
    are still being read when the sweeper's next sync finds the children; then wait until
    every key's records put after it, which go to the children, are handled."""
    producer.burst(BACKLOG_ROUNDS)
    change()
    after = producer.rounds + 1
    watch = [producer, *workers.started.values()]
    until(lambda: keys_past(workers, keys, after), WAIT_S, f"children past {after}", watch)


def merge_across_lineages(streams: Streams, arn: str) -> None:
    """Merge the split's upper child with its neighbour, an original shard: the merged child
    has two parents, which two workers may own."""
    ordered = sorted(
        streams.open_shards(arn), key=lambda s: int(s["HashKeyRange"]["StartingHashKey"])
    )
    streams.merge(arn, ordered[1]["ShardId"], ordered[2]["ShardId"])


def recount(streams: Streams, arn: str, shards: int) -> None:
    name = arn.rsplit("/", 1)[1]
    streams.client.update_shard_count(
        StreamName=name, TargetShardCount=shards, ScalingType="UNIFORM_SCALING"
    )
    streams.wait_active(name)


@pytest.mark.parametrize(
    ("protocol", "exactly_once"),
    [("consumer", True), ("classic", False)],
    ids=["consumer-exactly-once", "classic-at-least-once"],
)
def test_workers_keep_every_keys_order_through_a_split_a_merge_and_a_recount(
    deployed: tuple[Api, Any], streams: Streams, tmp_path: Path, protocol: str, exactly_once: bool
) -> None:
    api, dynamodb = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    keys = spread_keys(uuid.uuid4().hex[:6])  # records on every shard, whatever the reshard
    workers = Workers(tmp_path, api, topic, protocol, table=TABLE if exactly_once else None)
    producer = KeyedProducer(streams.client, arn, keys)
    try:
        a, b = workers.start("a"), workers.start("b")
        watch = [producer, a, b]
        until(lambda: a.handled() and b.handled(), WAIT_S, "both workers handle records", watch)
        split = streams.open_shards(arn)[0]["ShardId"]
        reshard_and_catch_up(workers, producer, keys, lambda: streams.split(arn, split))
        reshard_and_catch_up(workers, producer, keys, lambda: merge_across_lineages(streams, arn))
        c = workers.start("c")  # joins (idle: 2 open shards): the group rebalances as it reshards
        reshard_and_catch_up(workers, producer, keys, lambda: recount(streams, arn, 4))
        until(lambda: c.handled(), WAIT_S, "the third worker handles records", [producer, a, b, c])
        assert a.terminate() == 0  # SIGTERM: its shards move on mid-stream
        time.sleep(1.0)
        sent = producer.stop()
        if exactly_once:
            done = lambda: len(marks(dynamodb, TABLE, keys)) == len(every_record(sent))  # noqa: E731
        else:
            done = lambda: not missing(workers.handled(), sent)  # noqa: E731
        until(done, WAIT_S, "every record handled", workers.started.values())
        time.sleep(1.0)  # anything more would be a record twice
        for worker in workers.started.values():
            assert worker.terminate() == 0
    finally:
        producer.stop()
        workers.close()
    handled, commits = workers.handled(), workers.commits()
    assert {h.worker for h in handled} == {"a", "b", "c"}
    assert len(streams.shards(arn)) == 9  # 2, a split (+2), a merge (+1), 4 new
    assert not missing(handled, sent)
    assert out_of_order(handled) == {}  # per key, across parents and children
    if exactly_once:
        found = marks(dynamodb, TABLE, keys)
        assert set(found) == every_record(sent)
        assert [record for record, m in found.items() if m["n"] != 1] == []  # none twice
        assert marks_out_of_order(found) == {}
    else:
        # Twice only what no accepted commit had covered: a revocation commits first.
        assert redelivered_after_commit(handled, commits) == [], twice(handled)


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_a_frozen_workers_commit_is_refused_and_none_of_its_writes_land(
    deployed: tuple[Api, Any], streams: Streams, tmp_path: Path, protocol: str
) -> None:
    api, dynamodb = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    keys = [f"{uuid.uuid4().hex[:6]}-{i}" for i in range(4)]
    workers = Workers(tmp_path, api, topic, protocol, table=TABLE)
    producer = KeyedProducer(streams.client, arn, keys)
    try:
        zombie = workers.start("zombie", hold_key=keys[0])
        held = until(lambda: zombie.event("holding"), WAIT_S, "a batch held", [producer, zombie])
        survivor = workers.start("survivor")
        zombie.freeze()  # in the middle of the batch: no heartbeats, no commit
        frozen = time.monotonic()
        # Its session runs out; the survivor takes its shards and commits past the held batch.
        partition, upto = held["p"], int(held["upto"])
        until(
            lambda: any(c.covers(partition, upto) for c in survivor.commits()),
            WAIT_S, "the survivor committed past the held batch", [producer, survivor],
        )  # fmt: skip
        zombie.release()
        zombie.thaw()  # it finishes the batch and commits it, writes and all
        answered = lambda: [c for c in zombie.commits() if c.t > frozen]  # noqa: E731
        (refused, *_) = until(answered, WAIT_S, "the zombie's commit answered", [zombie])
        sent = producer.stop()
        until(
            lambda: len(marks(dynamodb, TABLE, keys)) == len(every_record(sent)),
            WAIT_S, "every record written", [zombie, survivor],
        )  # fmt: skip
        for worker in (zombie, survivor):
            assert worker.terminate() == 0
    finally:
        producer.stop()
        workers.close()
    # What the zombie's user sees: the commit fenced (CommitFailed), the member unknown.
    assert refused.error == Errors.UNKNOWN_MEMBER_ID, refused
    assert partition in refused.positions and refused.writes > 0
    # The held batch, handled after the thaw (the zombie, rejoined, may have read on since).
    again = [
        h for h in zombie.handled() if h.t > frozen and h.partition == partition and h.sn <= upto
    ]
    assert again
    found = marks(dynamodb, TABLE, keys)
    assert [record for record, m in found.items() if m["n"] != 1] == []
    assert {found[h.key, h.seq]["by"] == {"survivor"} for h in again} == {True}


def test_the_example_commits_and_leaves_on_sigterm(
    deployed: tuple[Api, Any], streams: Streams, tmp_path: Path
) -> None:
    """A deploy stops a worker with SIGTERM: the example's handler makes it a graceful stop,
    so the group hears of its leave at once, not after its session (a killed worker stays a
    member until then)."""
    api, _ = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    keys = [f"{uuid.uuid4().hex[:6]}-{i}" for i in range(4)]
    producer = KeyedProducer(streams.client, arn, keys)
    workers = Workers(tmp_path, api, topic, "consumer", table=TABLE)
    args = ["--url", api.base_url, "--group", workers.group, "--topic", topic, "--table", TABLE]
    example = subprocess.Popen([sys.executable, str(EXAMPLE), *args])
    try:
        survivor = workers.start("survivor")

        def members() -> list[dict[str, Any]]:
            body = {"groupIds": [workers.group]}
            return api.ok("consumer-group-describe", body)["groups"][0]["members"]

        def shared() -> bool:
            found = members()
            return len(found) == 2 and all(m["assignment"]["topicPartitions"] for m in found)

        until(shared, WAIT_S, "the example and the survivor share the shards", [survivor])
        sent = time.monotonic()
        example.send_signal(signal.SIGTERM)
        assert example.wait(timeout=30) == 0
        left = [m["memberId"] for m in members()]
        assert time.monotonic() - sent < CONSUMER_SESSION_MS / 1000  # no expiry yet
        assert len(left) == 1, left  # the survivor alone: the example left
    finally:
        producer.stop()
        if example.poll() is None:
            example.kill()
        workers.close()
