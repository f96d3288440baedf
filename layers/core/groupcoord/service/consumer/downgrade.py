"""The online downgrade of a consumer group to a classic group (Kafka's
GroupMetadataManager.convertToClassicGroup), when its last consumer-protocol member leaves
(epoch -1) or is fenced by a timer (lazily or by the sweeper) and classic-protocol members
remain, if group.consumer.migration.policy allows downgrades and the members fit in a classic
group (group.max.size).

The departure and the conversion are one atomic step (one TransactWriteItems, or for larger
groups a staged conversion: store/conversion.py): the group item becomes a classic group at
generation = group epoch in PreparingRebalance, the departing members' items go, the others are
rewritten as classic members holding their target assignment (a member item and a payload
item each, store/classic/), and the group's topic registrations become the classic
group's (its members' subscriptions; no regex). Committed offsets are per group id and are not
touched.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import ConsumerGroup
from ...core.migration import (
    downgrade_wanted,
    downgraded_group,
)
from ...store.consumer.conversions import downgrade_conversion
from ...store.store import Store
from .common import convert


def _topic_names(store: Store, members: Sequence[ConsumerGroupMember]) -> dict[str, str]:
    names = {}
    for topic_id in sorted({t for m in members for t in m.target}):
        record = store.topics.get_by_id(topic_id)
        if record is not None:
            names[topic_id] = record.name
    return names


def maybe_downgrade(
    store: Store,
    group: ConsumerGroup,
    leaving: Sequence[ConsumerGroupMember],
    members: Sequence[ConsumerGroupMember],
    now_ms: int,
) -> bool:
    """Remove `leaving` from `group` (whose members, as read, are `members`) by downgrading
    it to a classic group, if the rules allow it: True once done, False when the departure
    must be written as usual. Conflict when the group or a member moved meanwhile."""
    settings = store.settings
    leaving_ids = {m.member_id for m in leaving}
    remaining = [m for m in members if m.member_id not in leaving_ids]
    if not downgrade_wanted(
        settings.group_consumer_migration_policy, remaining, settings.group_max_size
    ):
        return False
    classic, classic_members = downgraded_group(
        group.group_id,
        group.group_epoch,
        remaining,
        _topic_names(store, remaining),
        version=group.version + 1,
        member_shards=group.member_shards,
        created_at_ms=group.created_at_ms or now_ms,
        topic_changes=group.topic_changes,
        now_ms=now_ms,
        rebalances=group.rebalances,
    )
    conversion = downgrade_conversion(
        store.settings.deadline_shards,
        group,
        classic,
        leaving,
        sorted(remaining, key=lambda m: m.member_id),
        classic_members,
    )
    convert(store, conversion)
    return True
