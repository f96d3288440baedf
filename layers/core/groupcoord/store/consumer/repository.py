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

from typing import Any

from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import ConsumerGroup
from ...core.lag import Lags
from ...core.lag import to_item as lags_to_item
from .. import schema
from ..codecs.consumer import (
    CODEC,
    STANDING_ATTRIBUTES,
    group_item,
    is_consumer_member,
    member_condition,
    standing_from_item,
)
from ..dynamo import ConditionFailed, Delete, TransactItem, Update
from ..member_groups import MemberGroupStore, release_claim
from ..partition_reads import query_partitions
from ..stored_group import StoredGroup


def member_delete(group: ConsumerGroup, m: ConsumerGroupMember) -> Delete:
    """The delete of a member's item, on the versions read."""
    condition, names, values = member_condition(m)
    key = schema.member_key(group.group_id, m.member_id, group.member_shards)
    return Delete(key, condition=condition, names=names, values=values)


def remove_member_items(group: ConsumerGroup, m: ConsumerGroupMember) -> list[TransactItem]:
    """The deletes of a member's items (and its static claim), on the versions read."""
    items: list[TransactItem] = [member_delete(group, m)]
    if m.instance_id is not None:
        items.append(release_claim(group.group_id, m.instance_id, m.member_id, group.member_shards))
    return items


class ConsumerGroupStore(MemberGroupStore[ConsumerGroup, ConsumerGroupMember]):
    """Consumer groups' items: the group and member reads and writes it shares with streams
    groups' store (store/member_groups.py), and its sessions and static members."""

    codec = CODEC

    def standings(self, group: ConsumerGroup) -> list[ConsumerGroupMember]:
        """Every member with only its id, epoch and state (codecs/consumer.py,
        standing_from_item), read consistently, its shards side by side: the read that
        settles a group's listed state, with a fraction of each item to decode. Billed as
        the whole items, as DynamoDB bills a projection."""
        pks = list(schema.member_pks(group.group_id, group.member_shards))
        found = query_partitions(self.dynamo, pks, consistent=True, projection=STANDING_ATTRIBUTES)
        members = [standing_from_item(i) for items in found for i in items if is_consumer_member(i)]
        return sorted(members, key=lambda m: m.member_id)

    # --- writes ---

    def create_group(
        self, group_id: str, shards: int, now_ms: int, replacing: StoredGroup | None
    ) -> None:
        """A new, empty consumer group; `replacing` is an Empty classic group read."""
        group = ConsumerGroup(
            group_id,
            version=(replacing.version if replacing is not None else 0) + 1,
            member_shards=shards,
            # A replaced classic group's topics, so the next install unsubscribes them.
            subscribed_topics=replacing.header.subscribed_topics if replacing else (),
            created_at_ms=now_ms,
        )
        self.put_new_group(
            group_item(group, self.deadline_shards, topic_changes=0), group_id, replacing
        )

    def member_removal(
        self, group: ConsumerGroup, m: ConsumerGroupMember
    ) -> tuple[TransactItem, ...]:
        return (member_delete(group, m),)

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
