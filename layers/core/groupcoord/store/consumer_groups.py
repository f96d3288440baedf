"""Consumer groups (KIP-848) in the table: the group item, member items, static instance items.

- Group item (schema.group_key): a fixed set of fields: epochs, version, member count, the
  union of subscribed topic names, the install lease, `dl` / `dlShard`. Every write of it is
  conditioned on the `version` read and bumps it.
- Member items (schema.member_key, sharded by member id): subscription, epochs, current
  assignment (assigned + pending revocation), the target with its epoch, and `waitOn`, the
  members that held partitions of the target when it was installed. A steady heartbeat writes
  only its own member item (a Put conditioned on the member's `mver` and `tver`).
- Static instance items (`G#<group>#S<shard>` / instance id): which member id owns an
  instance id, claimed in the same transaction that creates or replaces the member.

docs/consumer-protocol.md describes the conditions of each write.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from ..core.classic.model import ClassicGroup, ClassicMember
from ..core.consumer.assignment import from_item, to_item
from ..core.consumer.member import ClassicMetadata, ConsumerGroupMember, Holder
from ..core.consumer.model import EMPTY, ConsumerGroup
from ..core.consumer.reconciliation import MemberAssignment, MemberState
from . import schema
from .classic_groups import group_to_item, instance_key, payload_to_item
from .classic_groups import member_to_item as classic_member_item
from .conversion import Conversion, Conversions
from .dynamo import (
    ConditionFailed,
    Delete,
    Dynamo,
    Put,
    TransactionCanceled,
    TransactItem,
    Update,
)
from .errors import Conflict
from .groups import listing_attributes
from .topics import regex_delete, subscription_delete, subscription_put

GROUP_TYPE = "consumer"
KIND_STATIC_INSTANCE = "static-instance"
# Items per transaction, leaving room for the group item (DynamoDB allows 100).
CHUNK = 98


# The group item's attributes of ConsumerGroup.scan_id, .classic_protocols and
# .subscription_digest.
SCAN_ID = "scanId"
CLASSIC_PROTOCOLS = "classicProtocols"
SUBSCRIPTION_DIGEST = "subscriptionDigest"


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
    )


def _attributes(group: ConsumerGroup, deadline_shards: int) -> dict[str, Any]:
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
    }


def static_instance_key(group_id: str, instance_id: str, shards: int) -> dict[str, str]:
    shard = schema.stable_shard(instance_id, shards)
    return {schema.PK: schema.static_instance_pk(group_id, shard), schema.SK: instance_id}


def _is_consumer_member(item: dict[str, Any]) -> bool:
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
    return item


def _classic_from_item(value: dict[str, Any] | None) -> ClassicMetadata | None:
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
        acquired_version=int(item.get("acqVersion", 0)),
        version=int(item.get("mver", 0)),
        session_deadline=int(item.get("sessionDeadline", 0)),
        rebalance_deadline=(
            int(item["rebalanceDeadline"]) if "rebalanceDeadline" in item else None
        ),
        classic=_classic_from_item(item.get("classic")),
    )


def _conversion_condition(
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


def _member_condition(m: ConsumerGroupMember) -> tuple[str, dict[str, str], dict[str, Any]]:
    return (
        "attribute_exists(pk) AND #mver = :mver AND #tver = :tver",
        {"#mver": "mver", "#tver": "tver"},
        {":mver": m.version, ":tver": m.target_version},
    )


class ConsumerGroupStore:
    def __init__(self, dynamo: Dynamo, deadline_shards: int, conversions: Conversions) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards
        self.conversions = conversions

    # --- reads ---

    def group_item(self, group_id: str, *, consistent: bool) -> dict[str, Any] | None:
        # Through Conversions: an interrupted protocol conversion is finished first.
        return self.conversions.read_group_item(group_id, consistent=consistent)

    def member(
        self, group: ConsumerGroup, member_id: str, *, consistent: bool
    ) -> ConsumerGroupMember | None:
        key = schema.member_key(group.group_id, member_id, group.member_shards)
        item = self.dynamo.get(key, consistent=consistent)
        return member_from_item(item) if item and _is_consumer_member(item) else None

    def members(self, group: ConsumerGroup) -> list[ConsumerGroupMember]:
        found = []
        for pk in schema.member_pks(group.group_id, group.member_shards):
            for item in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                if _is_consumer_member(item):
                    found.append(member_from_item(item))
        return sorted(found, key=lambda m: m.member_id)

    def members_by_id(
        self, group: ConsumerGroup, member_ids: Iterable[str]
    ) -> dict[str, ConsumerGroupMember]:
        keys = [
            schema.member_key(group.group_id, mid, group.member_shards)
            for mid in sorted(set(member_ids))
        ]
        items = self.dynamo.batch_get(keys, consistent=True)
        return {i["memberId"]: member_from_item(i) for i in items if _is_consumer_member(i)}

    def instance_owner(self, group: ConsumerGroup, instance_id: str) -> str | None:
        key = static_instance_key(group.group_id, instance_id, group.member_shards)
        item = self.dynamo.get(key, consistent=True)
        return item["memberId"] if item else None

    # --- group item writes ---

    def _group_update(self, old: ConsumerGroup, new: ConsumerGroup) -> Update:
        """Write what changed from `old` to `new` (SET, or REMOVE what became absent) and bump
        `version`, on the version read."""
        before = _attributes(old, self.deadline_shards)
        after = _attributes(new, self.deadline_shards)
        names = {"#version": "version"}
        values: dict[str, Any] = {":expected": old.version, ":one": 1}
        sets, removes = [], []
        for i, (name, value) in enumerate(after.items()):
            if value == before[name]:
                continue
            names[f"#a{i}"] = name
            if value is None:
                removes.append(f"#a{i}")
            else:
                values[f":a{i}"] = value
                sets.append(f"#a{i} = :a{i}")
        sets.append("#version = #version + :one")
        expression = "SET " + ", ".join(sets)
        if removes:
            expression += " REMOVE " + ", ".join(removes)
        return Update(
            schema.group_key(old.group_id),
            expression,
            names=names,
            values=values,
            condition="#version = :expected",
        )

    def update_group(
        self, old: ConsumerGroup, new: ConsumerGroup, extra: Sequence[TransactItem] = ()
    ) -> ConsumerGroup:
        """One conditional write of the group (what changed from `old`, as read, to `new`),
        with `extra` items in the same transaction; Conflict if the group moved. Returns the
        group as written (no re-read needed: the write was on the version read)."""
        update = self._group_update(old, new)
        try:
            if extra:
                self.dynamo.transact([update, *extra])
            else:
                self.dynamo.update(update)
        except (ConditionFailed, TransactionCanceled):
            raise Conflict(old.group_id) from None
        return replace(new, version=old.version + 1)

    def create_group(
        self, group_id: str, shards: int, now_ms: int, replacing: dict[str, Any] | None
    ) -> None:
        """A new, empty consumer group; `replacing` is an Empty classic group item read."""
        group = ConsumerGroup(
            group_id,
            version=int((replacing or {}).get("version", 0)) + 1,
            member_shards=shards,
            # A replaced classic group's topics, so the next install unsubscribes them.
            subscribed_topics=tuple((replacing or {}).get("subscribedTopics") or ()),
            created_at_ms=now_ms,
        )
        item = {
            **schema.group_key(group_id),
            **listing_attributes(group_id),
            "kind": schema.KIND_GROUP,
            "groupType": GROUP_TYPE,
            "protocolType": "consumer",
            "groupId": group_id,
            "version": group.version,
            "memberShards": shards,
            "topicChanges": 0,
            "createdAt": now_ms,
            **{
                name: value
                for name, value in _attributes(group, self.deadline_shards).items()
                if value is not None
            },
        }
        if replacing is None:
            condition, names, values = "attribute_not_exists(pk)", None, None
        else:
            condition = "groupType = :classic AND #version = :v AND memberCount = :zero"
            names = {"#version": "version"}
            values = {":classic": "classic", ":v": replacing.get("version", 0), ":zero": 0}
        try:
            self.dynamo.put(item, condition=condition, names=names, values=values)
        except ConditionFailed:
            raise Conflict(group_id) from None

    def upgrade_conversion(
        self,
        classic: ClassicGroup,
        classic_item: dict[str, Any],
        members: Sequence[ConsumerGroupMember],
        classic_protocols: Sequence[str],
        *,
        classic_members: Sequence[ClassicMember],
        pending: Sequence[ClassicMember],
    ) -> Conversion:
        """The classic group `classic` (its item `classic_item` at the version read, with the
        topic-change count read) becomes a Stable consumer group at group epoch = target
        epoch = generation with `members`: each member item is rewritten as a consumer member
        (same key) and static instance claims move to this store's keys. The classic items
        that go with it (its members' static claims and payload items, the ids still pending
        their second join) are deleted in the same step."""
        gid = classic.group_id
        shards = classic.member_shards
        group: dict[str, Any] = {
            **schema.group_key(gid),
            **listing_attributes(gid),
            "kind": schema.KIND_GROUP,
            "groupType": GROUP_TYPE,
            "protocolType": "consumer",
            "groupState": "Stable",
            "version": classic.version + 1,
            "memberCount": len(members),
            "memberShards": shards,
            "groupEpoch": classic.generation,
            "targetEpoch": classic.generation,
            "assignorName": "",
            "topicChangesSeen": classic.topic_changes_seen,
            # The classic group registered these with the topic registry; the next install
            # reconciles the registrations with the members' subscriptions.
            "subscribedTopics": list(classic.subscribed_topics),
            CLASSIC_PROTOCOLS: list(classic_protocols),
            "createdAt": classic.created_at_ms,
            schema.DEADLINE: min(m.session_deadline for m in members),
            schema.DEADLINE_SHARD: schema.deadline_shard_value(gid, self.deadline_shards),
        }
        if "topicChanges" in classic_item:
            group["topicChanges"] = classic_item["topicChanges"]
        condition, values = _conversion_condition(
            "classic", classic.version, int(classic_item.get("topicChanges", 0))
        )
        writes: list[Put | Delete] = []
        for m in members:
            writes.append(Put(member_to_item(gid, shards, m)))
            if m.instance_id is not None:
                key = static_instance_key(gid, m.instance_id, shards)
                claim = {**key, "kind": KIND_STATIC_INSTANCE, "groupId": gid}
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
        self,
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
            **group_to_item(classic, self.deadline_shards),
            "topicChanges": group.topic_changes,
        }
        by_id = {m.member_id: m for m in classic_members}
        condition, values = _conversion_condition(GROUP_TYPE, group.version, group.topic_changes)
        writes: list[Put | Delete] = []
        for m in leaving:
            for item in self.remove_member_items(group, m):
                assert isinstance(item, Delete)
                writes.append(item)
        for m in remaining:
            member_condition, names, member_values = _member_condition(m)
            classic_member = by_id[m.member_id]
            writes.append(
                Put(
                    classic_member_item(classic, classic_member),
                    member_condition,
                    names,
                    member_values,
                )
            )
            if m.instance_id is not None:
                writes.append(
                    Delete(
                        static_instance_key(gid, m.instance_id, group.member_shards),
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

    # --- member writes ---

    def put_member_items(
        self, group: ConsumerGroup, m: ConsumerGroupMember, *, new: bool
    ) -> list[TransactItem]:
        item = member_to_item(group.group_id, group.member_shards, m)
        if new:
            return [Put(item, condition="attribute_not_exists(pk)")]
        condition, names, values = _member_condition(m)
        return [Put({**item, "mver": m.version + 1}, condition, names, values)]

    def claim_instance(self, group: ConsumerGroup, m: ConsumerGroupMember) -> Put:
        assert m.instance_id is not None
        key = static_instance_key(group.group_id, m.instance_id, group.member_shards)
        item = {**key, "kind": KIND_STATIC_INSTANCE, "groupId": group.group_id,
                "memberId": m.member_id}  # fmt: skip
        return Put(item, condition="attribute_not_exists(pk)")

    def move_instance(
        self, group: ConsumerGroup, instance_id: str, old_id: str, new_id: str
    ) -> Update:
        return Update(
            static_instance_key(group.group_id, instance_id, group.member_shards),
            "SET memberId = :new",
            values={":new": new_id, ":old": old_id},
            condition="memberId = :old",
        )

    def remove_member_items(
        self, group: ConsumerGroup, m: ConsumerGroupMember
    ) -> list[TransactItem]:
        condition, names, values = _member_condition(m)
        items: list[TransactItem] = [
            Delete(
                schema.member_key(group.group_id, m.member_id, group.member_shards),
                condition=condition,
                names=names,
                values=values,
            )
        ]
        if m.instance_id is not None:
            items.append(
                Delete(
                    static_instance_key(group.group_id, m.instance_id, group.member_shards),
                    condition="attribute_not_exists(pk) OR memberId = :m",
                    values={":m": m.member_id},
                )
            )
        return items

    def renew_session(self, group: ConsumerGroup, m: ConsumerGroupMember, deadline_ms: int) -> bool:
        """Move the member's session deadline, if it is still at the epoch read (one
        conditional update of its item); False if it moved or is gone."""
        try:
            self.dynamo.update(
                Update(
                    schema.member_key(group.group_id, m.member_id, group.member_shards),
                    "SET sessionDeadline = :deadline, mver = mver + :one",
                    values={":deadline": deadline_ms, ":one": 1, ":epoch": m.epoch},
                    condition="attribute_exists(pk) AND memberEpoch = :epoch",
                )
            )
        except ConditionFailed:
            return False
        return True

    def write_member(self, group: ConsumerGroup, m: ConsumerGroupMember) -> None:
        """The steady heartbeat's one write: the member item, on the versions read."""
        (put,) = self.put_member_items(group, m, new=False)
        assert isinstance(put, Put)
        try:
            self.dynamo.put(put.item, condition=put.condition, names=put.names, values=put.values)
        except ConditionFailed:
            raise Conflict(m.member_id) from None

    def transact(self, items: Sequence[TransactItem]) -> None:
        try:
            self.dynamo.transact(items)
        except TransactionCanceled:
            raise Conflict("transaction") from None

    # --- target installs ---

    def target_update(self, group: ConsumerGroup, m: ConsumerGroupMember, epoch: int) -> Update:
        """A new target for a member, conditioned on it not having acquired anything since
        the install read it (so the holders recorded in `waitOn` are complete)."""
        return Update(
            schema.member_key(group.group_id, m.member_id, group.member_shards),
            "SET #target = :target, targetEpoch = :epoch, waitOn = :wait, tver = tver + :one",
            names={"#target": "target"},
            values={
                ":target": to_item(m.target),
                ":epoch": epoch,
                ":wait": [[h.member_id, h.instance_id or ""] for h in m.wait_on],
                ":one": 1,
                ":acq": m.acquired_version,
            },
            condition="attribute_exists(pk) AND acqVersion = :acq",
        )

    def take_install_lease(
        self, old: ConsumerGroup, new: ConsumerGroup, now_ms: int
    ) -> ConsumerGroup:
        """Write `new`, which holds the install lease (`install_id`, `install_until`), on the
        version read (so the group epoch it installs for is the current one) and only if no
        live lease is held."""
        assert new.install_id is not None
        update = self._group_update(old, new)
        update = replace(
            update,
            condition="#version = :expected AND "
            "(attribute_not_exists(installId) OR installUntil <= :now)",
            values={**(update.values or {}), ":now": now_ms},
        )
        try:
            self.dynamo.update(update)
        except ConditionFailed:
            raise Conflict(old.group_id) from None
        return replace(new, version=old.version + 1)

    def renew_install(self, group: ConsumerGroup, install_id: str, until_ms: int) -> Update:
        """Each chunk of target writes renews the lease, and fails if it was lost (the group's
        `version` is not bumped: the lease is not group state)."""
        return Update(
            schema.group_key(group.group_id),
            "SET installUntil = :until",
            values={":id": install_id, ":until": until_ms},
            condition="installId = :id",
        )

    def write_targets(
        self,
        group: ConsumerGroup,
        install_id: str,
        updates: Sequence[Update],
        lease_until: Callable[[], int],
    ) -> None:
        """Chunks of target writes (< 100 items per transaction), each guarded by the install
        lease on the group item."""
        for start in range(0, len(updates), CHUNK):
            chunk = list(updates[start : start + CHUNK])
            self.transact([*chunk, self.renew_install(group, install_id, lease_until())])

    def flip_target(self, old: ConsumerGroup, new: ConsumerGroup, install_id: str) -> ConsumerGroup:
        """The install's last write: `new` (its target epoch the group epoch read when the
        lease was taken, the lease released), if the lease is still ours and the target epoch
        never went past it. Joins that bumped the group epoch meanwhile are installed by the
        next request: the group is returned as it is after the write."""
        update = self._group_update(old, new)
        update = replace(
            update,
            condition="installId = :install AND targetEpoch < :epoch",
            values={**(update.values or {}), ":install": install_id, ":epoch": new.target_epoch},
        )
        update.values.pop(":expected", None)  # type: ignore[union-attr]
        try:
            item = self.dynamo.update(update, return_new=True)
        except ConditionFailed:
            raise Conflict(old.group_id) from None
        assert item is not None
        return group_from_item(item)

    def release_install(self, group_id: str, install_id: str) -> None:
        """Give up the install lease (best effort: it expires anyway)."""
        with contextlib.suppress(ConditionFailed):
            self.dynamo.update(
                Update(
                    schema.group_key(group_id),
                    "REMOVE installId, installUntil SET #version = #version + :one",
                    names={"#version": "version"},
                    values={":id": install_id, ":one": 1},
                    condition="installId = :id",
                )
            )

    def delete_group_items(self, group_id: str, shards: int) -> None:
        """Member and instance items of a deleted group (delete-groups cleanup)."""
        keys = []
        for shard in range(shards):
            for pk in (
                schema.member_pk(group_id, shard),
                schema.static_instance_pk(group_id, shard),
            ):
                for item in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                    keys.append({schema.PK: item[schema.PK], schema.SK: item[schema.SK]})
        self.dynamo.batch_write(deletes=keys)
