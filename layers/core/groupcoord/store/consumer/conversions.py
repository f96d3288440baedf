"""The conversions of a group between the protocols as writes (store/conversion.py makes each
one atomic step): a classic group with members upgraded to a consumer group, a consumer group
downgraded to a classic one (docs/consumer-protocol.md, "Migration between the protocols")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.classic.model import ClassicGroup, ClassicMember
from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import STABLE, ConsumerGroup
from .. import schema
from ..codecs.classic import group_to_item, instance_key, payload_to_item
from ..codecs.classic import member_to_item as classic_member_item
from ..codecs.consumer import (
    GROUP_TYPE,
    group_item,
    member_condition,
    member_to_item,
)
from ..conversion import Conversion
from ..dynamo import Delete, Put
from ..stored_group import StoredGroup
from ..topics import regex_delete, subscription_delete, subscription_put
from .repository import remove_member_items


def conversion_condition(
    group_type: str, version: int, topic_changes: int
) -> tuple[str, dict[str, Any]]:
    """A converted group item's condition: still of `group_type`, at the version read, with
    the topic-change count read (a topic change meanwhile must be seen by the new group; the
    registry only ever adds to the count, and an absent count is 0)."""
    condition = "groupType = :type AND #version = :v AND "
    if topic_changes == 0:
        condition += "(attribute_not_exists(topicChanges) OR topicChanges = :tc)"
    else:
        condition += "topicChanges = :tc"
    return condition, {":type": group_type, ":v": version, ":tc": topic_changes}


def upgrade_conversion(
    deadline_shards: int,
    classic: ClassicGroup,
    found: StoredGroup,
    members: Sequence[ConsumerGroupMember],
    classic_protocols: Sequence[str],
    *,
    classic_members: Sequence[ClassicMember],
    pending: Sequence[ClassicMember],
) -> Conversion:
    """The classic group `classic` (`found`, its group item at the version read, with the
    topic-change count read) becomes a Stable consumer group at group epoch = target
    epoch = generation with `members`: each member item is rewritten as a consumer member
    (same key) and static instance claims move to this store's keys. The classic items
    that go with it (its members' static claims and payload items, the ids still pending
    their second join) are deleted in the same step."""
    classic_item = found.raw
    gid = classic.group_id
    shards = classic.member_shards
    converted = ConsumerGroup(
        gid,
        version=classic.version + 1,
        member_count=len(members),
        member_shards=shards,
        group_epoch=classic.generation,
        target_epoch=classic.generation,
        state=STABLE,
        topic_changes_seen=classic.topic_changes_seen,
        # The classic group registered these with the topic registry; the next install
        # reconciles the registrations with the members' subscriptions.
        subscribed_topics=tuple(classic.subscribed_topics),
        classic_protocols=tuple(classic_protocols),
        created_at_ms=classic.created_at_ms,
        deadline=min(m.session_deadline for m in members),
        rebalances=classic.rebalances,  # generation = group epoch: the record goes on
    )
    topic_changes = classic_item.get("topicChanges")
    group = group_item(
        converted, deadline_shards, int(topic_changes) if topic_changes is not None else None
    )
    condition, values = conversion_condition(
        "classic", classic.version, int(classic_item.get("topicChanges", 0))
    )
    writes: list[Put | Delete] = []
    for m in members:
        writes.append(Put(member_to_item(gid, shards, m)))
        if m.instance_id is not None:
            key = schema.static_instance_key(gid, m.instance_id, shards)
            claim = {**key, "kind": schema.KIND_STATIC_INSTANCE, "groupId": gid}
            writes.append(Put({**claim, "memberId": m.member_id}))
    classic_deletes = [
        *(instance_key(gid, m.instance_id) for m in classic_members if m.instance_id),
        *(schema.payload_key(gid, m.member_id, shards) for m in classic_members),
        *(schema.member_key(gid, m.member_id, shards) for m in pending),
    ]
    writes.extend(Delete(key) for key in classic_deletes)
    return Conversion(
        gid,
        classic.version,
        Put(group, condition=condition, names={"#version": "version"}, values=values),
        writes,
    )


def downgrade_conversion(
    deadline_shards: int,
    group: ConsumerGroup,
    classic: ClassicGroup,
    leaving: Sequence[ConsumerGroupMember],
    remaining: Sequence[ConsumerGroupMember],
    classic_members: Sequence[ClassicMember],
) -> Conversion:
    """The consumer group item (at the version read, with the topic-change count read)
    becomes the classic group `classic`; the leaving members' items (and static claims)
    are deleted, each remaining member's item is rewritten as its classic member (same
    key, conditioned on the member's versions read) with its payload item, and its static
    claim moves to the classic store's key. The group's topic registrations become the
    classic group's (its members' subscriptions; classic groups have no regex)."""
    gid = group.group_id
    # The topic registry's count carries over (classic items hold it apart from the model).
    classic_item = {
        **group_to_item(classic, deadline_shards),
        "topicChanges": group.topic_changes,
    }
    by_id = {m.member_id: m for m in classic_members}
    condition, values = conversion_condition(GROUP_TYPE, group.version, group.topic_changes)
    writes: list[Put | Delete] = []
    for m in leaving:
        for item in remove_member_items(group, m):
            assert isinstance(item, Delete)
            writes.append(item)
    for m in remaining:
        written_if, names, member_values = member_condition(m)
        classic_member = by_id[m.member_id]
        writes.append(
            Put(
                classic_member_item(classic, classic_member),
                written_if,
                names,
                member_values,
            )
        )
        if m.instance_id is not None:
            writes.append(
                Delete(
                    schema.static_instance_key(gid, m.instance_id, group.member_shards),
                    condition="attribute_not_exists(pk) OR memberId = :m",
                    values={":m": m.member_id},
                )
            )
    writes.extend(
        Put({**instance_key(gid, m.instance_id), "kind": "instance", "memberId": m.member_id})
        for m in remaining
        if m.instance_id is not None
    )
    writes.extend(Put(payload_to_item(classic, by_id[m.member_id])) for m in remaining)
    old, new = set(group.subscribed_topics), set(classic.subscribed_topics)
    writes.extend(subscription_put(topic, gid) for topic in sorted(new - old))
    writes.extend(subscription_delete(topic, gid) for topic in sorted(old - new))
    if group.subscribed_regex:
        writes.append(regex_delete(gid))
    return Conversion(
        gid,
        group.version,
        Put(classic_item, condition=condition, names={"#version": "version"}, values=values),
        writes,
    )
