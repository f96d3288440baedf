"""The shards a topic's groups start from (pure): the shards open at the start. What the
binding's first listing dates closed before the start (done.before_start) must be exactly the
ancestors of those shards, or the group skips records.

ListShards says which shards are closed but not when they closed, so the first listing dates
its closed shards at the binding (a close is never dated earlier than itself, as every later
sync dates them): right for LATEST, whose groups start at their creation (after the binding,
so all of them are done; a group created before the binding reads them from its start), and
for an AT_TIMESTAMP at or after the binding. An AT_TIMESTAMP before the binding needs to know
which shards were open then: ListShards' ShardFilter AT_TIMESTAMP answers it (as KCL 2.x asks
it when it creates its first leases), and the shards closed before the timestamp are exactly
the proper ancestors of those. TRIM_HORIZON reads every shard listed, closed or not (a closed
shard still holds its retained records), roots first: its start needs no listing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .binding import InitialPosition, StartingPoint
from .shards import Shard


def start_listing_ms(position: InitialPosition, bound_ms: int) -> int | None:
    """The time whose open shards the binding asks Kinesis for (ListShards' ShardFilter
    AT_TIMESTAMP): an AT_TIMESTAMP before the binding; None when the binding's own time
    dates every close right (LATEST, TRIM_HORIZON, an AT_TIMESTAMP not before it)."""
    if position.point is not StartingPoint.AT_TIMESTAMP or position.timestamp_ms is None:
        return None
    return position.timestamp_ms if position.timestamp_ms < bound_ms else None


def closed_before_start(listed: Sequence[Shard], open_at_start: Iterable[str]) -> frozenset[str]:
    """The listed closed shards that closed before the start: the proper ancestors of the
    shards open then (`open_at_start`, the filtered listing), through the listing's lineage.
    A shard that is itself in the start set is not one (a parent closed at the very
    millisecond its children opened is listed with them, and may hold records of it); an
    open shard never is. Whatever the lineage does not lead to is dated at the binding:
    read, never skipped."""
    by_id = {shard.shard_id: shard for shard in listed}
    start = set(open_at_start)
    found: set[str] = set()
    stack = [p for sid in start if sid in by_id for p in by_id[sid].parents]
    while stack:
        sid = stack.pop()
        shard = by_id.get(sid)
        if sid in found or shard is None:
            continue
        found.add(sid)
        stack.extend(shard.parents)
    return frozenset(sid for sid in found - start if by_id[sid].closed)
