"""Without aws-kinesis-agg (groupcoord installed without the `kinesis` extra's de-aggregation
library), a KPL aggregate is refused with an error that names the extra, instead of reaching
the handler as one opaque record and being checkpointed as processed; plain records pass."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest
from aws_kinesis_agg.aggregator import RecordAggregator

from groupcoord.client.errors import GroupcoordError
from groupcoord.client.kinesis_records import KPL_MAGIC, is_kpl_aggregate, user_records

SHARD = "shardId-000000000000"


def aggregate(count: int) -> tuple[str, bytes]:
    """A KPL aggregate of `count` user records, as aws-kinesis-agg (and the KPL) writes it."""
    aggregator = RecordAggregator()
    for i in range(count):
        assert aggregator.add_user_record(f"key-{i}", f"record-{i}".encode()) is None
    partition_key, _, data = aggregator.clear_and_get().get_contents()
    return partition_key, data


def raw(sequence: str, key: str, data: bytes) -> dict[str, object]:
    return {
        "SequenceNumber": sequence,
        "PartitionKey": key,
        "Data": data,
        "ApproximateArrivalTimestamp": datetime.now(UTC),
    }


@pytest.fixture
def without_agg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aws_kinesis_agg.deaggregator", None)  # ImportError


@pytest.mark.usefixtures("without_agg")
def test_an_aggregate_without_the_library_is_an_error_naming_the_extra() -> None:
    key, data = aggregate(3)
    batch = [raw("100", "plain", b"alone"), raw("200", key, data)]
    with pytest.raises(GroupcoordError, match=r"record 200 of shardId-0+ is a KPL .*`kinesis`"):
        user_records(SHARD, batch)


@pytest.mark.usefixtures("without_agg")
def test_plain_records_pass_without_the_library() -> None:
    # The magic bytes alone, without the digest that closes an aggregate, are just data.
    lookalike = KPL_MAGIC + b"not an aggregate, no digest"
    batch = [raw("100", "a", b"alone"), raw("101", "b", lookalike)]
    found = [(r.sequence_number, r.data) for r in user_records(SHARD, batch)]
    assert found == [("100", b"alone"), ("101", lookalike)]


def test_an_aggregate_is_told_by_its_magic_and_its_digest() -> None:
    _, data = aggregate(2)
    assert is_kpl_aggregate(data)
    assert not is_kpl_aggregate(data[:-1] + bytes([data[-1] ^ 1]))  # digest off by a bit
    assert not is_kpl_aggregate(b"plain")
