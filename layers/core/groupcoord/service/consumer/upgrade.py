"""The online upgrade of a classic group with members (Kafka's
GroupMetadataManager.convertToConsumerGroup), started by an epoch-0 consumer-group-heartbeat.

Due classic timers are settled first; then, in one atomic step (one transaction, or for larger
groups a staged conversion: store/conversion.py), the group item becomes a consumer group at
group epoch = target epoch = generation and every member item a consumer member at epoch =
generation holding its current assignment (core/migration.py).
A rebalance in progress is cut short as Kafka does: the classic members' pending join and sync
requests answer 27 (they see a consumer group) and their rejoin goes to the mixed-group path
(classic_members.py). The caller then joins the consumer group as any new member (epoch bump).
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.classic.model import ClassicMember
from ...core.migration import (
    common_protocols,
    malformed_protocol,
    upgraded_members,
    validate_online_upgrade,
)
from ...store.consumer.conversions import upgrade_conversion
from ...store.errors import Conflict
from ...store.store import Store
from ...store.stored_group import StoredGroup
from ...wire.consumer_protocol import ConsumerProtocolError, decode_assignment
from ..classic_group import settle
from ..races import GroupBusy
from .common import convert


def _topic_ids(store: Store, members: list[ClassicMember]) -> dict[str, str]:
    names: set[str] = set()
    for m in members:
        names.update(decode_assignment(m.assignment).partitions)
    ids = {}
    for name in sorted(names):
        record = store.topics.get(name)
        if record is not None:
            ids[name] = record.topic_id
    return ids


def upgrade_classic_group(
    store: Store,
    item: StoredGroup,
    now: int,
    before: Callable[[list[ClassicMember]], None] | None = None,
) -> str | None:
    """Convert the classic group `item` (as read); a refusal message (69) or None once
    converted. Conflict when the group moved meanwhile (the caller re-reads and decides
    again: an Empty classic group is then simply replaced). `before` sees every classic
    member (pending ones too) before anything is converted, and may refuse by raising."""
    settings = store.settings
    group = item.classic()
    if group.member_count == 0:
        # Emptied (or replaced again by a classic join) since the caller looked: an Empty
        # classic group is replaced, not upgraded (the upgrade would refuse it: no protocol
        # type), so the caller decides again.
        raise Conflict(group.group_id)
    why = validate_online_upgrade(
        group.group_id,
        settings.group_consumer_migration_policy,
        group.protocol_type,
        group.member_count,
        settings.group_consumer_max_size,
    )
    if why is not None:
        return why
    try:
        group = settle(store, group, now)
    except GroupBusy:
        raise Conflict(group.group_id) from None
    classic = store.classic
    listed = classic.members(group, payloads=True)
    if before is not None:
        before(listed)
    members = [m for m in listed if not m.pending]
    pending = [m for m in listed if m.pending]
    if len(members) != group.member_count or not members:
        raise Conflict(group.group_id)
    why = validate_online_upgrade(
        group.group_id,
        settings.group_consumer_migration_policy,
        group.protocol_type,
        len(members),
        settings.group_consumer_max_size,
    )
    if why is not None:
        return why
    try:
        converted = upgraded_members(group, members, _topic_ids(store, members), now)
    except ConsumerProtocolError:
        return malformed_protocol(group.group_id)
    fresh = classic.read_group(group.group_id)
    if fresh is None or fresh.version != group.version:
        raise Conflict(group.group_id)
    conversion = upgrade_conversion(
        store.settings.deadline_shards,
        group,
        fresh,
        converted,
        sorted(common_protocols(m.classic.protocol_names for m in converted if m.classic) or ()),
        # The classic group's static claims, its members' payload items and the ids still
        # pending their second join go with it, in the same atomic step (a cleanup after it
        # could meet a group already converted back, and delete live classic members).
        classic_members=members,
        pending=pending,
    )
    convert(store, conversion)
    return None
