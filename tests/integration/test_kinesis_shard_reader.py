"""A shard's reader (groupcoord.client.kinesis_shard) against kinesis-local, on a clock whose
monotonic time the test moves (pauses of minutes pass at once) while its wall time is the
machine's (kinesis-local dates records by it, and AT_TIMESTAMP compares with those dates):

- GetRecords once a second, whether records flow or not, a full answer included;
- each answer renews the iterator, so a shard read at its pace never asks for another;
- after a pause of over five minutes the shard opens again after the last record handed
  over, and a LATEST start that saw nothing yet at when it started, never at a later LATEST."""

from __future__ import annotations

import time
import uuid
from typing import Any

import boto3
import pytest

from groupcoord.client.kinesis_shard import LATEST_CLOCK_MARGIN_MS, Pacing, ShardReader, StartAt
from tests.support.kinesis import REGION, Streams, streams_fixture

streams = streams_fixture()


class PausedClock:
    """Monotonic time that moves when the test says; the machine's wall time, unless the test
    sets one (`wall_ms`)."""

    def __init__(self) -> None:
        self.at = 1000.0
        self.wall_ms: int | None = None

    def monotonic_s(self) -> float:
        return self.at

    def now_ms(self) -> int:
        return self.wall_ms if self.wall_ms is not None else time.time_ns() // 1_000_000

    def advance(self, seconds: float) -> None:
        self.at += seconds


class Recorded:
    """A boto3 Kinesis client of its own on kinesis-local that notes each call's parameters."""

    def __init__(self, endpoint: str) -> None:
        self.client: Any = boto3.client("kinesis", endpoint_url=endpoint, region_name=REGION)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.client.meta.events.register("provide-client-params.kinesis.*", self._note)

    def _note(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls.append((model.name, dict(params)))

    def of(self, operation: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == operation]


@pytest.fixture
def kinesis(kinesis_endpoint: str) -> Recorded:
    return Recorded(kinesis_endpoint)


def one_shard(streams: Streams) -> tuple[str, str]:
    arn = streams.create(1, f"r-{uuid.uuid4().hex[:10]}")
    return arn, streams.shards(arn)[0]["ShardId"]


def put(streams: Streams, arn: str, *data: str) -> None:
    for d in data:
        streams.client.put_record(StreamARN=arn, PartitionKey="k", Data=d.encode())


def reader(kinesis: Recorded, arn: str, shard: str, clock: PausedClock, **options: Any) -> Any:
    options = {"has_parents": False, "start": StartAt(), "read_upto": None, "pacing": Pacing(),
               **options}  # fmt: skip
    return ShardReader(kinesis.client, arn, shard, clock=clock, **options)


def data(answer: dict[str, Any] | None) -> list[str]:
    assert answer is not None
    return [r["Data"].decode() for r in answer["Records"]]


def test_a_shard_is_read_once_a_second_full_answers_and_empty_ones_alike(
    streams: Streams, kinesis: Recorded
) -> None:
    """5 GetRecords a second is the shard's whole limit, shared by every group reading it."""
    arn, shard = one_shard(streams)
    clock = PausedClock()
    shard_reader = reader(kinesis, arn, shard, clock, pacing=Pacing(limit=2))
    put(streams, arn, "a", "b", "c")
    assert shard_reader.due_at == clock.monotonic_s()  # a new shard: at once
    assert data(shard_reader.fetch()) == ["a", "b"]  # full: more is waiting
    assert shard_reader.due_at == clock.monotonic_s() + 1.0
    clock.advance(1.0)
    assert data(shard_reader.fetch()) == ["c"]
    assert shard_reader.due_at == clock.monotonic_s() + 1.0
    clock.advance(1.0)
    assert data(shard_reader.fetch()) == []
    assert shard_reader.due_at == clock.monotonic_s() + 1.0


def test_each_answer_renews_the_iterator_so_a_shard_read_at_its_pace_keeps_it(
    streams: Streams, kinesis: Recorded
) -> None:
    arn, shard = one_shard(streams)
    clock = PausedClock()
    shard_reader = reader(kinesis, arn, shard, clock)
    seen = []
    for i in range(8):  # 8 minutes: past the 5 an iterator lives
        put(streams, arn, f"r{i}")
        seen += data(shard_reader.fetch())
        clock.advance(60.0)
    assert seen == [f"r{i}" for i in range(8)]
    assert len(kinesis.of("GetShardIterator")) == 1


def test_after_a_pause_of_over_five_minutes_the_shard_opens_after_the_last_record_handed_over(
    streams: Streams, kinesis: Recorded
) -> None:
    arn, shard = one_shard(streams)
    clock = PausedClock()
    shard_reader = reader(kinesis, arn, shard, clock)
    put(streams, arn, "a", "b", "c")
    answer = shard_reader.fetch()
    assert data(answer) == ["a", "b", "c"]
    last = answer["Records"][-1]["SequenceNumber"]
    shard_reader.read_upto = {"sequenceNumber": last, "subSequenceNumber": 0}  # handed over
    put(streams, arn, "d", "e")
    clock.advance(301.0)
    assert data(shard_reader.fetch()) == ["c", "d", "e"]  # the consumer skips c
    opened = kinesis.of("GetShardIterator")
    assert [o["ShardIteratorType"] for o in opened] == ["TRIM_HORIZON", "AT_SEQUENCE_NUMBER"]
    assert opened[1]["StartingSequenceNumber"] == last


def arrival_ms(streams: Streams, arn: str, shard: str) -> list[int]:
    """The shard's records' arrival times (Kinesis' clock), read apart from the reader."""
    opened = streams.client.get_shard_iterator(
        StreamARN=arn, ShardId=shard, ShardIteratorType="TRIM_HORIZON"
    )
    records = streams.client.get_records(ShardIterator=opened["ShardIterator"])["Records"]
    return [round(r["ApproximateArrivalTimestamp"].timestamp() * 1000) for r in records]


def test_a_latest_start_that_saw_nothing_reopens_where_it_started_not_at_a_later_latest(
    streams: Streams, kinesis: Recorded
) -> None:
    """The re-open is AT_TIMESTAMP of the LATEST start (less the clock margin), to the
    millisecond as Kinesis takes it: "before" came in the same second but earlier, so an
    endpoint that starts at the whole second (LocalStack truncates the timestamp it forwards)
    would hand it over."""
    arn, shard = one_shard(streams)
    put(streams, arn, "before")
    [before_ms] = arrival_ms(streams, arn, shard)
    reopen_at_ms = max(before_ms + 1, before_ms // 1000 * 1000 + 999)  # same second, later
    clock = PausedClock()
    clock.wall_ms = reopen_at_ms + LATEST_CLOCK_MARGIN_MS
    shard_reader = reader(kinesis, arn, shard, clock, start=StartAt.parse("LATEST"))
    assert data(shard_reader.fetch()) == []
    while time.time_ns() // 1_000_000 <= reopen_at_ms + 100:  # what comes next: after it
        time.sleep(0.05)
    put(streams, arn, "after-1", "after-2")
    clock.advance(301.0)
    assert data(shard_reader.fetch()) == ["after-1", "after-2"]
    opened = kinesis.of("GetShardIterator")
    assert [o["ShardIteratorType"] for o in opened] == ["LATEST", "AT_TIMESTAMP"]
    assert opened[1]["Timestamp"] == reopen_at_ms / 1000
