"""Classic groups written directly with the store's own code, as the protocol leaves them (for
tests and benchmarks that need a group of many members without driving every join)."""

from __future__ import annotations

from collections.abc import Sequence

from groupcoord.core.classic.model import STABLE, ClassicGroup, ClassicMember
from groupcoord.store.classic_groups import ClassicTransition, member_items
from groupcoord.store.store import Store


def write_classic_group(
    store: Store,
    group_id: str,
    members: Sequence[ClassicMember],
    *,
    protocol: str,
    rebalance_timeout_ms: int,
    next_check_ms: int,
    generation: int = 1,
    state: str = STABLE,
    sync_deadline_ms: int | None = None,
    subscribed_topics: tuple[str, ...] = (),
    created_at_ms: int = 0,
) -> ClassicGroup:
    """A group of `members` (the first one its leader, all on `protocol`) in `state` at
    `generation`: its member and payload items (BatchWriteItem), then the group item."""
    group = ClassicGroup(
        group_id=group_id,
        state=state,
        generation=generation,
        protocol_type="consumer",
        protocol_name=protocol,
        leader=members[0].member_id,
        member_count=len(members),
        protocol_counts={protocol: len(members)},
        rebalance_timeout_ms=rebalance_timeout_ms,
        sync_deadline_ms=sync_deadline_ms,
        subscribed_topics=subscribed_topics,
        member_shards=store.settings.member_shards,
        next_check_ms=next_check_ms,
        created_at_ms=created_at_ms,
    )
    store.dynamo.batch_write(puts=[i for m in members for i in member_items(group, m)])
    store.classic.commit(ClassicTransition(group=group, expected_version=None))
    return group
