"""Lineage gating's reads for a consumer group's target install: per subscribed Kinesis-backed
topic, its registry, which of its shards the group finished (a committed shard end) and when
the group started, for core/kinesis (done.done_partitions, shards.blocked_partitions) and
core/consumer/heirs.with_heirs to decide."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...core.kinesis.binding import StartingPoint
from ...core.kinesis.done import done_partitions, start_ms
from ...core.kinesis.lineage import stripped
from ...core.kinesis.shards import blocked_partitions, heirs
from ...core.topics import TopicRecord
from ...store.store import Store
from ...wire.consumer_protocol import ConsumerProtocolError, decode_assignment


def group_created_ms(store: Store, group_id: str) -> int:
    """When the group was created (its item's createdAt, both protocols'); 0 for none."""
    # Eventually consistent: a group's creation time never changes.
    found = store.conversions.read_group(group_id, consistent=False)
    return found.header.created_at_ms if found is not None else 0


def gate(
    store: Store,
    group_id: str,
    topics: Iterable[TopicRecord],
    subscribed: Mapping[str, int],
    created_ms: int | None = None,
) -> tuple[dict[str, frozenset[int]], dict[str, dict[int, tuple[int, ...]]]]:
    """Per subscribed Kinesis topic id: the partitions the group may not be given, and each
    parent's children. One Query of each registry and one batched read of the group's
    positions in the shards that have children or are closed; the group's item only for a
    topic starting at LATEST when `created_ms` (the group's creation) is not given."""
    blocked: dict[str, frozenset[int]] = {}
    children: dict[str, dict[int, tuple[int, ...]]] = {}
    for record in topics:
        if record.kinesis is None or record.topic_id not in subscribed:
            continue
        position = record.kinesis.initial_position
        if created_ms is None and position.point is StartingPoint.LATEST:
            created_ms = group_created_ms(store, group_id)
        started = start_ms(position, created_ms or 0)
        rows = store.shards.rows(record)
        family = heirs(rows)
        ending = [r.index for r in rows if r.shard.closed or r.index in family]
        committed = store.offsets.fetch(group_id, [(record.name, i) for i in ending])
        held = {p: o.position for (_, p), o in committed.items() if o.position is not None}
        ended = {p for p, at in held.items() if at.shard_end}
        done = done_partitions(rows, ended, started, held.keys() - ended)
        blocked[record.topic_id] = blocked_partitions(rows, done)
        children[record.topic_id] = family
    return blocked, children


def stripped_assignments(
    store: Store, group_id: str, assignments: list[tuple[str, bytes]], created_ms: int
) -> list[tuple[str, bytes]]:
    """A classic leader's assignments (ConsumerProtocol) without the Kinesis shards that are
    not assignable to the group. Reads the topics the assignments name, and only for the
    Kinesis-backed ones their gating (`gate`)."""
    names: set[str] = set()
    for _, data in assignments:
        try:
            names.update(decode_assignment(data).partitions)
        except ConsumerProtocolError:
            continue
    # Eventually consistent (half a read unit each): whether a topic is Kinesis-backed never
    # changes while it exists, and its gating below is read strongly.
    found = (store.topics.get(name, consistent=False) for name in sorted(names))
    records = [r for r in found if r is not None and r.kinesis is not None]
    if not records:
        return assignments
    fresh = [store.topics.get(r.name) or r for r in records]  # the current partition count
    by_id, _ = gate(store, group_id, fresh, {r.topic_id: r.partitions for r in fresh}, created_ms)
    blocked = {r.name: by_id.get(r.topic_id, frozenset()) for r in fresh}
    return [(member_id, stripped(data, blocked)) for member_id, data in assignments]
