"""Classic groups in the table: the group item, member items (sharded), static instance items.

Every transition is one TransactWriteItems whose first item writes the group item conditioned
on the version read (or on its absence, for a new group); member writes ride along. A
transition that touches more than 99 members writes the extra member deletions first (they are
idempotent) and the group flip last, so a crash leaves the old group state in force.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.classic.model import GROUP_TYPE, ClassicGroup, ClassicMember, Protocol
from . import schema
from .conversion import Conversions
from .dynamo import ConditionFailed, Delete, Dynamo, Put, TransactionCanceled, TransactItem, Update
from .groups import listing_attributes

MAX_TRANSACTION_ITEMS = 100


class VersionConflict(Exception):
    """The group changed since it was read: re-read and decide again."""


def instance_key(group_id: str, instance_id: str) -> dict[str, str]:
    return {schema.PK: f"G#{group_id}#I", schema.SK: instance_id}


def _optional(item: dict[str, Any], name: str) -> Any:
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
        joined_count=int(item.get("joinedCount", 0)),
        protocol_counts={k: int(v) for k, v in (item.get("protocolCounts") or {}).items()},
        rebalance_timeout_ms=int(item.get("rebalanceTimeoutMs", 0)),
        rebalance_started_ms=_optional(item, "rebalanceStartedMs"),
        join_deadline_ms=_optional(item, "joinDeadlineMs"),
        initial_delay_until_ms=_optional(item, "initialDelayUntilMs"),
        sync_deadline_ms=_optional(item, "syncDeadlineMs"),
        topic_changes=int(item.get("topicChanges", 0)),
        topic_changes_seen=int(item.get("topicChangesSeen", 0)),
        subscribed_topics=tuple(item.get("subscribedTopics") or ()),
        member_shards=int(item.get("memberShards", 8)),
        empty_since_ms=_optional(item, "emptySinceMs"),
        next_check_ms=_optional(item, schema.DEADLINE),
        created_at_ms=int(item.get("createdAt", 0)),
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
        "joinedCount": group.joined_count,
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
    ):
        if value is not None:
            item[name] = value
    if group.next_check_ms is not None:
        item[schema.DEADLINE] = group.next_check_ms
        item[schema.DEADLINE_SHARD] = schema.deadline_shard_value(group.group_id, deadline_shards)
    return item


# Written only when set; removed from the item when the state clears them.
OPTIONAL_GROUP_ATTRIBUTES = (
    "rebalanceStartedMs",
    "joinDeadlineMs",
    "initialDelayUntilMs",
    "syncDeadlineMs",
    "emptySinceMs",
    schema.DEADLINE,
    schema.DEADLINE_SHARD,
)


def _set_item(item: dict[str, Any], optional: Sequence[str], condition: str) -> Update:
    """An UpdateItem that sets every attribute of `item` and removes absent optional ones.

    Unlike a Put it leaves attributes it does not name alone (`topicChanges`, bumped by the
    topic registry with ADD), so a concurrent notification is never overwritten.
    """
    key = {schema.PK: item[schema.PK], schema.SK: item[schema.SK]}
    attrs = {k: v for k, v in item.items() if k not in key}
    names = {f"#a{i}": name for i, name in enumerate(attrs)}
    values = {f":v{i}": value for i, value in enumerate(attrs.values())}
    expression = "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(attrs)))
    absent = [name for name in optional if name not in attrs]
    if absent:
        names.update({f"#r{i}": name for i, name in enumerate(absent)})
        expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(absent)))
    return Update(key, expression, names=names, values=values, condition=condition)


def _is_classic_member(item: dict[str, Any]) -> bool:
    """Member items of the other protocol can share the member keys for a moment around a
    conversion (until their cleanup runs): never read them as classic members."""
    return item.get("memberType", GROUP_TYPE) == GROUP_TYPE and item.get("groupType") is None


def member_from_item(item: dict[str, Any]) -> ClassicMember:
    return ClassicMember(
        member_id=item[schema.SK],
        instance_id=item.get("instanceId") or None,
        client_id=item.get("clientId", ""),
        client_host=item.get("clientHost", ""),
        session_timeout_ms=int(item.get("sessionTimeoutMs", 0)),
        rebalance_timeout_ms=int(item.get("rebalanceTimeoutMs", 0)),
        expiry_ms=int(item.get("expiryMs", 0)),
        heartbeat_interval_ms=int(item.get("heartbeatIntervalMs", 0)),
        protocol_type=item.get("protocolType", ""),
        protocols=tuple(
            Protocol(p["name"], base64.b64decode(p.get("metadata", "")))
            for p in item.get("protocols") or ()
        ),
        joined_generation=int(item.get("joinedGeneration", -1)),
        member_generation=int(item.get("memberGeneration", -1)),
        joined_at_ms=int(item.get("joinedAt", 0)),
        synced_generation=int(item.get("syncedGeneration", -1)),
        assignment=base64.b64decode(item.get("assignment", "")),
        assignment_generation=int(item.get("assignmentGeneration", -1)),
        session_deadline_ms=int(item.get("sessionDeadline", 0)),
        pending=bool(item.get("pending", False)),
    )


def member_to_item(group: ClassicGroup, member: ClassicMember) -> dict[str, Any]:
    return {
        **schema.member_key(group.group_id, member.member_id, group.member_shards),
        "kind": schema.KIND_MEMBER,
        "groupId": group.group_id,
        "memberType": GROUP_TYPE,
        "instanceId": member.instance_id or "",
        "clientId": member.client_id,
        "clientHost": member.client_host,
        "sessionTimeoutMs": member.session_timeout_ms,
        "rebalanceTimeoutMs": member.rebalance_timeout_ms,
        "expiryMs": member.expiry_ms,
        "heartbeatIntervalMs": member.heartbeat_interval_ms,
        "protocolType": member.protocol_type,
        "protocols": [
            {"name": p.name, "metadata": base64.b64encode(p.metadata).decode("ascii")}
            for p in member.protocols
        ],
        "joinedGeneration": member.joined_generation,
        "memberGeneration": member.member_generation,
        "joinedAt": member.joined_at_ms,
        "syncedGeneration": member.synced_generation,
        "assignment": base64.b64encode(member.assignment).decode("ascii"),
        "assignmentGeneration": member.assignment_generation,
        "sessionDeadline": member.session_deadline_ms,
        "pending": member.pending,
    }


@dataclass
class ClassicTransition:
    """A group state change and the member writes that go with it."""

    group: ClassicGroup  # the new state; its version is bumped on commit
    expected_version: int | None  # None: the group item must not exist yet
    put_members: list[ClassicMember] = field(default_factory=list)
    delete_members: list[ClassicMember] = field(default_factory=list)
    put_instances: dict[str, str] = field(default_factory=dict)  # instance -> member id
    delete_instances: list[str] = field(default_factory=list)
    # (member id, attributes) set without touching the rest of the member item.
    member_updates: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class ClassicGroupStore:
    def __init__(self, dynamo: Dynamo, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards

    # --- reads ---

    def group_item(self, group_id: str, *, consistent: bool = True) -> dict[str, Any] | None:
        # Through Conversions: an interrupted protocol conversion is finished first.
        return Conversions(self.dynamo).read_group_item(group_id, consistent=consistent)

    def members(self, group: ClassicGroup) -> list[ClassicMember]:
        found: list[ClassicMember] = []
        for pk in schema.member_pks(group.group_id, group.member_shards):
            found.extend(
                member_from_item(i)
                for i in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
                if _is_classic_member(i)
            )
        return found

    def member(self, group: ClassicGroup, member_id: str) -> ClassicMember | None:
        if not member_id:
            return None
        key = schema.member_key(group.group_id, member_id, group.member_shards)
        item = self.dynamo.get(key, consistent=True)
        return member_from_item(item) if item and _is_classic_member(item) else None

    def instance_owner(self, group_id: str, instance_id: str) -> str | None:
        item = self.dynamo.get(instance_key(group_id, instance_id), consistent=True)
        return item["memberId"] if item else None

    # --- writes ---

    def commit(self, transition: ClassicTransition) -> ClassicGroup:
        """Write the transition atomically; raises VersionConflict if the group moved."""
        group = transition.group
        new_group = replace(group, version=group.version + 1)
        group_write = _set_item(
            group_to_item(new_group, self.deadline_shards),
            OPTIONAL_GROUP_ATTRIBUTES,
            "attribute_not_exists(pk)",
        )
        if transition.expected_version is not None:
            group_write = replace(
                group_write,
                condition="#version = :expected",
                names={**(group_write.names or {}), "#version": "version"},
                values={**(group_write.values or {}), ":expected": transition.expected_version},
            )
        # Written with the group flip, atomically: new members and static instance claims.
        atomic: list[TransactItem] = [
            Put(member_to_item(new_group, m)) for m in transition.put_members
        ]
        atomic += [
            Put({**instance_key(group.group_id, iid), "kind": "instance", "memberId": mid})
            for iid, mid in transition.put_instances.items()
        ]
        atomic += [Delete(instance_key(group.group_id, iid)) for iid in transition.delete_instances]
        # Idempotent: restarting sessions, marking generations, deleting departed members.
        # They may be written before the flip when they do not fit in its transaction: if the
        # flip then loses its race, they have done no harm (a session restarted a little early,
        # a member marked as joined that the next barrier keeps anyway, a dead member gone).
        idempotent: list[TransactItem] = [
            Update(
                schema.member_key(group.group_id, member_id, group.member_shards),
                "SET " + ", ".join(f"#a{i} = :v{i}" for i in range(len(attrs))),
                names={f"#a{i}": name for i, name in enumerate(attrs)},
                values={f":v{i}": value for i, value in enumerate(attrs.values())},
                condition="attribute_exists(pk)",
            )
            for member_id, attrs in transition.member_updates
        ]
        idempotent += [
            Delete(schema.member_key(group.group_id, m.member_id, group.member_shards))
            for m in transition.delete_members
        ]
        room = MAX_TRANSACTION_ITEMS - 1 - len(atomic)
        if room < 0:
            raise ValueError("a classic transition may add at most 99 members at once")
        items = atomic + idempotent[:room]
        self._write_ahead(idempotent[room:])
        try:
            self.dynamo.transact([group_write, *items])
        except TransactionCanceled as cancel:
            if 0 in cancel.failed_conditions():
                raise VersionConflict(group.group_id) from None
            raise
        return new_group

    def replace_empty_consumer_group(
        self, item: dict[str, Any], member_shards: int, now_ms: int
    ) -> ClassicGroup:
        """Turn the Empty consumer group `item` (as read) into an Empty classic group: one Put,
        conditioned on the group still being that consumer group, at that version, with no
        members. Offsets are per group id and stay. VersionConflict if it moved."""
        group = ClassicGroup(
            group_id=item["groupId"],
            version=int(item.get("version", 0)) + 1,
            member_shards=member_shards,
            created_at_ms=now_ms,
            empty_since_ms=now_ms,
        )
        try:
            self.dynamo.put(
                group_to_item(group, self.deadline_shards),
                condition="groupType = :consumer AND #version = :v AND memberCount = :zero",
                names={"#version": "version"},
                values={":consumer": "consumer", ":v": item.get("version", 0), ":zero": 0},
            )
        except ConditionFailed:
            raise VersionConflict(group.group_id) from None
        return group

    def delete_classic_leftovers(self, group_id: str, member_shards: int) -> None:
        """After the group became a consumer group: classic member items (ids still pending
        their second join) and static instance claims of the classic group. Best effort: the
        consumer store ignores classic member items anyway."""
        keys = []
        for pk in [*schema.member_pks(group_id, member_shards), f"G#{group_id}#I"]:
            for found in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                if found.get("memberType") == GROUP_TYPE or found.get("kind") == "instance":
                    keys.append({schema.PK: found[schema.PK], schema.SK: found[schema.SK]})
        if keys:
            self.dynamo.batch_write(deletes=keys)

    def _write_ahead(self, items: Sequence[TransactItem]) -> None:
        """Idempotent member writes that did not fit in the flip's transaction."""
        deletes = [i.key for i in items if isinstance(i, Delete)]
        updates = [i for i in items if isinstance(i, Update)]
        if deletes:
            self.dynamo.batch_write(deletes=deletes)
        for start in range(0, len(updates), MAX_TRANSACTION_ITEMS):
            chunk = updates[start : start + MAX_TRANSACTION_ITEMS]
            try:
                self.dynamo.transact(chunk)
            except TransactionCanceled:
                for update in chunk:  # a member left meanwhile: update the others
                    with contextlib.suppress(ConditionFailed):
                        self.dynamo.update(update)

    def renew_session(self, group: ClassicGroup, member_id: str, deadline_ms: int) -> None:
        """Push the member's session deadline (never the group's item)."""
        self.dynamo.update(
            Update(
                schema.member_key(group.group_id, member_id, group.member_shards),
                "SET sessionDeadline = :dl",
                values={":dl": deadline_ms},
                condition="attribute_exists(pk)",
            )
        )

    def restart_session(self, group: ClassicGroup, member_id: str, now_ms: int) -> ClassicMember:
        """Restart the member's session timer (now + its expiry) and return the member, in one
        write; ConditionFailed if it is gone."""
        item = self.dynamo.update(
            Update(
                schema.member_key(group.group_id, member_id, group.member_shards),
                "SET sessionDeadline = expiryMs + :now",
                values={":now": now_ms},
                condition="attribute_exists(pk)",
            ),
            return_new=True,
        )
        assert item is not None
        return member_from_item(item)

    def mark_synced(self, group: ClassicGroup, member_id: str, deadline_ms: int) -> None:
        """A member has sent its sync for the current generation (and is alive)."""
        self.dynamo.update(
            Update(
                schema.member_key(group.group_id, member_id, group.member_shards),
                "SET syncedGeneration = :g, sessionDeadline = :dl",
                values={":g": group.generation, ":dl": deadline_ms},
                condition="attribute_exists(pk)",
            )
        )

    def write_assignments(
        self, group: ClassicGroup, assignments: Sequence[tuple[str, bytes]]
    ) -> None:
        """Store the leader's assignments on the member items, 100 per transaction."""
        updates = [
            Update(
                schema.member_key(group.group_id, member_id, group.member_shards),
                "SET assignment = :a, assignmentGeneration = :g",
                values={":a": base64.b64encode(data).decode("ascii"), ":g": group.generation},
                condition="attribute_exists(pk)",
            )
            for member_id, data in assignments
        ]
        for start in range(0, len(updates), MAX_TRANSACTION_ITEMS):
            try:
                self.dynamo.transact(updates[start : start + MAX_TRANSACTION_ITEMS])
            except TransactionCanceled:
                # A member vanished meanwhile: write the others one by one.
                for update in updates[start : start + MAX_TRANSACTION_ITEMS]:
                    try:
                        self.dynamo.update(update)
                    except ConditionFailed:  # a gone member gets nothing
                        continue

    def delete_group(self, group: ClassicGroup) -> None:
        members = self.members(group)
        keys = [
            schema.member_key(group.group_id, m.member_id, group.member_shards) for m in members
        ]
        instances = self.dynamo.query("pk = :pk", {":pk": f"G#{group.group_id}#I"}, consistent=True)
        keys += [{schema.PK: i[schema.PK], schema.SK: i[schema.SK]} for i in instances]
        self.dynamo.batch_write(deletes=keys)
