"""One shard's reads for KinesisConsumer: where its iterator starts and restarts, how often
GetRecords is called, and what a throttle, an expired iterator or a long pause do.

- Pacing: every GetRecords of a shard comes at least `interval_s` (default 1 s, floor 0.2 s)
  after the one before, whatever that one answered. GetRecords allows 5 calls a second per
  shard, shared by every group (and every other reader) of the stream: at 1 s a group takes a
  fifth of it. A shard that is behind catches up through the size of each answer (`limit`, up
  to 10,000 records, and up to 10 MB), not through more calls.
- Throttling (ProvisionedThroughputExceededException, LimitExceededException): the next call
  waits a random time between `interval_s` and a bound that doubles per throttle in a row
  (2, 4, 8, then 10 s at the default interval); a call that succeeds resets it.
- Iterators: each answer's NextShardIterator is a new one, so a shard read at its pace never
  needs another. After ExpiredIteratorException, or a pause of over ITERATOR_LIFETIME_S
  (iterators live 5 minutes), the shard is opened again after the last record handed over,
  or at the checkpoint (`iterator_args`); never at LATEST once an iterator was held.
- AT_TIMESTAMP: Kinesis starts at the first record that arrived at or after the timestamp,
  to the millisecond. An endpoint that starts earlier (LocalStack forwards the timestamp
  truncated to whole seconds) hands over records from before it first; they are dropped
  (`_from_start`), as Kinesis would never have handed them over.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import dropwhile
from typing import Any, Protocol

from .errors import GroupcoordError

FETCH_INTERVAL_S = 1.0
MIN_FETCH_INTERVAL_S = 0.2  # 5 calls a second: the whole shard's GetRecords limit
BACKOFF_MAX_S = 10.0
MAX_LIMIT = 10_000  # GetRecords' Limit
# A shard iterator expires 5 minutes after it was handed out; 10 s of margin.
ITERATOR_LIFETIME_S = 290.0
# A LATEST start re-opened before any record came goes back this much before the first
# iterator was asked for (AT_TIMESTAMP, on Kinesis' arrival times): a clock ahead of
# Kinesis' by less than this skips nothing; a record up to this much older may be handed over.
LATEST_CLOCK_MARGIN_MS = 1000
THROTTLED = ("ProvisionedThroughputExceededException", "LimitExceededException")
EXPIRED = "ExpiredIteratorException"

TRIM_HORIZON, LATEST, AT_TIMESTAMP = "TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"
_AT_TIMESTAMP = re.compile(r"^AT_TIMESTAMP:([0-9]{1,13})$")


@dataclass(frozen=True)
class StartAt:
    """Where a shard without a checkpoint starts (the topic's initial position)."""

    kind: str = TRIM_HORIZON
    timestamp_ms: int | None = None  # AT_TIMESTAMP's

    @classmethod
    def parse(cls, text: str) -> StartAt:
        """`TRIM_HORIZON`, `LATEST` or `AT_TIMESTAMP:<epoch ms>` (the topic config's
        values); ValueError for anything else."""
        found = _AT_TIMESTAMP.fullmatch(text)
        if found:
            return cls(AT_TIMESTAMP, int(found.group(1)))
        if text in (TRIM_HORIZON, LATEST):
            return cls(text)
        raise ValueError(f"{text!r} is not TRIM_HORIZON, LATEST or AT_TIMESTAMP:<epoch ms>")

    def __str__(self) -> str:
        return f"{AT_TIMESTAMP}:{self.timestamp_ms}" if self.kind == AT_TIMESTAMP else self.kind


def topic_start(topic: Mapping[str, Any]) -> StartAt | None:
    """The topic's initial position from its `metadata` entry (`kinesisInitialPosition`, the
    topic config `groupcoord.kinesis.initial.position`), or None from a coordinator that does
    not tell it. A value this client cannot read is an error, not a silent TRIM_HORIZON."""
    position = topic.get("kinesisInitialPosition")  # {"type": ..., "timestampMs": ...}
    if position is None:
        return None
    try:
        if not isinstance(position, Mapping):
            raise ValueError(f"{position!r} is not an object")
        kind, at_ms = position.get("type"), position.get("timestampMs")
        return StartAt.parse(f"{kind}:{at_ms}" if kind == AT_TIMESTAMP else str(kind))
    except ValueError as error:
        raise GroupcoordError(
            f"topic {topic.get('name')}: {error}; pass KinesisConsumer(initial_position=...)"
        ) from None


def iterator_args(
    read_upto: Mapping[str, Any] | None,
    has_parents: bool,
    start: StartAt,
    latest_ms: int | None = None,
) -> dict[str, Any]:
    """GetShardIterator's position: at the last record handed over or the checkpoint
    (`read_upto`; the records at or below it are skipped by the caller, so a KPL aggregate
    resumes inside itself), where sequence number 0 (`groupcoord offsets reset --to-sequence
    0`) is the shard's first record, and a time (`atTimestampMs`, `groupcoord offsets reset
    --to-datetime`) AT_TIMESTAMP; else a child from TRIM_HORIZON (it starts where its
    parents end); else the topic's start, where LATEST, once an iterator was taken at
    `latest_ms`, is AT_TIMESTAMP of that moment: a re-open never skips what came since."""
    sequence = (read_upto or {}).get("sequenceNumber")
    reset_to = (read_upto or {}).get("atTimestampMs")
    if sequence is None and reset_to is not None:
        return {"ShardIteratorType": AT_TIMESTAMP, "Timestamp": int(reset_to) / 1000}
    if sequence is not None:
        if int(sequence) == 0:  # Kinesis refuses AT_SEQUENCE_NUMBER 0
            return {"ShardIteratorType": TRIM_HORIZON}
        return {"ShardIteratorType": "AT_SEQUENCE_NUMBER", "StartingSequenceNumber": sequence}
    if has_parents:
        return {"ShardIteratorType": TRIM_HORIZON}
    at_ms = start.timestamp_ms if start.kind == AT_TIMESTAMP else latest_ms
    if start.kind != TRIM_HORIZON and at_ms is not None:
        return {"ShardIteratorType": AT_TIMESTAMP, "Timestamp": at_ms / 1000}
    return {"ShardIteratorType": start.kind}


class Clock(Protocol):
    def monotonic_s(self) -> float: ...
    def now_ms(self) -> int: ...


class SystemClock:
    def monotonic_s(self) -> float:
        return time.monotonic()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Pacing:
    """How often a shard is read: `interval_s` between GetRecords (at least
    MIN_FETCH_INTERVAL_S), `limit` records an answer (1 to 10,000)."""

    interval_s: float = FETCH_INTERVAL_S
    limit: int = 1000

    def __post_init__(self) -> None:
        if not self.interval_s >= MIN_FETCH_INTERVAL_S:
            raise ValueError(
                f"fetch_interval_s must be at least {MIN_FETCH_INTERVAL_S} s: GetRecords allows "
                "5 calls a second per shard, shared by every reader of the stream"
            )
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be from 1 to {MAX_LIMIT} (GetRecords' Limit)")


class ShardReader:
    """A shard's iterator and GetRecords calls (the module's docstring). `read_upto` is the
    position of the last record handed over (at first, the checkpoint): the caller moves it
    on as it hands records over, and a re-open starts there."""

    def __init__(
        self,
        kinesis: Any,
        stream_arn: str,
        shard_id: str,
        *,
        has_parents: bool,
        start: StartAt,
        read_upto: Mapping[str, Any] | None,
        pacing: Pacing,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.kinesis = kinesis
        self.stream_arn = stream_arn
        self.shard_id = shard_id
        self.has_parents = has_parents
        self.start = start
        self.read_upto: Mapping[str, Any] | None = read_upto
        self.pacing = pacing
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.due_at = self.clock.monotonic_s()  # the first GetRecords: at once
        self.iterator: str | None = None
        self.iterator_at = 0.0  # when the iterator was handed out (at the latest)
        self.ended = False  # an answer without a next iterator: the shard's end
        self.backoff_s = 0.0
        self._latest_ms: int | None = None  # when a LATEST iterator was first asked for
        # An AT_TIMESTAMP iterator's timestamp, until a record at or after it was read.
        self._from_ms: int | None = None

    def fetch(self) -> dict[str, Any] | None:
        """One GetRecords (opening an iterator first if it has none, or an old one): its
        answer, or None when it was throttled or the iterator had expired (the shard is due
        again later, `due_at`)."""
        assert not self.ended, "the shard has ended"
        now = self.clock.monotonic_s()
        self.due_at = now + self.pacing.interval_s  # whatever this call answers
        errors = self.kinesis.exceptions.ClientError
        try:
            if self.iterator is None or now - self.iterator_at > ITERATOR_LIFETIME_S:
                self._open(now)
            answer: dict[str, Any] = self.kinesis.get_records(
                ShardIterator=self.iterator, Limit=self.pacing.limit
            )
        except errors as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == EXPIRED:
                self.iterator = None  # opened again, after read_upto, at the next call
            elif code in THROTTLED:
                self._back_off(now)
            else:
                raise
            return None
        self.backoff_s = 0.0
        if self._from_ms is not None:
            answer["Records"] = self._from_start(answer.get("Records", []))
        self.iterator = answer.get("NextShardIterator")
        self.iterator_at = now  # a new iterator: its 5 minutes start with this answer
        self.ended = self.iterator is None
        return answer

    def _open(self, now: float) -> None:
        args = iterator_args(self.read_upto, self.has_parents, self.start, self._latest_ms)
        if args["ShardIteratorType"] == LATEST:
            self._latest_ms = self.clock.now_ms() - LATEST_CLOCK_MARGIN_MS
        self.iterator = self.kinesis.get_shard_iterator(
            StreamARN=self.stream_arn, ShardId=self.shard_id, **args
        )["ShardIterator"]
        self.iterator_at = now
        at_timestamp = args["ShardIteratorType"] == AT_TIMESTAMP
        self._from_ms = round(args["Timestamp"] * 1000) if at_timestamp else None

    def _from_start(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """An AT_TIMESTAMP iterator's first records less those that arrived before its
        timestamp (an endpoint that started too early: see the module's docstring)."""
        start_ms = self._from_ms
        assert start_ms is not None
        kept = list(dropwhile(lambda record: _arrival_ms(record) < start_ms, records))
        if kept:
            self._from_ms = None  # the position is past the timestamp: nothing more to drop
        return kept

    def _back_off(self, now: float) -> None:
        interval = self.pacing.interval_s
        ceiling = max(BACKOFF_MAX_S, 2 * interval)
        self.backoff_s = min(ceiling, max(2 * interval, 2 * self.backoff_s))
        self.due_at = now + self.rng.uniform(interval, self.backoff_s)


def _arrival_ms(record: Mapping[str, Any]) -> int:
    """A record's ApproximateArrivalTimestamp (boto3 gives a datetime) in epoch ms."""
    arrived = record.get("ApproximateArrivalTimestamp")
    if arrived is None:
        return 2**63  # no arrival time: keep it
    seconds = arrived.timestamp() if hasattr(arrived, "timestamp") else float(arrived)
    return round(seconds * 1000)
