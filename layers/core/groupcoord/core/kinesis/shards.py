"""The shard registry of a Kinesis-backed topic (pure): every shard ListShards ever showed
gets a partition index once, in lineage order (parents before children, then by starting
sequence number), appended after the indexes already given; an index is never reused or
renumbered, whatever a later listing returns or omits. Shard ids are compared, never parsed."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Shard:
    """A shard as ListShards tells it."""

    shard_id: str
    # ParentShardId, then AdjacentParentShardId (a merge has both, a split one).
    parents: tuple[str, ...] = ()
    hash_start: str = "0"
    hash_end: str = str(2**128 - 1)
    starting_sequence: str = "0"
    # Set once the shard is closed (split or merged): no record is written to it any more.
    ending_sequence: str | None = None

    @property
    def closed(self) -> bool:
        return self.ending_sequence is not None


@dataclass(frozen=True)
class ShardRow:
    """A registry row: the partition index a shard was given."""

    index: int
    shard: Shard
    # The partitions of its parents that were in the registry when it was added (an expired
    # parent has none): lineage without a lookup by shard id.
    parent_indexes: tuple[int, ...] = ()
    # When the registry learned the shard closed (the sync's time; 0: closed before the topic
    # was bound), None while open: what "closed before a group started" is judged by.
    closed_at_ms: int | None = None
    # When a sync first missed the shard from ListShards (closed and expired past the
    # stream's retention), None while listed: done for every group, hidden after a grace
    # period.
    expired_at_ms: int | None = None


@dataclass(frozen=True)
class RegistryPlan:
    """What a sync writes: new rows, rows whose shard is now closed, rows whose closed shard
    expired, and how many new shards did not fit the topic's partition limit (left to a
    later sync, children of the last)."""

    added: tuple[ShardRow, ...] = ()
    closed: tuple[ShardRow, ...] = ()
    left_out: int = 0
    expired: tuple[ShardRow, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.closed or self.expired)


def sequence_key(sequence: str) -> tuple[int, int, str]:
    """Sequence numbers in numeric order without parsing 129 digits into a float: shorter
    decimal strings are smaller (Kinesis writes no leading zeros); anything else after."""
    if sequence.isascii() and sequence.isdigit():
        digits = sequence.lstrip("0") or "0"
        return (0, len(digits), digits)
    return (1, len(sequence), sequence)


def lineage_order(shards: Iterable[Shard], known: Iterable[str] = ()) -> list[Shard]:
    """The shards parents first, then by starting sequence number (then id). A parent that is
    `known` (already in the registry) or not among `shards` (expired, never seen) holds
    nothing back. A cycle, which Kinesis never makes, is broken in the same order."""
    fresh: dict[str, Shard] = {}
    for shard in shards:
        fresh.setdefault(shard.shard_id, shard)  # a shard listed twice: its first listing
    done = set(known)
    waiting = {
        sid: {p for p in s.parents if p in fresh and p not in done and p != sid}
        for sid, s in fresh.items()
    }
    children: dict[str, list[str]] = {}
    for sid, parents in waiting.items():
        for parent in parents:
            children.setdefault(parent, []).append(sid)

    def key(sid: str) -> tuple[tuple[int, int, str], str]:
        return (sequence_key(fresh[sid].starting_sequence), sid)

    ready = [key(sid) for sid, parents in waiting.items() if not parents]
    heapq.heapify(ready)
    order: list[Shard] = []
    while len(order) < len(fresh):
        if not ready:  # a cycle: take the first of what is left
            left = min(key(sid) for sid in waiting)
            ready.append(left)
        _, sid = heapq.heappop(ready)
        if sid not in waiting:
            continue
        del waiting[sid]
        order.append(fresh[sid])
        for child in children.get(sid, ()):
            parents = waiting.get(child)
            if parents is not None and sid in parents:
                parents.discard(sid)
                if not parents:
                    heapq.heappush(ready, key(child))
    return order


def plan_registry(
    rows: Sequence[ShardRow],
    listed: Sequence[Shard],
    max_partitions: int,
    now_ms: int = 0,
    closed_before: AbstractSet[str] = frozenset(),
) -> RegistryPlan:
    """The registry's new rows after a listing: shards not in it yet, in lineage order, at the
    next indexes, up to `max_partitions` rows in all; its rows that the listing shows closed
    while the registry has them open; and its rows the listing no longer shows (expired, open
    ones included: closed and expired since the last sync), unless the listing may have been
    cut short by the limit. A close is dated now, when the registry learns of it, never
    earlier than itself; but for `closed_before` (the binding's shards known to have closed
    before its groups' start, start_set.py), dated 0: before any start."""
    known = {row.shard.shard_id: row for row in rows}
    closed: dict[str, ShardRow] = {}
    for shard in listed:
        row = known.get(shard.shard_id)
        if row is not None and shard.closed and not row.shard.closed:
            closed.setdefault(shard.shard_id, replace(row, shard=shard, closed_at_ms=now_ms))
    order = lineage_order((s for s in listed if s.shard_id not in known), known)
    room = max(0, max_partitions - len(rows))
    start = max((row.index for row in rows), default=-1) + 1
    index_of = {sid: row.index for sid, row in known.items()}
    added: list[ShardRow] = []
    for i, shard in enumerate(order[:room]):
        index_of[shard.shard_id] = start + i
        parents = tuple(index_of[p] for p in shard.parents if p in index_of)
        closed_at = (0 if shard.shard_id in closed_before else now_ms) if shard.closed else None
        added.append(ShardRow(start + i, shard, parents, closed_at))
    return RegistryPlan(
        tuple(added),
        tuple(closed.values()),
        len(order) - len(added),
        _expired(rows, listed, max_partitions, now_ms),
    )


def _expired(
    rows: Sequence[ShardRow], listed: Sequence[Shard], max_partitions: int, now_ms: int
) -> tuple[ShardRow, ...]:
    """The registry's rows a complete listing no longer shows, dated now. ListShards shows
    every open shard and every closed one within the stream's retention, so a row missing
    from it expired, whether the registry had seen it close or not: a shard can close and
    expire between two syncs (a sweeper stopped for longer than the retention, a shard end
    never reported). Its close is dated now too, when the registry learned of it."""
    if len(listed) >= max_partitions:
        return ()  # the listing may have stopped before them
    seen = {shard.shard_id for shard in listed}
    return tuple(
        replace(row, expired_at_ms=now_ms, closed_at_ms=_or(row.closed_at_ms, now_ms))
        for row in rows
        if row.expired_at_ms is None and row.shard.shard_id not in seen
    )


def _or(value: int | None, default: int) -> int:
    return default if value is None else value


def listed_in_metadata(row: ShardRow, now_ms: int, grace_ms: int) -> bool:
    """Whether metadata still lists the row: not expired, or expired less than `grace_ms`
    ago (groupcoord.kinesis.expired.shard.grace.ms)."""
    return row.expired_at_ms is None or now_ms - row.expired_at_ms < grace_ms


def sync_due(last_sync_ms: int, now_ms: int, interval_ms: int) -> bool:
    """Whether a lazy sync (a join's) lists the shards again."""
    return now_ms - last_sync_ms >= interval_ms


def blocked_partitions(rows: Sequence[ShardRow], done: AbstractSet[int]) -> frozenset[int]:
    """The partitions a group may not be assigned: those done for it (core/kinesis/done.py)
    and those with a parent in the registry that is not done (a child waits for its
    parents)."""
    return frozenset(
        row.index
        for row in rows
        if row.index in done or any(p not in done for p in row.parent_indexes)
    )


def heirs(rows: Sequence[ShardRow]) -> dict[int, tuple[int, ...]]:
    """Each parent partition's children, for handing a child to its parent's last owner."""
    children: dict[int, list[int]] = {}
    for row in rows:
        for parent in row.parent_indexes:
            children.setdefault(parent, []).append(row.index)
    return {parent: tuple(found) for parent, found in children.items()}
