"""What the consumer protocol's and streams groups' stores share (store/consumer/repository.py,
store/streams/repository.py): the group item, read through Conversions and written as the
difference from the one read on its version; member items sharded over the group's member
shards, each write conditioned on the member as read; static instance claims. A
family says only how its group item and its members are encoded (as store/install_lease.py's
installs do)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from ..core.rebalances import with_epoch_move
from . import schema
from .conversion import Conversions
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
from .family_codec import FamilyCodec
from .partition_reads import query_partitions
from .stored_group import StoredGroup
from .writes import NO_WRITES, Writes


class MemberGroup(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def member_shards(self) -> int: ...


class VersionedMember(Protocol):
    @property
    def member_id(self) -> str: ...
    @property
    def instance_id(self) -> str | None: ...
    @property
    def version(self) -> int: ...


G = TypeVar("G", bound=MemberGroup)
M = TypeVar("M", bound=VersionedMember)


class MemberGroupStore(Generic[G, M]):
    """One family's group and member items; a subclass encodes them."""

    # How the family encodes its items (store/codecs/<family>.py's CODEC).
    codec: FamilyCodec[Any, Any]

    def __init__(self, dynamo: Dynamo, deadline_shards: int, conversions: Conversions) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards
        self.conversions = conversions

    # --- what a family supplies ---

    @property
    def group_type(self) -> str:
        return self.codec.group_type

    def group_update(self, old: G, new: G) -> Update:
        return self.codec.group_update(old, new, self.deadline_shards)

    def typed(self, found: StoredGroup) -> G:
        """A group item of the family's type as its model."""
        return self.codec.group_from_item(found.raw)  # type: ignore[no-any-return]

    def is_member(self, item: Mapping[str, Any]) -> bool:
        return self.codec.is_member(item)

    def member_from_item(self, item: Mapping[str, Any]) -> M:
        return self.codec.member_from_item(item)  # type: ignore[no-any-return]

    def member_to_item(self, group_id: str, shards: int, m: M) -> dict[str, Any]:
        return self.codec.member_to_item(group_id, shards, m)

    def member_condition(self, m: M) -> tuple[str, dict[str, str], dict[str, Any]]:
        """A member write's condition on the member as read."""
        return self.codec.member_condition(m)

    # --- reads ---

    def group_item(self, group_id: str, *, consistent: bool) -> dict[str, Any] | None:
        # Through Conversions: an interrupted protocol conversion is finished first.
        return self.conversions.read_group_item(group_id, consistent=consistent)

    def read_group(self, group_id: str, *, consistent: bool) -> StoredGroup | None:
        """The group item under `group_id`, of whatever type, typed."""
        return self.conversions.read_group(group_id, consistent=consistent)

    def group(self, group_id: str) -> G | None:
        """The family's group `group_id` (a consistent read); None: none, or of another
        type."""
        found = self.read_group(group_id, consistent=True)
        if found is None or found.group_type != self.group_type:
            return None
        return self.typed(found)

    def member(self, group: G, member_id: str, *, consistent: bool) -> M | None:
        key = schema.member_key(group.group_id, member_id, group.member_shards)
        item = self.dynamo.get(key, consistent=consistent)
        return self.member_from_item(item) if item and self.is_member(item) else None

    def members(self, group: G) -> list[M]:
        pks = list(schema.member_pks(group.group_id, group.member_shards))
        found = [
            self.member_from_item(item)
            for items in query_partitions(self.dynamo, pks, consistent=True)
            for item in items
            if self.is_member(item)
        ]
        return sorted(found, key=lambda m: m.member_id)

    def members_by_id(self, group: G, member_ids: Iterable[str]) -> dict[str, M]:
        keys = [
            schema.member_key(group.group_id, mid, group.member_shards)
            for mid in sorted(set(member_ids))
        ]
        items = self.dynamo.batch_get(keys, consistent=True)
        return {i["memberId"]: self.member_from_item(i) for i in items if self.is_member(i)}

    def instance_owner(self, group: G, instance_id: str) -> str | None:
        """The member id a static instance id is claimed by (its own item)."""
        key = schema.static_instance_key(group.group_id, instance_id, group.member_shards)
        item = self.dynamo.get(key, consistent=True)
        return item["memberId"] if item else None

    # --- writes ---

    def put_new_group(
        self, item: dict[str, Any], group_id: str, replacing: StoredGroup | None
    ) -> None:
        """A new group's whole item: where there is none, or over `replacing`, an Empty classic
        group's item as read (on its version); Conflict otherwise."""
        if replacing is None:
            condition, names, values = "attribute_not_exists(pk)", None, None
        else:
            condition = "groupType = :classic AND #version = :v AND memberCount = :zero"
            names = {"#version": "version"}
            values = {":classic": "classic", ":v": replacing.version, ":zero": 0}
        try:
            self.dynamo.put(item, condition=condition, names=names, values=values)
        except ConditionFailed:
            raise Conflict(group_id) from None

    def update_group(self, old: G, new: G, extra: Writes = NO_WRITES) -> G:
        """One conditional write of the group (what changed from `old`, as read, to `new`),
        with `extra` writes in the same transaction; Conflict if the group moved. Returns the
        group as written (no re-read needed: the write was on the version read). A group
        epoch move is recorded in the same write (core/rebalances.py), at the store's clock."""
        new = with_epoch_move(old, new, self.dynamo.clock.now_ms())  # type: ignore[arg-type]
        update = self.group_update(old, new)
        try:
            if extra:
                self.dynamo.transact([update, *extra.items])
            else:
                self.dynamo.update(update)
        except (ConditionFailed, TransactionCanceled):
            raise Conflict(old.group_id) from None
        return replace(new, version=old.version + 1)  # type: ignore[type-var]

    def _member_put(self, group: G, m: M, *, new: bool) -> Put:
        item = self.member_to_item(group.group_id, group.member_shards, m)
        if new:
            return Put(item, condition="attribute_not_exists(pk)")
        condition, names, values = self.member_condition(m)
        return Put({**item, "mver": m.version + 1}, condition, names, values)

    def put_member(self, group: G, m: M, *, new: bool) -> Writes:
        """The member's item: a new member's where there is none, else on the member as
        read."""
        return Writes((self._member_put(group, m, new=new),))

    def member_removal(self, group: G, m: M) -> tuple[TransactItem, ...]:
        """The deletes of a member's own items on the versions read, its static claim
        aside (a family's: store/consumer/repository.py, store/streams/repository.py)."""
        raise NotImplementedError

    def remove_member(self, group: G, m: M) -> Writes:
        """A member leaves: its items and its static claim go."""
        claim: tuple[TransactItem, ...] = ()
        if m.instance_id is not None:
            claim = (
                release_claim(group.group_id, m.instance_id, m.member_id, group.member_shards),
            )
        return Writes(self.member_removal(group, m) + claim)

    def hand_over(self, group: G, owner: M, successor: M) -> Writes:
        """A static takeover: the owner's items go, its `successor` (same instance, a new
        member id) is put, and the instance's claim moves to it."""
        assert successor.instance_id is not None
        moved = self._move_instance(
            group, successor.instance_id, owner.member_id, successor.member_id
        )
        put = self._member_put(group, successor, new=True)
        return Writes((*self.member_removal(group, owner), put, moved))

    def write_member(self, group: G, m: M) -> None:
        """The steady heartbeat's one write: the member item, on the versions read."""
        put = self._member_put(group, m, new=False)
        try:
            self.dynamo.put(put.item, condition=put.condition, names=put.names, values=put.values)
        except ConditionFailed:
            raise Conflict(m.member_id) from None

    def claim_instance(self, group: G, m: M, claimed_by: str | None = None) -> Writes:
        """A joiner's claim on its instance id: a new one, or (`claimed_by`: the member id a
        removed member's claim still names) that claim moved over."""
        assert m.instance_id is not None
        if claimed_by is not None:
            return Writes((self._move_instance(group, m.instance_id, claimed_by, m.member_id),))
        key = schema.static_instance_key(group.group_id, m.instance_id, group.member_shards)
        item = {**key, "kind": schema.KIND_STATIC_INSTANCE, "groupId": group.group_id,
                "memberId": m.member_id}  # fmt: skip
        return Writes((Put(item, condition="attribute_not_exists(pk)"),))

    def _move_instance(self, group: G, instance_id: str, old_id: str, new_id: str) -> Update:
        return Update(
            schema.static_instance_key(group.group_id, instance_id, group.member_shards),
            "SET memberId = :new",
            values={":new": new_id, ":old": old_id},
            condition="memberId = :old",
        )

    def transact(self, writes: Writes) -> None:
        """`writes` in one transaction, without a group write; Conflict if one's condition
        failed."""
        try:
            self.dynamo.transact(list(writes.items))
        except TransactionCanceled:
            raise Conflict("transaction") from None


def release_claim(group_id: str, instance_id: str, member_id: str, shards: int) -> Delete:
    """The delete of a static instance claim while `member_id` still holds it (or none is
    left)."""
    return Delete(
        schema.static_instance_key(group_id, instance_id, shards),
        condition="attribute_not_exists(pk) OR memberId = :m",
        values={":m": member_id},
    )
