"""Classic groups in the table: the group item, member items (sharded), static instance items.

Every transition is one TransactWriteItems whose first item writes the group item conditioned
on the version read (or on its absence, for a new group); member writes ride along. A
transition that touches more than 99 members writes the extra member deletions first (they are
idempotent) and the group flip last, so a crash leaves the old group state in force.

Join counters (no hot key). A join barrier needs to know WHEN every known member has joined.
Counting joins on the group item made every join a write of one key: 5,000 members rejoining
within 5 s is ~2,000 write units/s there (twice DynamoDB's per-partition limit). Instead:

- A known member's join while the barrier is open is one conditional write of its own member
  item (`joinedGeneration < :pending`: the first registration for that generation only; a
  member the barrier has closed on, or removed, fails it) followed by `ADD joins 1` on the
  counter item of its member shard for this barrier (`G#<group>#J<shard>`, sort key
  `<pending generation>#<rebalance start ms>`: one item per shard and barrier, carrying
  `expiresAt`, so the TTL removes it once the barrier is long closed). No group item write.
- Joins that change the group item anyway (a new member, a static member's replacement, the
  join that starts the rebalance) and leaves during the barrier put their counter updates in
  the group's transaction, so those stay exact.
- After its ADD a registrant reads every shard's counter strongly consistently; the registrant
  whose ADD came last sees the full sum (each ADD is linearized; each registrant reads after its
  own), finds it >= memberCount and closes the barrier. The count is only a hint of WHEN to
  look: the barrier closes on the member items, listed consistently (which the completion needs
  anyway), so an overcount costs one listing, never a wrong close.
- A crash between a member's write and its ADD loses one count: the barrier then closes at the
  group's next timer check (which lists the members and counts exactly: at the latest the
  rebalance timeout): no group is left stuck. Why not one transaction of member + counter:
  it bills both items twice (a member item carrying its assignment is several write units) to
  save a rare crash a wait of at most one timer check.
- Counters are spread over the member shards: 5,000 joins within 5 s are 125 write units/s per
  counter key; every registrant reads each counter once (S read units per join, 1,000 reads/s
  per counter key at that rate, a third of the limit).

Payload items (a heartbeat's cost). DynamoDB bills an UpdateItem on the whole item:
a member item that carried its assignment and its protocols' metadata (a cooperative member's
Subscription lists its owned partitions) made every heartbeat and commit fence ~4 write units
at 500 partitions per member. So the member item keeps what changes often and is small (ids,
timeouts, generations, `sessionDeadline`, `pending`, the protocol names and a digest of their
metadata), and a payload item per member (`G#<group>#P<shard>` / member id, sharded as the
member items) keeps the metadata and the assignment:

- Written only when they change: a join with new metadata (`SET protocols`), the leader's sync
  (`SET assignment, assignmentGeneration`), a static member's replacement (the new member id's
  payload inherits the assignment), a downgrade from the consumer protocol.
- Read only where they are used: the leader's member list, a barrier's subscribed topics,
  sync answers, describe-groups, the upgrade. Heartbeats and commit fences never read them.
- Every non-pending member has one (pending member ids have none): it is created in the
  transaction that makes the member non-pending (or the downgrade that creates it), so writes
  that must not outlive the member are conditioned on the payload existing.
- It goes with its member item, in the same transaction, or right after it when member
  deletions are written ahead of a flip: a crash in between leaves a payload that no member
  item points to, which nobody reads and delete-groups and the conversions' cleanups remove.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...core.classic.model import (
    GROUP_TYPE,
    PREPARING_REBALANCE,
    ClassicGroup,
    ClassicMember,
)
from ...core.lag import Lags
from ...core.lag import to_item as lags_to_item
from .. import schema
from ..codecs.classic import (
    OPTIONAL_GROUP_ATTRIBUTES,
    group_to_item,
    instance_key,
    is_classic_member,
    member_from_item,
    member_to_item,
    with_payload,
)
from ..conversion import Conversions
from ..dynamo import ConditionFailed, Delete, Dynamo, Put, TransactionCanceled, TransactItem, Update
from ..errors import Conflict
from ..partition_reads import query_partitions
from ..stored_group import StoredGroup
from .transition import (
    ClassicTransition,
    barrier_id,
    member_deletes,
    payload_update,
    set_item,
    sets_update,
)

MAX_TRANSACTION_ITEMS = 100


# Join counters outlive their barrier by this much (their `expiresAt`, epoch seconds).
JOIN_COUNT_TTL_S = 24 * 3600


class SessionNotRenewed(Exception):
    """A heartbeat refused: `member` is the member as it is (None: absent)."""

    def __init__(self, member: ClassicMember | None) -> None:
        super().__init__(member.member_id if member else "absent")
        self.member = member


class ClassicGroupStore:
    def __init__(self, dynamo: Dynamo, deadline_shards: int, conversions: Conversions) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards
        self.conversions = conversions

    # --- reads ---

    def group_item(self, group_id: str, *, consistent: bool = True) -> dict[str, Any] | None:
        # Through Conversions: an interrupted protocol conversion is finished first.
        return self.conversions.read_group_item(group_id, consistent=consistent)

    def read_group(self, group_id: str, *, consistent: bool = True) -> StoredGroup | None:
        """The group item under `group_id`, of whatever type, typed."""
        return self.conversions.read_group(group_id, consistent=consistent)

    def members(self, group: ClassicGroup, *, payloads: bool) -> list[ClassicMember]:
        """Every member, read consistently; with `payloads`, with their metadata and
        assignments too (with_payloads), else as their member items have them."""
        pks = list(schema.member_pks(group.group_id, group.member_shards))
        found = [
            member_from_item(i)
            for items in query_partitions(self.dynamo, pks, consistent=True)
            for i in items
            if is_classic_member(i)
        ]
        return self.with_payloads(group, found) if payloads else found

    def with_payloads(
        self, group: ClassicGroup, members: Sequence[ClassicMember]
    ) -> list[ClassicMember]:
        """`members`, as read from their member items, with their payloads: one consistent
        Query per payload shard. Read after the member items, never before: a join writes its
        payload ahead of its member item, so a member seen joined comes with the metadata it
        joined with. A non-pending member whose payload is gone left (or expired) between the
        two reads, its items deleted: it is left out, not listed with empty metadata (which a
        leader's assignor cannot decode)."""
        found: dict[str, dict[str, Any]] = {}
        for pk in schema.payload_pks(group.group_id, group.member_shards):
            for item in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                found[item[schema.SK]] = item
        return [
            with_payload(m, found.get(m.member_id))
            for m in members
            if m.pending or m.member_id in found
        ]

    def with_payload(self, group: ClassicGroup, member: ClassicMember) -> ClassicMember:
        """One member with its payload (one consistent read)."""
        key = schema.payload_key(group.group_id, member.member_id, group.member_shards)
        return with_payload(member, self.dynamo.get(key, consistent=True))

    def member(self, group: ClassicGroup, member_id: str) -> ClassicMember | None:
        """The member as its member item has it (no payload: what heartbeats, commits and
        most checks need), read consistently."""
        if not member_id:
            return None
        key = schema.member_key(group.group_id, member_id, group.member_shards)
        item = self.dynamo.get(key, consistent=True)
        return member_from_item(item) if item and is_classic_member(item) else None

    def instance_owner(self, group_id: str, instance_id: str) -> str | None:
        item = self.dynamo.get(instance_key(group_id, instance_id), consistent=True)
        return item["memberId"] if item else None

    def claim_check(self, group: ClassicGroup, until_ms: int) -> bool:
        """Claim the group's due timer check (it reads every member) by moving its `dl` to
        `until_ms`, if the group is still at the version and `dl` read; no version bump, so
        the claimant's transition still commits on the version it read. False: another
        request claimed it (or the group moved)."""
        try:
            self.dynamo.update(
                Update(
                    schema.group_key(group.group_id),
                    "SET #dl = :until",
                    names={"#dl": schema.DEADLINE, "#v": "version"},
                    values={
                        ":until": until_ms,
                        ":v": group.version,
                        ":seen": group.next_check_ms,
                    },
                    condition="#v = :v AND #dl = :seen",
                )
            )
        except ConditionFailed:
            return False
        return True

    def join_count(self, group: ClassicGroup) -> int:
        """The joins counted for the group's open barrier: every shard's counter, read strongly
        consistently (one BatchGetItem, a read unit per shard)."""
        keys = [
            schema.join_count_key(group.group_id, shard, barrier_id(group))
            for shard in range(group.member_shards)
        ]
        return sum(int(i.get("joins", 0)) for i in self.dynamo.batch_get(keys, consistent=True))

    # --- writes ---

    def commit(self, transition: ClassicTransition) -> ClassicGroup:
        """Write the transition atomically; raises Conflict if the group moved."""
        group = transition.group
        new_group = replace(group, version=group.version + 1)
        group_write = set_item(
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
        # Written with the group flip, atomically: new members (and their payloads, so that a
        # non-pending member never exists without one), static instance claims, joins.
        atomic: list[TransactItem] = [
            Put(member_to_item(new_group, m)) for m in transition.put_members
        ]
        atomic += [payload_update(new_group, m) for m in transition.put_payloads]
        atomic += self._join_count_updates(new_group, transition.join_counts)
        atomic += [
            Put({**instance_key(group.group_id, iid), "kind": "instance", "memberId": mid})
            for iid, mid in transition.put_instances.items()
        ]
        atomic += [Delete(instance_key(group.group_id, iid)) for iid in transition.delete_instances]
        # Idempotent: restarting sessions, marking generations, deleting departed members.
        # They may be written before the flip when they do not fit in its transaction: if the
        # flip then loses its race, they have done no harm (a session restarted a little early,
        # a member marked as joined that the next barrier keeps anyway, a dead member gone).
        # A departed member's payload is deleted in the same step as its member item: in the
        # transaction with it, or ahead of the flip right after it (never before it, so no
        # member is ever left without its payload).
        updates: list[TransactItem] = [
            sets_update(
                schema.member_key(group.group_id, update.member_id, group.member_shards),
                update.attributes(),
                "attribute_exists(pk)",
            )
            for update in transition.member_updates
        ]
        deletes = [member_deletes(group, m) for m in transition.delete_members]
        room = MAX_TRANSACTION_ITEMS - 1 - len(atomic)
        if room < 0:
            raise ValueError("a classic transition's atomic writes must fit in one transaction")
        inside: list[TransactItem] = []
        ahead: list[list[TransactItem]] = []
        for unit in [[u] for u in updates] + deletes:
            if not ahead and len(inside) + len(unit) <= room:
                inside += unit
            else:
                ahead.append(unit)
        self._write_ahead(ahead)
        if not (atomic or inside):
            # The group item alone (a timer check that expired nobody, a barrier that moved):
            # one conditional write, at half a transaction's write units.
            try:
                self.dynamo.update(group_write)
            except ConditionFailed:
                raise Conflict(group.group_id) from None
            return new_group
        try:
            self.dynamo.transact([group_write, *atomic, *inside])
        except TransactionCanceled as cancel:
            if 0 in cancel.failed_conditions():
                raise Conflict(group.group_id) from None
            raise
        return new_group

    def replace_empty_consumer_group(
        self, found: StoredGroup, member_shards: int, now_ms: int
    ) -> ClassicGroup:
        """Turn the Empty consumer group `found` (as read) into an Empty classic group: one
        Put, conditioned on the group still being that consumer group, at that version, with
        no members. Offsets are per group id and stay. Conflict if it moved."""
        group = ClassicGroup(
            group_id=found.group_id,
            version=found.version + 1,
            member_shards=member_shards,
            created_at_ms=now_ms,
            empty_since_ms=now_ms,
        )
        try:
            self.dynamo.put(
                group_to_item(group, self.deadline_shards),
                condition="groupType = :consumer AND #version = :v AND memberCount = :zero",
                names={"#version": "version"},
                values={":consumer": "consumer", ":v": found.version, ":zero": 0},
            )
        except ConditionFailed:
            raise Conflict(group.group_id) from None
        return group

    def delete_classic_leftovers(self, group_id: str, member_shards: int) -> None:
        """After the group became a consumer group: classic member items (ids still pending
        their second join), static instance claims and payload items (the conversion deleted
        its members' own; these are a crash's strays) of the classic group. Best effort: the
        consumer store ignores classic member items anyway."""
        keys = []
        pks = [
            *schema.member_pks(group_id, member_shards),
            schema.instance_pk(group_id),
            *schema.payload_pks(group_id, member_shards),
        ]
        for pk in pks:
            for found in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                if found.get("memberType") == GROUP_TYPE or found.get("kind") in (
                    "instance",
                    schema.KIND_MEMBER_PAYLOAD,
                ):
                    keys.append({schema.PK: found[schema.PK], schema.SK: found[schema.SK]})
        if keys:
            self.dynamo.batch_write(deletes=keys)

    def _write_ahead(self, units: Sequence[Sequence[TransactItem]]) -> None:
        """Idempotent member writes that did not fit in the flip's transaction: deletions
        (members first, then their payloads), then updates."""
        members = [u[0].key for u in units if isinstance(u[0], Delete)]
        payloads = [i.key for u in units for i in u[1:] if isinstance(i, Delete)]
        updates = [u[0] for u in units if isinstance(u[0], Update)]
        if members:
            self.dynamo.batch_write(deletes=members)
        if payloads:
            self.dynamo.batch_write(deletes=payloads)
        for start in range(0, len(updates), MAX_TRANSACTION_ITEMS):
            chunk = updates[start : start + MAX_TRANSACTION_ITEMS]
            try:
                self.dynamo.transact(chunk)
            except TransactionCanceled:
                for update in chunk:  # a member left meanwhile: update the others
                    with contextlib.suppress(ConditionFailed):
                        self.dynamo.update(update)

    def register_join(
        self, group: ClassicGroup, member: ClassicMember, *, new_metadata: bool
    ) -> None:
        """A known member joins the open barrier of `group` (member.joined_generation is its
        pending generation): its item is rewritten only if this is its first join for that
        generation, then its shard's counter counts it. ConditionFailed if the member is gone,
        or already joined (or kept) for that generation or a later one. No group item write.

        With `new_metadata` its payload's protocols are written first: once its join shows on
        its member item the barrier may close on it, and the leader must get this metadata. A
        gone member has no payload, so that write (conditioned on it) fails and creates none;
        if the member item's write then fails, the member's next join rewrites both."""
        if new_metadata:
            self.dynamo.update(payload_update(group, member, "attribute_exists(pk)"))
        self.dynamo.put(
            member_to_item(group, member),
            condition="attribute_exists(pk) AND joinedGeneration < :p",
            values={":p": member.joined_generation},
        )
        for update in self._join_count_updates(group, [(member.member_id, 1)]):
            self.dynamo.update(update)

    def _join_count_updates(
        self, group: ClassicGroup, deltas: Sequence[tuple[str, int]]
    ) -> list[Update]:
        """ADDs on the shard counters of the group's open barrier, one per shard touched (a
        transaction may write an item once)."""
        if group.state != PREPARING_REBALANCE:
            return []
        by_shard: dict[int, int] = {}
        for member_id, delta in deltas:
            shard = schema.stable_shard(member_id, group.member_shards)
            by_shard[shard] = by_shard.get(shard, 0) + delta
        expires = (group.join_deadline_ms or group.rebalance_started_ms or 0) // 1000
        return [
            Update(
                schema.join_count_key(group.group_id, shard, barrier_id(group)),
                "ADD #joins :d SET #kind = :kind, #group = :g, #ttl = :ttl",
                names={
                    "#joins": "joins",
                    "#kind": "kind",
                    "#group": "groupId",
                    "#ttl": schema.TTL_ATTRIBUTE,
                },
                values={
                    ":d": delta,
                    ":kind": schema.KIND_JOIN_COUNT,
                    ":g": group.group_id,
                    ":ttl": expires + JOIN_COUNT_TTL_S,
                },
            )
            for shard, delta in sorted(by_shard.items())
            if delta
        ]

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

    def renew_joined_session(
        self,
        group: ClassicGroup,
        member_id: str,
        instance_id: str | None,
        now_ms: int,
        *,
        caller: str | None = None,
        slack_ms: int = 0,
        lags: Lags | None = None,
    ) -> None:
        """A heartbeat: restart the session timer of a joined (not pending) member (to `now_ms`
        + its expiry + `slack_ms`), with the instance id it gave if any, and, given `caller`,
        of a member `caller` created (or of unknown creator); else raise SessionNotRenewed
        with the member as it is. `lags` (not None) replace the member's reported lags."""
        condition = "attribute_exists(pk) AND pending = :false"
        values: dict[str, Any] = {":false": False, ":now": now_ms + slack_ms}
        if instance_id:
            condition += " AND instanceId = :instance"
            values[":instance"] = instance_id
        if caller is not None:
            condition += (
                " AND (attribute_not_exists(principal) OR principal = :nobody"
                " OR principal = :caller)"
            )
            values[":nobody"] = ""
            values[":caller"] = caller
        key = schema.member_key(group.group_id, member_id, group.member_shards)
        expression = "SET sessionDeadline = expiryMs + :now"
        if lags is not None:
            expression += ", lags = :lags"
            values[":lags"] = lags_to_item(lags)
        try:
            self.dynamo.update(Update(key, expression, values=values, condition=condition))
        except ConditionFailed as failed:
            item = failed.old if failed.old is not None else self.dynamo.get(key, consistent=True)
            member = member_from_item(item) if item and is_classic_member(item) else None
            raise SessionNotRenewed(member) from None

    def restart_session(self, group: ClassicGroup, member_id: str, now_ms: int) -> ClassicMember:
        """Restart the member's session timer (now + its expiry) and return the member (without
        its payload), in one write; ConditionFailed if it is gone."""
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
        """Store the leader's assignments on the members' payload items, 100 per transaction.
        Conditioned on the payload existing (every non-pending member has one): a member gone
        meanwhile gets nothing, and no payload is created for it."""
        updates = [
            Update(
                schema.payload_key(group.group_id, member_id, group.member_shards),
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
        """Member, payload and instance items of a deleted group (delete-groups cleanup); every
        payload item goes, a crash's stray ones too."""
        members = self.members(group, payloads=False)
        keys = [
            schema.member_key(group.group_id, m.member_id, group.member_shards) for m in members
        ]
        pks = [
            *schema.payload_pks(group.group_id, group.member_shards),
            schema.instance_pk(group.group_id),
        ]
        for pk in pks:
            found = self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
            keys += [{schema.PK: i[schema.PK], schema.SK: i[schema.SK]} for i in found]
        self.dynamo.batch_write(deletes=keys)

    def delete_stray_payloads(self, group_id: str, member_shards: int) -> None:
        """Payload items with no classic member item: what a crash between a member's deletion
        and its payload's left, or a classic past of a group that is now of the other type.
        Best effort. The payloads are read before the member items: a payload is created
        with its member item (or, for a known member, while it exists), so one read first
        whose member item is missing after is stray."""
        payloads = [
            {schema.PK: i[schema.PK], schema.SK: i[schema.SK]}
            for pk in schema.payload_pks(group_id, member_shards)
            for i in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
        ]
        if not payloads:
            return
        members = {
            i[schema.SK]
            for pk in schema.member_pks(group_id, member_shards)
            for i in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
            if is_classic_member(i)
        }
        stray = [key for key in payloads if key[schema.SK] not in members]
        if stray:
            self.dynamo.batch_write(deletes=stray)
