"""Kinesis checkpoints (core/kinesis/positions.py): ordered as (integer, sub-sequence) with the
shard's end last, never moved back but by an admin, a shard's end only for a closed shard or
with its children named, a member's commit only on a shard assignable to its group (not done,
its parents done), a repeated end aside."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from groupcoord.core.kinesis.positions import (
    Position,
    PositionAsked,
    position_error,
    refusal_message,
)
from groupcoord.core.kinesis.shards import Shard, ShardRow
from groupcoord.errors import Errors
from groupcoord.models.offsets import KinesisPosition

sequences = st.integers(0, 10**129 - 1)
subs = st.integers(0, 2**63 - 1)
OPEN = ShardRow(0, Shard("shardId-000000000000"))
CLOSED = ShardRow(0, Shard("shardId-000000000000", ending_sequence="99"))


@given(sequences, subs, sequences, subs)
def test_order_is_integer_then_sub_sequence(a: int, i: int, b: int, j: int) -> None:
    left, right = Position(str(a), i), Position(str(b), j)
    assert (left.order() < right.order()) == ((a, i) < (b, j))
    assert (left.order() == right.order()) == ((a, i) == (b, j))
    assert left.order() < Position(None, shard_end=True).order()


def asked(sequence: str | None, sub: int = 0, end: bool = False, children=()) -> PositionAsked:
    return PositionAsked(Position(sequence, sub, end), tuple(children))


def test_positions_never_move_back_but_for_an_admin() -> None:
    at = Position("500", 3)
    assert position_error(OPEN, at, asked("500", 3), admin=False) == Errors.NONE  # a retry
    assert position_error(OPEN, at, asked("500", 4), admin=False) == Errors.NONE
    assert position_error(OPEN, at, asked("1000"), admin=False) == Errors.NONE
    assert position_error(OPEN, at, asked("500", 2), admin=False) == Errors.OFFSET_OUT_OF_RANGE
    assert position_error(OPEN, at, asked("49"), admin=False) == Errors.OFFSET_OUT_OF_RANGE
    assert position_error(OPEN, at, asked("49"), admin=True) == Errors.NONE
    ended = Position(None, shard_end=True)
    assert position_error(CLOSED, ended, asked("501"), admin=True) == Errors.NONE
    assert position_error(CLOSED, None, asked("1"), admin=False) == Errors.NONE


def test_a_shard_end_needs_a_closed_shard_or_its_children() -> None:
    end = asked(None, end=True)
    assert position_error(OPEN, None, end, admin=False) == Errors.INVALID_REQUEST
    assert position_error(CLOSED, None, end, admin=False) == Errors.NONE
    with_children = asked("7", end=True, children=["shardId-000000000002"])
    assert position_error(OPEN, None, with_children, admin=False) == Errors.NONE


def test_a_member_may_not_commit_on_a_done_shard_but_may_repeat_its_end() -> None:
    end, ended = asked(None, end=True), Position(None, shard_end=True)
    retriable = Errors.REBALANCE_IN_PROGRESS
    # Its end committed: anything but that end again is refused, retriably.
    assert position_error(CLOSED, ended, asked("501"), admin=False) == retriable
    assert position_error(CLOSED, ended, end, admin=False) == Errors.NONE  # a lost answer's retry
    again = asked("98", end=True, children=["shardId-000000000002"])
    assert position_error(CLOSED, ended, again, admin=False) == Errors.NONE
    # Expired, or closed before the group started: done with nothing committed.
    assert position_error(CLOSED, None, end, admin=False, done=True) == retriable
    assert position_error(CLOSED, None, asked("1"), admin=False, done=True) == retriable
    # Its parents not done: not assignable either.
    assert position_error(CLOSED, None, asked("1"), admin=False, parents_done=False) == retriable
    # An admin's reset is not a member's commit.
    assert position_error(CLOSED, ended, asked("1"), admin=True, done=True) == Errors.NONE


positions = st.one_of(
    st.none(),
    st.builds(Position, sequences.map(str), subs),
    st.just(Position(None, shard_end=True)),
)


@given(
    st.sampled_from([OPEN, CLOSED]),
    positions,
    positions.filter(lambda p: p is not None),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_refused_retriably_exactly_when_not_assignable(
    row: ShardRow,
    committed: Position | None,
    position: Position,
    admin: bool,
    parents_done: bool,
    done: bool,
) -> None:
    """27 iff a member's commit on a shard whose parents are not all done, or which is done
    itself (its end committed counts), unless it repeats the end committed."""
    children = ("shardId-000000000002",) if position.shard_end else ()
    code = position_error(
        row,
        committed,
        PositionAsked(position, children),
        admin=admin,
        parents_done=parents_done,
        done=done,
    )
    ended = committed is not None and committed.shard_end
    repeat = ended and position.shard_end
    assignable = parents_done and not (done or ended)
    assert (code == Errors.REBALANCE_IN_PROGRESS) == (
        not admin and not assignable and (not parents_done or not repeat)
    )


def test_a_position_belongs_to_kinesis_topics_only() -> None:
    assert position_error(None, None, asked("1"), admin=False) == Errors.INVALID_REQUEST
    assert position_error(None, None, None, admin=False) == Errors.NONE
    assert position_error(OPEN, None, None, admin=False) == Errors.INVALID_REQUEST


def test_the_position_field_is_bounded() -> None:
    longest = "9" * 129
    assert KinesisPosition.model_validate({"sequenceNumber": longest}).sequence_number == longest
    for refused in (
        {"sequenceNumber": "9" * 130},
        {"sequenceNumber": "012"},
        {"sequenceNumber": "1e5"},
        {"sequenceNumber": 12},
        {},  # neither a sequence number nor the shard's end
        {"sequenceNumber": "1", "subSequenceNumber": -1},
        {"shardEnd": True, "childShardIds": ["a", "b", "c"]},
        {"shardEnd": True, "childShardIds": ["x" * 129]},
    ):
        with pytest.raises(ValidationError):
            KinesisPosition.model_validate(refused)
    assert KinesisPosition.model_validate({"shardEnd": True}).sequence_number is None


def test_a_time_is_an_admin_s_reset_below_every_record_and_stands_alone() -> None:
    """offsets reset --to-datetime: an admin's commit from outside the group, which a member's
    first commit after it moves forward from; a member may not commit a time itself."""
    at = PositionAsked(Position(None, timestamp_ms=1700000000000))
    assert position_error(OPEN, Position("500", 3), at, admin=True) == Errors.NONE
    assert position_error(OPEN, None, at, admin=False) == Errors.INVALID_REQUEST
    timed = Position(None, timestamp_ms=1700000000000)
    assert timed.order() < Position("0").order() < Position("1").order()
    assert position_error(OPEN, timed, asked("1"), admin=False) == Errors.NONE
    assert "admin's reset" in (refusal_message(Errors.INVALID_REQUEST, OPEN, at, "t", 0) or "")
    KinesisPosition(at_timestamp_ms=0)
    for mixed in ({"sequenceNumber": "5"}, {"shardEnd": True}):
        with pytest.raises(ValidationError):
            KinesisPosition.model_validate({"atTimestampMs": 1, **mixed})
    with pytest.raises(ValidationError):
        KinesisPosition(at_timestamp_ms=-1)
