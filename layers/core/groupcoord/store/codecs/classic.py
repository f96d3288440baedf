"""A classic group's items and the models they hold (core/classic/model.py): the group item,
member items, payload items, static instance keys. No reads, no writes: store/classic/
repository.py reads and writes them.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

from ...core.classic.model import (
    GROUP_TYPE,
    ClassicGroup,
    ClassicMember,
    Protocol,
)
from ...core.lag import from_item as lags_from_item
from ...core.rebalances import from_item as rebalances_from_item
from ...core.rebalances import to_item as rebalances_to_item
from .. import schema
from ..groups import listing_attributes


def instance_key(group_id: str, instance_id: str) -> dict[str, str]:
    return {schema.PK: schema.instance_pk(group_id), schema.SK: instance_id}


def optional(item: dict[str, Any], name: str) -> Any:
    value = item.get(name)
    return None if value is None else value


def group_from_item(item: dict[str, Any]) -> ClassicGroup:
    return ClassicGroup(
        group_id=item["groupId"],
        state=item.get("groupState", "Empty"),
        generation=int(item.get("generation", 0)),
        protocol_type=item.get("protocolType") or None,
        protocol_name=item.get("protocolName") or None,
        leader=item.get("leader") or None,
        version=int(item.get("version", 0)),
        member_count=int(item.get("memberCount", 0)),
        protocol_counts={k: int(v) for k, v in (item.get("protocolCounts") or {}).items()},
        rebalance_timeout_ms=int(item.get("rebalanceTimeoutMs", 0)),
        rebalance_started_ms=optional(item, "rebalanceStartedMs"),
        join_deadline_ms=optional(item, "joinDeadlineMs"),
        initial_delay_until_ms=optional(item, "initialDelayUntilMs"),
        sync_deadline_ms=optional(item, "syncDeadlineMs"),
        topic_changes=int(item.get("topicChanges", 0)),
        topic_changes_seen=int(item.get("topicChangesSeen", 0)),
        subscribed_topics=tuple(item.get("subscribedTopics") or ()),
        member_shards=int(item.get("memberShards", 8)),
        empty_since_ms=optional(item, "emptySinceMs"),
        next_check_ms=optional(item, schema.DEADLINE),
        created_at_ms=int(item.get("createdAt", 0)),
        rebalances=rebalances_from_item(item.get(schema.REBALANCES)),
    )


# Written only when set; removed from the item when the state clears them.
OPTIONAL_GROUP_ATTRIBUTES = (
    "rebalanceStartedMs",
    "joinDeadlineMs",
    "initialDelayUntilMs",
    "syncDeadlineMs",
    "emptySinceMs",
    schema.REBALANCES,
    schema.DEADLINE,
    schema.DEADLINE_SHARD,
    "joinedCount",  # kept by group items written before the join counters; never set now
)


def group_to_item(group: ClassicGroup, deadline_shards: int) -> dict[str, Any]:
    item: dict[str, Any] = {
        **schema.group_key(group.group_id),
        **listing_attributes(group.group_id),
        "kind": schema.KIND_GROUP,
        "groupType": GROUP_TYPE,
        "groupState": group.state,
        "protocolType": group.protocol_type or "",
        "protocolName": group.protocol_name or "",
        "leader": group.leader or "",
        "generation": group.generation,
        "version": group.version,
        "memberCount": group.member_count,
        "protocolCounts": group.protocol_counts,
        "rebalanceTimeoutMs": group.rebalance_timeout_ms,
        "topicChangesSeen": group.topic_changes_seen,
        "subscribedTopics": list(group.subscribed_topics),
        "memberShards": group.member_shards,
        "createdAt": group.created_at_ms,
    }
    for name, value in (
        ("rebalanceStartedMs", group.rebalance_started_ms),
        ("joinDeadlineMs", group.join_deadline_ms),
        ("initialDelayUntilMs", group.initial_delay_until_ms),
        ("syncDeadlineMs", group.sync_deadline_ms),
        ("emptySinceMs", group.empty_since_ms),
        (schema.REBALANCES, rebalances_to_item(group.rebalances)),
    ):
        if value is not None:
            item[name] = value
    if group.next_check_ms is not None:
        item[schema.DEADLINE] = group.next_check_ms
        item[schema.DEADLINE_SHARD] = schema.deadline_shard_value(group.group_id, deadline_shards)
    return item


def is_classic_member(item: dict[str, Any]) -> bool:
    """Member items of the other protocol can share the member keys for a moment around a
    conversion (until their cleanup runs): never read them as classic members."""
    return item.get("memberType", GROUP_TYPE) == GROUP_TYPE and item.get("groupType") is None


def member_from_item(item: dict[str, Any]) -> ClassicMember:
    """The member as its member item has it, without its payload (ClassicMember)."""
    return ClassicMember(
        member_id=item[schema.SK],
        instance_id=item.get("instanceId") or None,
        client_id=item.get("clientId", ""),
        client_host=item.get("clientHost", ""),
        principal=item.get("principal") or None,
        session_timeout_ms=int(item.get("sessionTimeoutMs", 0)),
        rebalance_timeout_ms=int(item.get("rebalanceTimeoutMs", 0)),
        expiry_ms=int(item.get("expiryMs", 0)),
        heartbeat_interval_ms=int(item.get("heartbeatIntervalMs", 0)),
        protocol_type=item.get("protocolType", ""),
        protocols=tuple(Protocol(name, b"") for name in item.get("protocolNames") or ()),
        joined_generation=int(item.get("joinedGeneration", -1)),
        member_generation=int(item.get("memberGeneration", -1)),
        joined_at_ms=int(item.get("joinedAt", 0)),
        synced_generation=int(item.get("syncedGeneration", -1)),
        session_deadline_ms=int(item.get("sessionDeadline", 0)),
        pending=bool(item.get("pending", False)),
        payload_loaded=False,
        stored_digest=item.get("protocolsDigest", ""),
        lags=lags_from_item(item.get("lags")),
    )


def with_payload(member: ClassicMember, payload: dict[str, Any] | None) -> ClassicMember:
    """`member` with the metadata and assignment of its payload item (None: it has none, as a
    pending member id: its protocol names with empty metadata)."""
    if payload is None:
        return replace(member, payload_loaded=True)
    return replace(
        member,
        protocols=tuple(
            Protocol(p["name"], base64.b64decode(p.get("metadata", "")))
            for p in payload.get("protocols") or ()
        ),
        assignment=base64.b64decode(payload.get("assignment", "")),
        assignment_generation=int(payload.get("assignmentGeneration", -1)),
        payload_loaded=True,
    )


def member_to_item(group: ClassicGroup, member: ClassicMember) -> dict[str, Any]:
    """The member item; its metadata and assignment go on its payload item (payload_to_item)."""
    assert member.payload_loaded, "a member item is written from a member with its payload"
    return {
        **schema.member_key(group.group_id, member.member_id, group.member_shards),
        "kind": schema.KIND_MEMBER,
        "groupId": group.group_id,
        "memberType": GROUP_TYPE,
        "instanceId": member.instance_id or "",
        "clientId": member.client_id,
        "clientHost": member.client_host,
        "principal": member.principal or "",
        "sessionTimeoutMs": member.session_timeout_ms,
        "rebalanceTimeoutMs": member.rebalance_timeout_ms,
        "expiryMs": member.expiry_ms,
        "heartbeatIntervalMs": member.heartbeat_interval_ms,
        "protocolType": member.protocol_type,
        "protocolNames": member.protocol_names,
        "protocolsDigest": member.protocols_digest,
        "joinedGeneration": member.joined_generation,
        "memberGeneration": member.member_generation,
        "joinedAt": member.joined_at_ms,
        "syncedGeneration": member.synced_generation,
        "sessionDeadline": member.session_deadline_ms,
        "pending": member.pending,
    }


def payload_attributes(
    group: ClassicGroup, member: ClassicMember, *, assignment: bool
) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "kind": schema.KIND_MEMBER_PAYLOAD,
        "groupId": group.group_id,
        "protocols": [
            {"name": p.name, "metadata": base64.b64encode(p.metadata).decode("ascii")}
            for p in member.protocols
        ],
    }
    if assignment:
        attributes["assignment"] = base64.b64encode(member.assignment).decode("ascii")
        attributes["assignmentGeneration"] = member.assignment_generation
    return attributes


def payload_to_item(group: ClassicGroup, member: ClassicMember) -> dict[str, Any]:
    """The member's payload item, whole: its protocols' metadata and its assignment."""
    return {
        **schema.payload_key(group.group_id, member.member_id, group.member_shards),
        **payload_attributes(group, member, assignment=True),
    }


def member_items(group: ClassicGroup, member: ClassicMember) -> list[dict[str, Any]]:
    """Every item of a member written from scratch: its member item and (unless it is a
    pending member id) its payload item."""
    items = [member_to_item(group, member)]
    if not member.pending:
        items.append(payload_to_item(group, member))
    return items
