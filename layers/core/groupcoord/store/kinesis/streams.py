"""The only code that calls Kinesis: DescribeStreamSummary and ListShards, for the shard
registry (the coordinator never reads records). boto3's client, made at first use per region,
reaches `AWS_ENDPOINT_URL_KINESIS` when that is set (kinesis-local in the tests)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ...core.kinesis.shards import Shard

# ListShards answers at most 1,000 shards a page (Kinesis' own maximum is 10,000).
PAGE_SIZE = 1000
# Shard fields are bounded before they are stored: Kinesis' own bounds (ids up to 128
# characters, sequence numbers up to 129 digits, hash keys below 2**128).
SHARD_ID_MAX_CHARS = 128
SEQUENCE_MAX_DIGITS = 129
HASH_KEY_MAX_DIGITS = 39


class StreamError(Exception):
    """Kinesis did not answer what the registry needs."""


class StreamNotFound(StreamError):
    """No such stream (or not one this deployment may see)."""


class StreamForbidden(StreamError):
    """This deployment may not list the stream (IAM: the template's KinesisStreamArns)."""


class StreamUnavailable(StreamError):
    """Kinesis throttled, refused or could not be reached; worth a later try."""


@dataclass(frozen=True)
class StreamSummary:
    created_ms: int
    status: str  # CREATING, DELETING, ACTIVE, UPDATING


def _region(arn: str) -> str:
    return arn.split(":")[3]


def _kinesis_client(region: str) -> Any:
    import boto3
    from botocore.config import Config

    # A join may sync (service/kinesis/sync.py): a Kinesis that does not answer costs it a
    # few seconds at most, and the sweeper tries again.
    config = Config(
        retries={"total_max_attempts": 2, "mode": "standard"},
        connect_timeout=1,
        read_timeout=3,
    )
    return boto3.session.Session().client("kinesis", region_name=region, config=config)


def _digits(value: Any, max_digits: int) -> str:
    text = str(value)
    if not (text.isascii() and text.isdigit() and len(text) <= max_digits):
        raise StreamError(f"Kinesis answered a malformed number: {text[:40]!r}")
    return text


def _shard(entry: dict[str, Any]) -> Shard:
    shard_id = str(entry["ShardId"])
    if not 1 <= len(shard_id) <= SHARD_ID_MAX_CHARS:
        raise StreamError("Kinesis answered a malformed shard id")
    parents = tuple(
        str(entry[name])[:SHARD_ID_MAX_CHARS]
        for name in ("ParentShardId", "AdjacentParentShardId")
        if entry.get(name)
    )
    hashes = entry["HashKeyRange"]
    sequences = entry["SequenceNumberRange"]
    ending = sequences.get("EndingSequenceNumber")
    return Shard(
        shard_id=shard_id,
        parents=parents,
        hash_start=_digits(hashes["StartingHashKey"], HASH_KEY_MAX_DIGITS),
        hash_end=_digits(hashes["EndingHashKey"], HASH_KEY_MAX_DIGITS),
        starting_sequence=_digits(sequences["StartingSequenceNumber"], SEQUENCE_MAX_DIGITS),
        ending_sequence=None if ending is None else _digits(ending, SEQUENCE_MAX_DIGITS),
    )


class Streams:
    """Kinesis' answers about streams, by stream ARN."""

    def __init__(self, client_for_region: Callable[[str], Any] = _kinesis_client) -> None:
        self._client_for_region = client_for_region
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _client(self, arn: str) -> Any:
        region = _region(arn)
        with self._lock:
            if region not in self._clients:
                self._clients[region] = self._client_for_region(region)
            return self._clients[region]

    def _call(self, arn: str, operation: str, **args: Any) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self._client(arn), operation)(**args)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == "ResourceNotFoundException":
                raise StreamNotFound(arn) from None
            if code in ("AccessDeniedException", "AccessDenied"):
                raise StreamForbidden(arn) from None
            raise StreamUnavailable(f"{operation}: {code}") from None
        except BotoCoreError as error:
            raise StreamUnavailable(f"{operation}: {type(error).__name__}") from None

    def describe(self, arn: str) -> StreamSummary:
        summary = self._call(arn, "describe_stream_summary", StreamARN=arn)
        found = summary["StreamDescriptionSummary"]
        created = found["StreamCreationTimestamp"]
        return StreamSummary(
            created_ms=int(created.timestamp() * 1000), status=str(found["StreamStatus"])
        )

    def list_shards(self, arn: str, max_shards: int) -> list[Shard]:
        """Every shard ListShards shows (open and closed, within the retention), a page at a
        time, reading no more than `max_shards` and a page."""
        return self._pages(arn, max_shards)

    def open_at(self, arn: str, at_ms: int, max_shards: int) -> frozenset[str]:
        """The ids of the shards that were open at `at_ms` (ListShards' ShardFilter
        AT_TIMESTAMP, as KCL asks it for an AT_TIMESTAMP start)."""
        at = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
        found = self._pages(arn, max_shards, ShardFilter={"Type": "AT_TIMESTAMP", "Timestamp": at})
        return frozenset(shard.shard_id for shard in found)

    def _pages(self, arn: str, max_shards: int, **first: Any) -> list[Shard]:
        """ListShards' pages; `first`'s arguments (a ShardFilter) go with the first page only,
        as Kinesis wants: the next ones carry the NextToken alone."""
        shards: list[Shard] = []
        page = self._call(arn, "list_shards", StreamARN=arn, MaxResults=PAGE_SIZE, **first)
        while True:
            shards += [_shard(entry) for entry in page.get("Shards", ())]
            token = page.get("NextToken")
            if not token or len(shards) > max_shards:
                return shards
            page = self._call(arn, "list_shards", NextToken=token, MaxResults=PAGE_SIZE)
