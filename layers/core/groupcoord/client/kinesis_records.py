"""Kinesis records as KinesisConsumer hands them over: GetRecords' records with KPL aggregates
split into their user records (the `aws-kinesis-agg` package of the `kinesis` extra), each with
its position (sequence number, sub-sequence number), and the order of positions."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import GroupcoordError

# The KPL's aggregated record: these four bytes, a protobuf message, its MD5 digest
# (https://github.com/awslabs/amazon-kinesis-producer/blob/master/aggregation-format.md).
KPL_MAGIC = b"\xf3\x89\x9a\xc2"
_DIGEST_SIZE = 16


@dataclass(frozen=True)
class KinesisRecord:
    """One user record (a KPL aggregate's records come one by one, by sub-sequence)."""

    shard_id: str
    sequence_number: str
    sub_sequence_number: int
    partition_key: str
    data: bytes

    @property
    def position(self) -> dict[str, Any]:
        return {
            "sequenceNumber": self.sequence_number,
            "subSequenceNumber": self.sub_sequence_number,
        }


def position_order(position: Mapping[str, Any]) -> tuple[int, int]:
    """A position as the coordinator orders it: (sequence number, sub-sequence number)."""
    return (int(position.get("sequenceNumber") or 0), int(position.get("subSequenceNumber", 0)))


def is_kpl_aggregate(data: bytes) -> bool:
    """Whether a record's data is a KPL aggregate: the magic bytes and a digest that matches,
    the test the KPL's own de-aggregators make."""
    if not data.startswith(KPL_MAGIC) or len(data) <= len(KPL_MAGIC) + _DIGEST_SIZE:
        return False
    message, digest = data[len(KPL_MAGIC) : -_DIGEST_SIZE], data[-_DIGEST_SIZE:]
    return hashlib.md5(message, usedforsecurity=False).digest() == digest


def user_records(shard_id: str, raw: Iterable[Mapping[str, Any]]) -> list[KinesisRecord]:
    """GetRecords' records as user records: KPL aggregates split (aws-kinesis-agg). Without
    that package a batch holding an aggregate is refused (GroupcoordError), before any of it
    is handed over: passed on whole, its records would reach the handler as one opaque blob
    and be checkpointed as processed."""
    raw = list(raw)
    try:
        from aws_kinesis_agg.deaggregator import iter_deaggregate_records
    except ImportError:
        return [_plain(shard_id, r) for r in raw]
    records = []
    for found in iter_deaggregate_records(raw, data_format="Boto3"):
        r = found["kinesis"]
        aggregated = "subSequenceNumber" in r  # its records come base64-encoded
        data = base64.b64decode(r["data"]) if aggregated else r["data"]
        sub = int(r.get("subSequenceNumber", 0))
        records.append(KinesisRecord(shard_id, r["sequenceNumber"], sub, r["partitionKey"], data))
    return records


def _plain(shard_id: str, r: Mapping[str, Any]) -> KinesisRecord:
    if is_kpl_aggregate(r["Data"]):
        raise GroupcoordError(
            f"record {r['SequenceNumber']} of {shard_id} is a KPL aggregate, and splitting it "
            "needs the aws-kinesis-agg package: install groupcoord with the `kinesis` extra"
        )
    return KinesisRecord(shard_id, r["SequenceNumber"], 0, r["PartitionKey"], r["Data"])
