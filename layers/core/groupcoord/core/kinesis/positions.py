"""Kinesis checkpoints (pure): a position is a sequence number (a decimal string of up to 129
digits) and a sub-sequence number (a record of a KPL aggregate), or the end of its shard. They
are compared as (integer, sub-sequence), the end after every record, and never move back, but
for an admin's commit from outside the group (which Kafka admits only while the group is
empty: the reset). A shard's end is accepted only for a shard the registry knows is closed,
or when the commit names the shard's children (a reshard the registry has not seen yet). A
member commits only on a shard assignable to its group: not done, its parents done."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import Errors
from .shards import ShardRow

if TYPE_CHECKING:  # a commit's message: the membership function never loads offsets' models
    from ...models.offsets import KinesisPosition

SEQUENCE_MAX_DIGITS = 129
SUB_SEQUENCE_DIGITS = 19  # an int64
# Above every digit: the end of a shard sorts after all its records.
_END = "~"
# Below every record's ("001..." and up).
_TIME = "000"


@dataclass(frozen=True)
class Position:
    """Where a group is in a shard: after the record at (sequence, sub_sequence), at the
    shard's end (then `sequence` may be the last record's, or None), or, set by an admin's
    reset to a time, before the first record that arrived at or after `timestamp_ms`."""

    sequence: str | None
    sub_sequence: int = 0
    shard_end: bool = False
    timestamp_ms: int | None = None

    @classmethod
    def of(cls, asked: KinesisPosition) -> Position:
        return cls(
            asked.sequence_number, asked.sub_sequence_number, asked.shard_end, asked.at_timestamp_ms
        )

    def order(self) -> str:
        """A string whose order is the positions' (DynamoDB compares strings byte-wise, and
        its numbers hold 38 digits): the digit count, the digits, the sub-sequence. A time
        sorts before every record (a member's first commit after it moves forward)."""
        if self.shard_end:
            return _END
        if self.timestamp_ms is not None:
            return _TIME
        assert self.sequence is not None
        digits = self.sequence.lstrip("0") or "0"
        return f"{len(digits):03d}{digits}.{self.sub_sequence:0{SUB_SEQUENCE_DIGITS}d}"


@dataclass(frozen=True)
class PositionAsked:
    """A commit's position for one partition, with the children it names at a shard's end."""

    position: Position
    children: tuple[str, ...] = ()


def position_error(
    row: ShardRow | None,
    committed: Position | None,
    asked: PositionAsked | None,
    *,
    admin: bool,
    parents_done: bool = True,
    done: bool = False,
) -> Errors:
    """Why a Kinesis partition's commit is refused, or NONE. `row`: the partition's shard
    (None: the topic is not Kinesis-backed); `committed`: the group's position now;
    `parents_done`: whether the group finished every parent of the shard; `done`: whether it
    finished the shard itself (done.row_done; a committed end counts whatever is passed).
    A member's commit on a shard that is not assignable to its group is refused with 27,
    retriable: the group's next assignment says who owns what. One exception: the end already
    committed, sent again (a client retrying a commit whose answer it lost)."""
    if row is None:
        # A position on a topic that is not Kinesis-backed means nothing here.
        return Errors.INVALID_REQUEST if asked is not None else Errors.NONE
    if asked is None:
        return Errors.INVALID_REQUEST  # a Kinesis partition's checkpoint is a position
    position = asked.position
    if position.timestamp_ms is not None and not admin:
        return Errors.INVALID_REQUEST  # a time is an admin's reset; a member commits records
    if not admin and not parents_done:
        return Errors.REBALANCE_IN_PROGRESS
    ended = committed is not None and committed.shard_end
    if not admin and (done or ended) and not (ended and position.shard_end):
        return Errors.REBALANCE_IN_PROGRESS
    if position.shard_end and not (row.shard.closed or asked.children):
        return Errors.INVALID_REQUEST  # an open shard has no end yet
    if not admin and committed is not None and position.order() < committed.order():
        return Errors.OFFSET_OUT_OF_RANGE  # never back (an admin's reset aside)
    return Errors.NONE


def refusal_message(
    code: Errors,
    row: ShardRow | None,
    asked: PositionAsked | None,
    topic: str,
    partition: int,
) -> str | None:
    """What position_error's 42 means for the partition, said to the caller (None for the
    other codes, which say it themselves)."""
    if code != Errors.INVALID_REQUEST:
        return None
    if row is None:
        return f"topic {topic} is not Kinesis-backed: commit an offset, not a kinesisPosition"
    shard = row.shard.shard_id
    position_given = asked is not None
    if asked is not None and asked.position.timestamp_ms is not None:
        return (
            f"Kinesis shard {shard} (partition {partition} of topic {topic}): atTimestampMs is "
            "an admin's reset from outside the group; a member commits a sequenceNumber"
        )
    if not position_given:
        return (
            f"partition {partition} of topic {topic} is Kinesis shard {shard}: its checkpoint "
            "is a kinesisPosition (a sequence number), not an offset"
        )
    return f"Kinesis shard {shard} (partition {partition} of topic {topic}) is open: no end yet"
