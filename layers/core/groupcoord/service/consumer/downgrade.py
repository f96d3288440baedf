"""The online downgrade of a consumer group to a classic group (issue 6 item 4, Kafka's
GroupMetadataManager.convertToClassicGroup), when its last consumer-protocol member leaves
(epoch -1) or is fenced by a timer (lazily or by the sweeper) and classic-protocol members
remain, if group.consumer.migration.policy allows downgrades and the members fit in a classic
group (group.max.size).

The departure and the conversion are one atomic step (one TransactWriteItems, or for larger
groups a staged conversion: store/conversion.py): the group item becomes a classic group at
generation = group epoch in PreparingRebalance, the departing members' items go, the others are
rewritten as classic members holding their target assignment (a member item and a payload
item each, store/classic_groups.py), and the group's topic registrations become the classic
group's (its members' subscriptions; no regex). Committed offsets are per group id and are not
touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...core.consumer.member import ConsumerGroupMember
from ...core.migration import (
    downgrade_wanted,
    downgraded_group,
)
from ...store.classic_groups import group_to_item, instance_key, member_to_item, payload_to_item
from ...store.consumer_groups import ConsumerGroupRecord
from ...store.dynamo import Delete, Put
from ...store.store import Store
from ...store.topics import regex_delete, subscription_delete, subscription_put
from .common import consumer_store, convert


def _topic_names(store: Store, members: Sequence[ConsumerGroupMember]) -> dict[str, str]:
    names = {}
    for topic_id in sorted({t for m in members for t in m.target}):
        record = store.topics.get_by_id(topic_id)
        if record is not None:
            names[topic_id] = record.name
    return names


def maybe_downgrade(
    store: Store,
    group: ConsumerGroupRecord,
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
        created_at_ms=int(group.raw.get("createdAt", now_ms)),
        topic_changes=group.topic_changes,
        now_ms=now_ms,
    )
    item = group_to_item(classic, settings.deadline_shards)
    if "topicChanges" in group.raw:
        item["topicChanges"] = group.raw["topicChanges"]
    by_id = {m.member_id: m for m in classic_members}
    remaining = sorted(remaining, key=lambda m: m.member_id)
    conversion = consumer_store(store).downgrade_conversion(
        group,
        item,
        leaving,
        remaining,
        [member_to_item(classic, by_id[m.member_id]) for m in remaining],
        [
            {
                **instance_key(group.group_id, m.instance_id),
                "kind": "instance",
                "memberId": m.member_id,
            }
            for m in remaining
            if m.instance_id is not None
        ],
    )
    # Topic registrations: the classic group's own (its members' subscriptions) replace the
    # consumer group's; regex subscriptions do not exist in classic groups.
    old, new = set(group.subscribed_topics), set(classic.subscribed_topics)
    registrations: list[Put | Delete] = [
        *(subscription_put(topic, group.group_id) for topic in sorted(new - old)),
        *(subscription_delete(topic, group.group_id) for topic in sorted(old - new)),
    ]
    if group.subscribed_regex:
        registrations.append(regex_delete(group.group_id))
    # Each classic member's protocols and assignment go on its payload item, in the same step.
    payloads = [Put(payload_to_item(classic, by_id[m.member_id])) for m in remaining]
    convert(store, replace(conversion, writes=[*conversion.writes, *payloads, *registrations]))
    return True
