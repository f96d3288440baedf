"""A shard's reader (groupcoord.client.kinesis_shard) on the errors Kinesis answers: an expired
iterator is replaced after the last record handed over (a LATEST start that saw nothing goes
back to when it started), and a throttle pauses the shard a jittered, growing time, never less
than its regular interval, on a controlled clock.

botocore's Stubber on a real boto3 client, not kinesis-local: kinesis-local neither throttles
nor lets a test expire an iterator short of waiting five real minutes. The Stubber checks each
call's parameters against the ones expected here and the answers against Kinesis' model."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from groupcoord.client.kinesis_shard import (
    LATEST_CLOCK_MARGIN_MS,
    Pacing,
    ShardReader,
    StartAt,
)
from tests.support.clock import FakeClock

ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
SHARD = "shardId-000000000000"
LIMIT = 1000


@contextmanager
def stubbed() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "kinesis", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def iterator_at(stubber: Stubber, iterator: str, **position: Any) -> None:
    expected = {"StreamARN": ARN, "ShardId": SHARD, **position}
    stubber.add_response("get_shard_iterator", {"ShardIterator": iterator}, expected)


def records(stubber: Stubber, iterator: str, sequences: list[str], next_: str) -> None:
    found = [
        {"SequenceNumber": s, "PartitionKey": "k", "Data": s.encode(),
         "ApproximateArrivalTimestamp": datetime.now(UTC)}
        for s in sequences
    ]  # fmt: skip
    answer = {"Records": found, "NextShardIterator": next_, "MillisBehindLatest": 0}
    stubber.add_response("get_records", answer, {"ShardIterator": iterator, "Limit": LIMIT})


def fails(stubber: Stubber, iterator: str, code: str) -> None:
    expected = {"ShardIterator": iterator, "Limit": LIMIT}
    stubber.add_client_error("get_records", code, http_status_code=400, expected_params=expected)


def reader(client: Any, clock: FakeClock, **options: Any) -> ShardReader:
    options = {"has_parents": False, "start": StartAt(), "read_upto": None, **options}
    return ShardReader(client, ARN, SHARD, pacing=Pacing(), clock=clock, **options)


def sequences(answer: dict[str, Any] | None) -> list[str]:
    assert answer is not None
    return [r["SequenceNumber"] for r in answer["Records"]]


def test_an_expired_iterator_is_replaced_at_the_last_record_handed_over() -> None:
    clock = FakeClock()
    with stubbed() as (client, stubber):
        shard = reader(client, clock, read_upto={"sequenceNumber": "100", "subSequenceNumber": 0})
        iterator_at(stubber, "it-1", ShardIteratorType="AT_SEQUENCE_NUMBER",
                    StartingSequenceNumber="100")  # fmt: skip
        records(stubber, "it-1", ["100", "101", "102"], next_="it-2")
        fails(stubber, "it-2", "ExpiredIteratorException")
        iterator_at(stubber, "it-3", ShardIteratorType="AT_SEQUENCE_NUMBER",
                    StartingSequenceNumber="102")  # fmt: skip
        records(stubber, "it-3", ["102", "103"], next_="it-4")

        assert sequences(shard.fetch()) == ["100", "101", "102"]
        shard.read_upto = {"sequenceNumber": "102", "subSequenceNumber": 0}  # handed over
        clock.advance(1000)
        assert shard.fetch() is None
        assert shard.due_at == clock.monotonic_s() + 1.0  # at the regular pace, not at once
        clock.advance(1000)
        assert sequences(shard.fetch()) == ["102", "103"]  # the caller skips 102


def test_an_expired_latest_start_that_saw_nothing_reopens_at_when_it_started() -> None:
    """Opening at LATEST again would skip whatever came since the first iterator."""
    clock = FakeClock()
    started_ms = clock.now_ms()
    with stubbed() as (client, stubber):
        shard = reader(client, clock, start=StartAt.parse("LATEST"))
        iterator_at(stubber, "it-1", ShardIteratorType="LATEST")
        records(stubber, "it-1", [], next_="it-2")
        fails(stubber, "it-2", "ExpiredIteratorException")
        back_to = (started_ms - LATEST_CLOCK_MARGIN_MS) / 1000
        iterator_at(stubber, "it-3", ShardIteratorType="AT_TIMESTAMP", Timestamp=back_to)
        records(stubber, "it-3", ["7"], next_="it-4")

        assert sequences(shard.fetch()) == []
        clock.advance(60_000)
        assert shard.fetch() is None
        clock.advance(1000)
        assert sequences(shard.fetch()) == ["7"]


@pytest.mark.parametrize(
    "code", ["ProvisionedThroughputExceededException", "LimitExceededException"]
)
def test_a_throttled_shard_waits_a_jittered_growing_pause_then_its_regular_one(code: str) -> None:
    clock = FakeClock()
    bounds = [2.0, 4.0, 8.0, 10.0, 10.0, 10.0]  # at the default 1 s interval
    with stubbed() as (client, stubber):
        shard = reader(client, clock, rng=random.Random(7))
        iterator_at(stubber, "it-1", ShardIteratorType="TRIM_HORIZON")
        for _ in bounds:
            fails(stubber, "it-1", code)
        records(stubber, "it-1", ["1"], next_="it-2")
        fails(stubber, "it-2", code)

        pauses = []
        for bound in bounds:
            assert shard.fetch() is None
            pause = shard.due_at - clock.monotonic_s()
            assert 1.0 <= pause <= bound, (pause, bound)
            pauses.append(pause)
            clock.advance(round(pause * 1000) + 1)
        assert len(set(pauses)) == len(pauses)  # jittered, not a fixed schedule
        assert sequences(shard.fetch()) == ["1"]
        assert shard.due_at == clock.monotonic_s() + 1.0
        clock.advance(1000)
        assert shard.fetch() is None  # a new streak starts from the bottom again
        assert 1.0 <= shard.due_at - clock.monotonic_s() <= 2.0


def test_the_pauses_of_many_throttled_shards_spread_over_their_window() -> None:
    """The jitter keeps shards (and members) throttled together from retrying together."""
    clock = FakeClock()
    pauses = []
    with stubbed() as (client, stubber):
        for i in range(40):
            shard = reader(client, clock, rng=random.Random(i))
            iterator_at(stubber, f"it-{i}", ShardIteratorType="TRIM_HORIZON")
            fails(stubber, f"it-{i}", "ProvisionedThroughputExceededException")
            assert shard.fetch() is None
            pauses.append(shard.due_at - clock.monotonic_s())
    assert min(pauses) < 1.3 and max(pauses) > 1.7
