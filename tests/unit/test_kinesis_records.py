"""groupcoord.client.kinesis's records: a KPL aggregate (built with aws-kinesis-agg, as the
KPL writes it) is split into its user records, each with its sub-sequence number, beside
records that are not aggregated."""

from __future__ import annotations

from datetime import UTC, datetime

from aws_kinesis_agg.aggregator import RecordAggregator

from groupcoord.client.kinesis import user_records


def test_a_kpl_aggregate_is_split_into_its_records_by_sub_sequence() -> None:
    aggregator = RecordAggregator()
    for i in range(3):
        assert aggregator.add_user_record(f"key-{i}", f"record-{i}".encode()) is None
    partition_key, _, data = aggregator.clear_and_get().get_contents()
    now = datetime.now(UTC)  # GetRecords' records carry it
    raw = [
        {"SequenceNumber": "100", "PartitionKey": "plain", "Data": b"alone"},
        {"SequenceNumber": "200", "PartitionKey": partition_key, "Data": data},
    ]
    raw = [{**r, "ApproximateArrivalTimestamp": now} for r in raw]
    records = user_records("shardId-000000000000", raw)
    assert [
        (r.sequence_number, r.sub_sequence_number, r.partition_key, r.data) for r in records
    ] == [
        ("100", 0, "plain", b"alone"),
        ("200", 0, "key-0", b"record-0"),
        ("200", 1, "key-1", b"record-1"),
        ("200", 2, "key-2", b"record-2"),
    ]
    assert records[2].position == {"sequenceNumber": "200", "subSequenceNumber": 1}
