"""Which shards of a Kinesis-backed topic are done for a group (pure, docs/kinesis.md "Lineage"):
those whose end the group committed, those that expired past the stream's retention, and, for
a group that starts at LATEST or AT_TIMESTAMP, the ancestors of where it started: the shards
open at its start are its roots, and every shard closed before then is an ancestor of one of
them (a closed shard's records all precede its children's), so it has nothing for the group.

The registry dates a close by the sync that saw it (never earlier than the close itself), so
a shard that closed just before the start may count as open then: the group reads it (from
LATEST, its end at once) as before, never skips a record it should read."""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from .binding import InitialPosition, StartingPoint
from .shards import ShardRow


def start_ms(position: InitialPosition, group_created_ms: int) -> int | None:
    """When a group starts reading the topic for lineage's sake: AT_TIMESTAMP's time, the
    group's creation for LATEST, None for TRIM_HORIZON (it reads every shard)."""
    if position.point is StartingPoint.AT_TIMESTAMP:
        return position.timestamp_ms
    if position.point is StartingPoint.LATEST:
        return group_created_ms
    return None


def before_start(row: ShardRow, started_ms: int | None) -> bool:
    """Whether the row's shard closed by the time the group started (an ancestor of its
    roots: its children were there when the group started)."""
    return (
        started_ms is not None and row.closed_at_ms is not None and row.closed_at_ms <= started_ms
    )


def row_done(row: ShardRow, ended: bool, started_ms: int | None, positioned: bool = False) -> bool:
    """One row's judgement: its end committed (`ended`), expired, or before the start, unless
    the group holds a position inside the shard (`positioned`: an admin's reset or an imported
    KCL checkpoint, as members commit only on assignable shards): that position says the group
    is still reading it, and the rest of its records are the group's."""
    if ended or row.expired_at_ms is not None:
        return True
    return not positioned and before_start(row, started_ms)


def done_partitions(
    rows: Sequence[ShardRow],
    ended: AbstractSet[int],
    started_ms: int | None,
    positioned: AbstractSet[int] = frozenset(),
) -> set[int]:
    """The partitions done for the group: `ended`, the group's committed shard ends;
    `positioned`, the partitions where it holds a position short of the end."""
    return {
        row.index
        for row in rows
        if row_done(row, row.index in ended, started_ms, row.index in positioned)
    }
