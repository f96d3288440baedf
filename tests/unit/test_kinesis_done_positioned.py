"""A shard the group holds a position in is not done for it by the start rule
(core/kinesis/done.py): a closed shard counts as behind a LATEST or AT_TIMESTAMP group's start
only while the group has no position there; one set from outside (an admin's reset, a KCL
checkpoint imported by `groupcoord kinesis import-kcl`) says the group is inside it, and the
rest of its records are read. Its end committed, or its expiry, still make it done."""

from __future__ import annotations

from groupcoord.core.kinesis.done import done_partitions, row_done
from groupcoord.core.kinesis.shards import Shard, ShardRow

CLOSED = ShardRow(0, Shard("s0", ending_sequence="9"), closed_at_ms=100)
CHILD = ShardRow(1, Shard("s1", ("s0",)), (0,))
STARTED = 500  # the group started after shard 0 closed


def test_a_closed_shard_behind_the_start_is_done_only_without_a_position() -> None:
    assert row_done(CLOSED, False, STARTED)
    assert not row_done(CLOSED, False, STARTED, positioned=True)
    assert done_partitions([CLOSED, CHILD], set(), STARTED) == {0}
    assert done_partitions([CLOSED, CHILD], set(), STARTED, {0}) == set()


def test_an_end_or_an_expiry_is_done_whatever_the_position() -> None:
    assert row_done(CLOSED, True, STARTED, positioned=True)
    expired = ShardRow(0, Shard("s0", ending_sequence="9"), closed_at_ms=100, expired_at_ms=200)
    assert row_done(expired, False, STARTED, positioned=True)
    assert row_done(expired, False, None, positioned=True)
