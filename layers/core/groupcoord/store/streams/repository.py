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

from ...core.streams.group import StreamsGroup
from ...core.streams.member import StreamsGroupMember
from ...core.streams.topology import Topology
from ...core.streams.warmups import Report
from .. import schema
from ..codecs.streams import (
    CODEC,
    group_item,
    member_condition,
    report_from_item,
    report_to_item,
    topology_from_item,
    topology_to_item,
)
from ..conversion import Conversions
from ..dynamo import (
    Delete,
    Dynamo,
    Put,
    TransactItem,
)
from ..member_groups import MemberGroupStore
from ..stored_group import StoredGroup
from ..writes import NO_WRITES, Writes
from .endpoints import EndpointsStore, chunk_keys


class StreamsGroupStore(MemberGroupStore[StreamsGroup, StreamsGroupMember]):
    """Streams groups' items: the group and member reads and writes it shares with the
    consumer protocol's store (store/member_groups.py), and the topology, reports and
    endpoints map of its own."""

    def __init__(self, dynamo: Dynamo, deadline_shards: int, conversions: Conversions) -> None:
        super().__init__(dynamo, deadline_shards, conversions)
        self.endpoints = EndpointsStore(dynamo)

    codec = CODEC

    # --- reads ---

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

    def report_writes(self, group: StreamsGroup, member_id: str, report: Report | None) -> Writes:
        """A joiner's report (if any), written in its join's transaction: a refused join
        keeps none."""
        if report is None:
            return NO_WRITES
        return Writes(
            (Put(report_to_item(group.group_id, group.member_shards, member_id, report)),)
        )

    def topology(self, group_id: str) -> Topology | None:
        item = self.dynamo.get(schema.streams_topology_key(group_id), consistent=True)
        return topology_from_item(item) if item else None

    # --- writes ---

    def create_group(
        self, group_id: str, shards: int, now_ms: int, replacing: StoredGroup | None = None
    ) -> None:
        """A new, empty streams group; `replacing` is an Empty classic group read (its
        offsets stay: they are keyed by the group id)."""
        version = (replacing.version if replacing is not None else 0) + 1
        group = StreamsGroup(group_id, version=version, member_shards=shards, created_at_ms=now_ms)
        self.put_new_group(group_item(group, self.deadline_shards), group_id, replacing)

    def put_topology(self, group_id: str, topology: Topology) -> Writes:
        """The topology item of a group's first (or a replaced) topology, written in the
        transaction that sets the group's topology epoch."""
        return Writes((Put(topology_to_item(group_id, topology)),))

    def member_removal(
        self, group: StreamsGroup, m: StreamsGroupMember
    ) -> tuple[TransactItem, ...]:
        """The member's item (on the versions read) and its report."""
        condition, names, values = member_condition(m)
        key = schema.member_key(group.group_id, m.member_id, group.member_shards)
        return (
            Delete(key, condition=condition, names=names, values=values),
            Delete(schema.streams_report_key(group.group_id, m.member_id, group.member_shards)),
        )

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
