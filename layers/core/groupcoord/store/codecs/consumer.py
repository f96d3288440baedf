"""A consumer group's items and the models they hold (core/consumer/): the group item, member
items, and the group item's writes as the difference from the one read.
No reads, no writes here: store/consumer/repository.py reads and writes them."""

from __future__ import annotations

import base64
from typing import Any

from ...core.consumer.assignment import from_item, to_item
from ...core.consumer.member import ClassicMetadata, ConsumerGroupMember, Holder
from ...core.consumer.model import EMPTY, ConsumerGroup
from ...core.consumer.reconciliation import MemberAssignment, MemberState
from ...core.lag import from_item as lags_from_item
from ...core.lag import to_item as lags_to_item
from ...core.rebalances import from_item as rebalances_from_item
from ...core.rebalances import to_item as rebalances_to_item
from .. import schema
from ..dynamo import Update
from ..family_codec import FamilyCodec
from ..group_update import version_update
from ..groups import listing_attributes
from .push_mark import push_mark_attributes, push_mark_fields

GROUP_TYPE = "consumer"


# The group item's attributes of ConsumerGroup.scan_id, .classic_protocols and
# .subscription_digest.
SCAN_ID = "scanId"
CLASSIC_PROTOCOLS = "classicProtocols"
SUBSCRIPTION_DIGEST = "subscriptionDigest"
REBALANCES = schema.REBALANCES


def group_from_item(item: dict[str, Any]) -> ConsumerGroup:
    classic = item.get(CLASSIC_PROTOCOLS)
    return ConsumerGroup(
        group_id=item["groupId"],
        version=int(item.get("version", 0)),
        member_count=int(item.get("memberCount", 0)),
        member_shards=int(item.get("memberShards", 8)),
        group_epoch=int(item.get("groupEpoch", 0)),
        target_epoch=int(item.get("targetEpoch", 0)),
        state=item.get("groupState", EMPTY),
        assignor_name=item.get("assignorName", ""),
        topic_changes=int(item.get("topicChanges", 0)),
        topic_changes_seen=int(item.get("topicChangesSeen", 0)),
        subscribed_topics=tuple(item.get("subscribedTopics") or ()),
        subscribed_regex=item.get("subscribedRegex") or None,
        subscription_digest=item.get(SUBSCRIPTION_DIGEST) or None,
        deadline=int(item[schema.DEADLINE]) if schema.DEADLINE in item else None,
        install_id=item.get("installId") or None,
        install_until=int(item.get("installUntil", 0)),
        assigned_at=int(item.get("assignedAt", 0)),
        created_at_ms=int(item.get("createdAt", 0)),
        classic_protocols=tuple(classic) if classic is not None else None,
        scan_id=item.get(SCAN_ID) or None,
        rebalances=rebalances_from_item(item.get(REBALANCES)),
    )


def group_attributes(group: ConsumerGroup, deadline_shards: int) -> dict[str, Any]:
    """The group item's attributes that the model holds (None: absent). `topicChanges` is the
    topic registry's to count (it ADDs), and `memberShards` and `createdAt` never change: a
    write of the group item leaves them as they are."""
    dl = group.deadline
    return {
        "groupEpoch": group.group_epoch,
        "targetEpoch": group.target_epoch,
        "groupState": group.state,
        "memberCount": group.member_count,
        "assignorName": group.assignor_name,
        "topicChangesSeen": group.topic_changes_seen,
        "subscribedTopics": list(group.subscribed_topics),
        "subscribedRegex": group.subscribed_regex,
        SUBSCRIPTION_DIGEST: group.subscription_digest,
        schema.DEADLINE: dl,
        schema.DEADLINE_SHARD: (
            schema.deadline_shard_value(group.group_id, deadline_shards) if dl is not None else None
        ),
        "installId": group.install_id,
        "installUntil": group.install_until if group.install_id is not None else None,
        "assignedAt": group.assigned_at,
        CLASSIC_PROTOCOLS: (
            list(group.classic_protocols) if group.classic_protocols is not None else None
        ),
        SCAN_ID: group.scan_id,
        REBALANCES: rebalances_to_item(group.rebalances),
    }


def group_item(
    group: ConsumerGroup, deadline_shards: int, topic_changes: int | None
) -> dict[str, Any]:
    """The whole group item of `group` (a new group, or one a conversion writes):
    `topic_changes` is the registry's count to carry (None: none yet)."""
    item: dict[str, Any] = {
        **schema.group_key(group.group_id),
        **listing_attributes(group.group_id),
        "kind": schema.KIND_GROUP,
        "groupType": GROUP_TYPE,
        "protocolType": "consumer",
        "groupId": group.group_id,
        "version": group.version,
        "memberShards": group.member_shards,
        "createdAt": group.created_at_ms,
        **{
            name: value
            for name, value in group_attributes(group, deadline_shards).items()
            if value is not None
        },
    }
    if topic_changes is not None:
        item["topicChanges"] = topic_changes
    return item


def group_update(old: ConsumerGroup, new: ConsumerGroup, deadline_shards: int) -> Update:
    """Write what changed from `old` to `new` (SET, or REMOVE what became absent) and bump
    `version`, on the version read."""
    before = group_attributes(old, deadline_shards)
    return version_update(old.group_id, before, group_attributes(new, deadline_shards), old.version)


def is_consumer_member(item: dict[str, Any]) -> bool:
    """A member item of this protocol (a replaced Empty classic group may leave classic member
    items of pending ids behind until their cleanup runs)."""
    return item.get("kind") == schema.KIND_MEMBER and item.get("groupType") == GROUP_TYPE


def member_to_item(group_id: str, shards: int, m: ConsumerGroupMember) -> dict[str, Any]:
    a = m.assignment
    item: dict[str, Any] = {
        **schema.member_key(group_id, m.member_id, shards),
        "kind": schema.KIND_MEMBER,
        "groupId": group_id,
        "groupType": GROUP_TYPE,
        "memberId": m.member_id,
        "clientId": m.client_id,
        "clientHost": m.client_host,
        "principal": m.principal or "",
        "rebalanceTimeoutMs": m.rebalance_timeout_ms,
        "subscribedTopicNames": list(m.subscribed_topic_names),
        "memberEpoch": a.epoch,
        "previousEpoch": a.previous_epoch,
        "state": a.state.value,
        "assigned": to_item(a.assigned),
        "revoking": to_item(a.revoking),
        "assignedAt": {str(epoch): to_item(parts) for epoch, parts in a.assigned_at.items()},
        "target": to_item(m.target),
        "targetEpoch": m.target_epoch,
        "tver": m.target_version,
        "waitOn": [[h.member_id, h.instance_id or ""] for h in m.wait_on],
        "acqVersion": m.acquired_version,
        "mver": m.version,
        "sessionDeadline": m.session_deadline,
        **push_mark_attributes(m),
    }
    for name, value in (
        ("instanceId", m.instance_id),
        ("rackId", m.rack_id),
        ("subscribedTopicRegex", m.subscribed_topic_regex),
        ("serverAssignor", m.server_assignor),
        ("rebalanceDeadline", m.rebalance_deadline),
    ):
        if value is not None:
            item[name] = value
    if m.classic is not None:
        item["classic"] = {
            "sessionTimeoutMs": m.classic.session_timeout_ms,
            "heartbeatIntervalMs": m.classic.heartbeat_interval_ms,
            "protocols": [
                {"name": name, "metadata": base64.b64encode(metadata).decode("ascii")}
                for name, metadata in m.classic.protocols
            ],
        }
    if m.lags:
        item["lags"] = lags_to_item(m.lags)
    if m.waiters is not None:  # absent: unknown (core/consumer/waiters.py)
        item["waiters"] = list(m.waiters)
    return item


def classic_from_item(value: dict[str, Any] | None) -> ClassicMetadata | None:
    if not value:
        return None
    return ClassicMetadata(
        session_timeout_ms=int(value.get("sessionTimeoutMs", 0)),
        heartbeat_interval_ms=int(value.get("heartbeatIntervalMs", 0)),
        protocols=tuple(
            (p["name"], base64.b64decode(p.get("metadata", "")))
            for p in value.get("protocols") or ()
        ),
    )


# What a group's listed state is computed from (core/consumer/group.group_state): a member item
# read with only these (store/consumer/repository.py, `standings`) decodes to standing_from_item.
STANDING_ATTRIBUTES = ("kind", "groupType", "memberId", "memberEpoch", "state")


def standing_from_item(item: dict[str, Any]) -> ConsumerGroupMember:
    """A member as far as its group's listed state goes: its id, epoch and state."""
    return ConsumerGroupMember(
        member_id=item["memberId"],
        assignment=MemberAssignment(
            epoch=int(item.get("memberEpoch", 0)),
            state=MemberState(item.get("state", MemberState.STABLE.value)),
        ),
    )


def member_from_item(item: dict[str, Any]) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id=item["memberId"],
        instance_id=item.get("instanceId"),
        rack_id=item.get("rackId"),
        client_id=item.get("clientId", ""),
        client_host=item.get("clientHost", ""),
        principal=item.get("principal") or None,
        rebalance_timeout_ms=int(item.get("rebalanceTimeoutMs", 0)),
        subscribed_topic_names=tuple(item.get("subscribedTopicNames") or ()),
        subscribed_topic_regex=item.get("subscribedTopicRegex"),
        server_assignor=item.get("serverAssignor"),
        assignment=MemberAssignment(
            epoch=int(item.get("memberEpoch", 0)),
            previous_epoch=int(item.get("previousEpoch", 0)),
            state=MemberState(item.get("state", MemberState.STABLE.value)),
            assigned=from_item(item.get("assigned")),
            revoking=from_item(item.get("revoking")),
            assigned_at={
                int(epoch): from_item(parts)
                for epoch, parts in (item.get("assignedAt") or {}).items()
            },
        ),
        target=from_item(item.get("target")),
        target_epoch=int(item.get("targetEpoch", 0)),
        target_version=int(item.get("tver", 0)),
        wait_on=tuple(Holder(h[0], h[1] or None) for h in item.get("waitOn") or ()),
        waiters=tuple(item["waiters"]) if "waiters" in item else None,
        acquired_version=int(item.get("acqVersion", 0)),
        version=int(item.get("mver", 0)),
        session_deadline=int(item.get("sessionDeadline", 0)),
        **push_mark_fields(item),
        rebalance_deadline=(
            int(item["rebalanceDeadline"]) if "rebalanceDeadline" in item else None
        ),
        classic=classic_from_item(item.get("classic")),
        lags=lags_from_item(item.get("lags")),
    )


def member_condition(m: ConsumerGroupMember) -> tuple[str, dict[str, str], dict[str, Any]]:
    return (
        "attribute_exists(pk) AND #mver = :mver AND #tver = :tver",
        {"#mver": "mver", "#tver": "tver"},
        {":mver": m.version, ":tver": m.target_version},
    )


def _target_values(member: ConsumerGroupMember) -> tuple[Any, list[Any]]:
    return to_item(member.target), [[h.member_id, h.instance_id or ""] for h in member.wait_on]


CODEC: FamilyCodec[ConsumerGroup, ConsumerGroupMember] = FamilyCodec(
    group_type="consumer",
    group_update=group_update,
    group_from_item=group_from_item,  # type: ignore[arg-type]
    is_member=is_consumer_member,  # type: ignore[arg-type]
    member_from_item=member_from_item,  # type: ignore[arg-type]
    member_to_item=member_to_item,
    member_condition=member_condition,
    target_values=_target_values,
)
