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

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import ConsumerGroup
from ...core.lag import Lags
from ...core.lag import to_item as lags_to_item
from .. import schema
from ..conversion import Conversions
from ..dynamo import ConditionFailed, Delete, Dynamo, Put, TransactionCanceled, TransactItem, Update
from ..errors import Conflict
from .codec import (
    KIND_STATIC_INSTANCE,
    group_item,
    group_update,
    is_consumer_member,
    member_condition,
    member_from_item,
    member_to_item,
    static_instance_key,
)


def remove_member_items(group: ConsumerGroup, m: ConsumerGroupMember) -> list[TransactItem]:
    """The deletes of a member's items (and its static claim), on the versions read."""
    condition, names, values = member_condition(m)
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


class ConsumerGroupStore:
    def __init__(self, dynamo: Dynamo, deadline_shards: int, conversions: Conversions) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards
        self.conversions = conversions

    def group_item(self, group_id: str, *, consistent: bool) -> dict[str, Any] | None:
        # Through Conversions: an interrupted protocol conversion is finished first.
        return self.conversions.read_group_item(group_id, consistent=consistent)

    def member(
        self, group: ConsumerGroup, member_id: str, *, consistent: bool
    ) -> ConsumerGroupMember | None:
        key = schema.member_key(group.group_id, member_id, group.member_shards)
        item = self.dynamo.get(key, consistent=consistent)
        return member_from_item(item) if item and is_consumer_member(item) else None

    def members(self, group: ConsumerGroup) -> list[ConsumerGroupMember]:
        found = []
        for pk in schema.member_pks(group.group_id, group.member_shards):
            for item in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                if is_consumer_member(item):
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
        return {i["memberId"]: member_from_item(i) for i in items if is_consumer_member(i)}

    def instance_owner(self, group: ConsumerGroup, instance_id: str) -> str | None:
        key = static_instance_key(group.group_id, instance_id, group.member_shards)
        item = self.dynamo.get(key, consistent=True)
        return item["memberId"] if item else None

    def update_group(
        self, old: ConsumerGroup, new: ConsumerGroup, extra: Sequence[TransactItem] = ()
    ) -> ConsumerGroup:
        """One conditional write of the group (what changed from `old`, as read, to `new`),
        with `extra` items in the same transaction; Conflict if the group moved. Returns the
        group as written (no re-read needed: the write was on the version read)."""
        update = group_update(old, new, self.deadline_shards)
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
        item = group_item(group, self.deadline_shards, topic_changes=0)
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

    def put_member_items(
        self, group: ConsumerGroup, m: ConsumerGroupMember, *, new: bool
    ) -> list[TransactItem]:
        item = member_to_item(group.group_id, group.member_shards, m)
        if new:
            return [Put(item, condition="attribute_not_exists(pk)")]
        condition, names, values = member_condition(m)
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
        return remove_member_items(group, m)

    def renew_session(
        self,
        group: ConsumerGroup,
        m: ConsumerGroupMember,
        deadline_ms: int,
        lags: Lags | None = None,
    ) -> bool:
        """Move the member's session deadline (and replace its reported lags, given), if it is
        still at the epoch read (one conditional update of its item); False if it moved or is
        gone."""
        expression = "SET sessionDeadline = :deadline, mver = mver + :one"
        values: dict[str, Any] = {":deadline": deadline_ms, ":one": 1, ":epoch": m.epoch}
        if lags is not None:
            expression += ", lags = :lags"
            values[":lags"] = lags_to_item(lags)
        try:
            self.dynamo.update(
                Update(
                    schema.member_key(group.group_id, m.member_id, group.member_shards),
                    expression,
                    values=values,
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
