"""Streams groups (KIP-1071) in the table: the group item, member items, the topology item.

- Group item (schema.group_key): a fixed set of fields: epochs, version, member count, the
  topology's epoch, fingerprint and status, the endpoint epoch, the shutdown request, the
  initial delay, the install lease, `dl` / `dlShard`. Every write of it is conditioned on the
  `version` read (an install's flip: on its lease) and bumps it.
- Member items (schema.member_key, sharded by member id, as consumer members are): process,
  endpoint, tags, epochs, tasks (assigned + pending revocation, active ones with their
  assignment epochs), the target with its epoch and `waitOn`. A steady heartbeat writes only
  its own member item (a Put conditioned on the member's `mver` and `tver`).
- Topology item (schema.streams_topology_key): the topology of the group's topology epoch,
  written with the join that set it.
- Endpoints map item (schema.streams_endpoints_key, endpoints.py): the endpoints' target tasks
  at one endpoint epoch, written by the first heartbeat behind it.

docs/streams.md describes the conditions of each write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from ...core.streams.group import StreamsGroup
from ...core.streams.member import StreamsGroupMember
from ...core.streams.topology import Topology
from ...core.streams.warmups import Report
from .. import schema
from ..consumer.codec import KIND_STATIC_INSTANCE, static_instance_key
from ..conversion import Conversions
from ..dynamo import (
    ConditionFailed,
    Delete,
    Dynamo,
    Put,
    TransactionCanceled,
    TransactItem,
    Update,
)
from ..errors import Conflict
from .codec import (
    group_item,
    group_update,
    is_streams_member,
    member_condition,
    member_from_item,
    member_to_item,
    report_from_item,
    report_to_item,
    topology_from_item,
    topology_to_item,
)
from .endpoints import EndpointsStore, chunk_keys


class StreamsGroupStore:
    def __init__(self, dynamo: Dynamo, deadline_shards: int, conversions: Conversions) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards
        self.conversions = conversions
        self.endpoints = EndpointsStore(dynamo)

    # --- reads ---

    def group_item(self, group_id: str, *, consistent: bool) -> dict[str, Any] | None:
        # Through Conversions, as every reader of a group item (store/conversion.py).
        return self.conversions.read_group_item(group_id, consistent=consistent)

    def member(
        self, group: StreamsGroup, member_id: str, *, consistent: bool
    ) -> StreamsGroupMember | None:
        key = schema.member_key(group.group_id, member_id, group.member_shards)
        item = self.dynamo.get(key, consistent=consistent)
        return member_from_item(item) if item and is_streams_member(item) else None

    def members(self, group: StreamsGroup) -> list[StreamsGroupMember]:
        found = []
        for pk in schema.member_pks(group.group_id, group.member_shards):
            for item in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                if is_streams_member(item):
                    found.append(member_from_item(item))
        return sorted(found, key=lambda m: m.member_id)

    def members_by_id(
        self, group: StreamsGroup, member_ids: Iterable[str]
    ) -> dict[str, StreamsGroupMember]:
        keys = [
            schema.member_key(group.group_id, mid, group.member_shards)
            for mid in sorted(set(member_ids))
        ]
        items = self.dynamo.batch_get(keys, consistent=True)
        return {i["memberId"]: member_from_item(i) for i in items if is_streams_member(i)}

    def instance_owner(self, group: StreamsGroup, instance_id: str) -> str | None:
        """The member id a static instance id is claimed by (its own item, as a consumer
        group's static members)."""
        key = static_instance_key(group.group_id, instance_id, group.member_shards)
        item = self.dynamo.get(key, consistent=True)
        return item["memberId"] if item else None

    def claim_instance(self, group: StreamsGroup, m: StreamsGroupMember) -> Put:
        assert m.instance_id is not None
        key = static_instance_key(group.group_id, m.instance_id, group.member_shards)
        item = {**key, "kind": KIND_STATIC_INSTANCE, "groupId": group.group_id,
                "memberId": m.member_id}  # fmt: skip
        return Put(item, condition="attribute_not_exists(pk)")

    def move_instance(
        self, group: StreamsGroup, instance_id: str, old_id: str, new_id: str
    ) -> Update:
        return Update(
            static_instance_key(group.group_id, instance_id, group.member_shards),
            "SET memberId = :new",
            values={":new": new_id, ":old": old_id},
            condition="memberId = :old",
        )

    def report(self, group: StreamsGroup, member_id: str) -> Report | None:
        key = schema.streams_report_key(group.group_id, member_id, group.member_shards)
        item = self.dynamo.get(key, consistent=True)
        return report_from_item(item) if item else None

    def reports(self, group: StreamsGroup) -> dict[str, Report]:
        """Every member's latest report (a Query per shard; read by installs only)."""
        found = {}
        for shard in range(group.member_shards):
            pk = schema.streams_report_pk(group.group_id, shard)
            for item in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                found[item["memberId"]] = report_from_item(item)
        return found

    def put_report(self, group: StreamsGroup, member_id: str, report: Report) -> None:
        """The member's latest report, as is (last writer wins: a report is a snapshot)."""
        self.dynamo.put(report_to_item(group.group_id, group.member_shards, member_id, report))

    def topology(self, group_id: str) -> Topology | None:
        item = self.dynamo.get(schema.streams_topology_key(group_id), consistent=True)
        return topology_from_item(item) if item else None

    # --- writes ---

    def create_group(
        self, group_id: str, shards: int, now_ms: int, replacing: dict[str, Any] | None = None
    ) -> None:
        """A new, empty streams group; `replacing` is an Empty classic group item read (its
        offsets stay: they are keyed by the group id)."""
        version = int((replacing or {}).get("version", 0)) + 1
        group = StreamsGroup(group_id, version=version, member_shards=shards, created_at_ms=now_ms)
        if replacing is None:
            condition, names, values = "attribute_not_exists(pk)", None, None
        else:
            condition = "groupType = :classic AND #version = :v AND memberCount = :zero"
            names = {"#version": "version"}
            values = {":classic": "classic", ":v": replacing.get("version", 0), ":zero": 0}
        try:
            self.dynamo.put(
                group_item(group, self.deadline_shards),
                condition=condition,
                names=names,
                values=values,
            )
        except ConditionFailed:
            raise Conflict(group_id) from None

    def update_group(
        self, old: StreamsGroup, new: StreamsGroup, extra: Sequence[TransactItem] = ()
    ) -> StreamsGroup:
        """One conditional write of the group (what changed from `old`, as read, to `new`),
        with `extra` items in the same transaction; Conflict if the group moved."""
        update = group_update(old, new, self.deadline_shards)
        try:
            if extra:
                self.dynamo.transact([update, *extra])
            else:
                self.dynamo.update(update)
        except (ConditionFailed, TransactionCanceled):
            raise Conflict(old.group_id) from None
        return replace(new, version=old.version + 1)

    def put_topology(self, group_id: str, topology: Topology) -> Put:
        """The topology item of a group's first (or a replaced) topology, written in the
        transaction that sets the group's topology epoch."""
        return Put(topology_to_item(group_id, topology))

    def put_member_items(
        self, group: StreamsGroup, m: StreamsGroupMember, *, new: bool
    ) -> list[TransactItem]:
        item = member_to_item(group.group_id, group.member_shards, m)
        if new:
            return [Put(item, condition="attribute_not_exists(pk)")]
        condition, names, values = member_condition(m)
        return [Put({**item, "mver": m.version + 1}, condition, names, values)]

    def write_member(self, group: StreamsGroup, m: StreamsGroupMember) -> None:
        """The steady heartbeat's one write: the member item, on the versions read."""
        (put,) = self.put_member_items(group, m, new=False)
        assert isinstance(put, Put)
        try:
            self.dynamo.put(put.item, condition=put.condition, names=put.names, values=put.values)
        except ConditionFailed:
            raise Conflict(m.member_id) from None

    def remove_member_items(self, group: StreamsGroup, m: StreamsGroupMember) -> list[TransactItem]:
        condition, names, values = member_condition(m)
        key = schema.member_key(group.group_id, m.member_id, group.member_shards)
        items: list[TransactItem] = [
            Delete(key, condition=condition, names=names, values=values),
            Delete(schema.streams_report_key(group.group_id, m.member_id, group.member_shards)),
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

    def transact(self, items: Sequence[TransactItem]) -> None:
        try:
            self.dynamo.transact(items)
        except TransactionCanceled:
            raise Conflict("transaction") from None

    def delete_group_items(self, group_id: str, shards: int) -> None:
        """Member items and the topology of a deleted group (delete-groups cleanup)."""
        keys = [schema.streams_topology_key(group_id), schema.streams_endpoints_key(group_id)]
        keys += chunk_keys(group_id, self.endpoints.head(group_id))
        pks = [*schema.member_pks(group_id, shards)]
        pks += [schema.static_instance_pk(group_id, shard) for shard in range(shards)]
        pks += [schema.streams_report_pk(group_id, shard) for shard in range(shards)]
        for pk in pks:
            for item in self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True):
                keys.append({schema.PK: item[schema.PK], schema.SK: item[schema.SK]})
        self.dynamo.batch_write(deletes=keys)
