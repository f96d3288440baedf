"""A streams group's items and the models they hold (core/streams/): the group item, member
items and the topology item, and the group item's writes as the difference from the one read.
No reads, no writes here: store/streams/repository.py reads and writes them.

Tasks are stored as partition ranges per sub-topology (core/consumer/assignment.to_item), and
the active tasks' assignment epochs grouped by epoch, so a member's item stays small whatever
its number of tasks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.consumer.assignment import from_item, to_item
from ...core.rebalances import from_item as rebalances_from_item
from ...core.rebalances import to_item as rebalances_to_item
from ...core.streams.configuration import StatusCode
from ...core.streams.group import EMPTY, StreamsGroup
from ...core.streams.member import Endpoint, StreamsGroupMember
from ...core.streams.reconciliation import MemberState, MemberTasks
from ...core.streams.tasks import TaskId, TasksTuple, from_task_ids
from ...core.streams.topology import CopartitionGroup, Subtopology, TopicInfo, Topology
from ...core.streams.warmups import Report
from .. import schema
from ..dynamo import Update
from ..family_codec import FamilyCodec
from ..group_update import version_update
from ..groups import listing_attributes
from .push_mark import push_mark_attributes, push_mark_fields

GROUP_TYPE = "streams"
# Only ever ADDed to (group_update), in the writes of the group item that change what the
# endpoints map shows (a member with an endpoint joins, leaves, or a target is installed):
# an ADD, so that an install's flip (conditioned on its lease, not the version) never loses a
# join's bump.
ENDPOINT_EPOCH = "endpointEpoch"

# The group item's attributes beyond what every group item has (and the consumer's names
# where they mean the same).
_GROUP_FIELDS = {
    "group_epoch": "groupEpoch",
    "target_epoch": "targetEpoch",
    "state": "groupState",
    "member_count": "memberCount",
    "topology_epoch": "topologyEpoch",
    "topology_digest": "topologyDigest",
    "validated_topology_epoch": "validatedTopologyEpoch",
    "shutdown_requested_by": "shutdownRequestedBy",
    "delay_until": "delayUntil",
    "topic_changes_seen": "topicChangesSeen",
    "assigned_at": "assignedAt",
    "topology_status": "topologyStatus",
    "topology_detail": "topologyDetail",
    "resolved_digest": "resolvedDigest",
}


def group_from_item(item: Mapping[str, Any]) -> StreamsGroup:
    return StreamsGroup(
        group_id=item["groupId"],
        version=int(item.get("version", 0)),
        member_count=int(item.get("memberCount", 0)),
        member_shards=int(item.get("memberShards", 8)),
        group_epoch=int(item.get("groupEpoch", 0)),
        target_epoch=int(item.get("targetEpoch", 0)),
        state=item.get("groupState", EMPTY),
        topology_epoch=int(item.get("topologyEpoch", -1)),
        topology_digest=item.get("topologyDigest", ""),
        validated_topology_epoch=int(item.get("validatedTopologyEpoch", -1)),
        endpoint_epoch=int(item.get(ENDPOINT_EPOCH, 0)),
        shutdown_requested_by=item.get("shutdownRequestedBy") or None,
        delay_until=int(item.get("delayUntil", 0)),
        deadline=int(item[schema.DEADLINE]) if schema.DEADLINE in item else None,
        install_id=item.get("installId") or None,
        install_until=int(item.get("installUntil", 0)),
        assigned_at=int(item.get("assignedAt", 0)),
        created_at_ms=int(item.get("createdAt", 0)),
        topic_changes=int(item.get("topicChanges", 0)),
        topic_changes_seen=int(item.get("topicChangesSeen", 0)),
        topology_status=(
            StatusCode(int(item["topologyStatus"])) if "topologyStatus" in item else None
        ),
        topology_detail=item.get("topologyDetail", ""),
        resolved_digest=item.get("resolvedDigest") or None,
        rebalances=rebalances_from_item(item.get(schema.REBALANCES)),
    )


def group_attributes(group: StreamsGroup, deadline_shards: int) -> dict[str, Any]:
    """The group item's attributes the model holds (None: absent). `topicChanges` is the
    registry's to count; `memberShards` and `createdAt` never change."""
    found: dict[str, Any] = {name: getattr(group, f) for f, name in _GROUP_FIELDS.items()}
    if group.topology_status is None:
        found["topologyStatus"] = found["topologyDetail"] = None
    else:
        found["topologyStatus"] = int(group.topology_status)
    dl = group.deadline
    found[schema.DEADLINE] = dl
    found[schema.DEADLINE_SHARD] = (
        schema.deadline_shard_value(group.group_id, deadline_shards) if dl is not None else None
    )
    found["installId"] = group.install_id
    found["installUntil"] = group.install_until if group.install_id is not None else None
    found[schema.REBALANCES] = rebalances_to_item(group.rebalances)
    return found


def group_item(group: StreamsGroup, deadline_shards: int) -> dict[str, Any]:
    """The whole item of a new group."""
    return {
        **schema.group_key(group.group_id),
        **listing_attributes(group.group_id),
        "kind": schema.KIND_GROUP,
        "groupType": GROUP_TYPE,
        "protocolType": "streams",
        "groupId": group.group_id,
        "version": group.version,
        "memberShards": group.member_shards,
        "createdAt": group.created_at_ms,
        "topicChanges": 0,
        **{
            name: value
            for name, value in group_attributes(group, deadline_shards).items()
            if value is not None
        },
    }


def group_update(old: StreamsGroup, new: StreamsGroup, deadline_shards: int) -> Update:
    """Write what changed from `old` to `new` and bump `version`, on the version read; a new
    endpoint epoch is ADDed (ENDPOINT_EPOCH)."""
    before = group_attributes(old, deadline_shards)
    after = group_attributes(new, deadline_shards)
    bump = new.endpoint_epoch - old.endpoint_epoch
    adds = {ENDPOINT_EPOCH: bump} if bump > 0 else None
    return version_update(old.group_id, before, after, old.version, adds)


# --- tasks ---


def tasks_to_item(tasks: TasksTuple) -> dict[str, Any]:
    return {
        "active": to_item(tasks.active),
        "standby": to_item(tasks.standby),
        "warmup": to_item(tasks.warmup),
    }


def tasks_from_item(value: Mapping[str, Any] | None) -> TasksTuple:
    value = value or {}
    return TasksTuple(
        from_item(value.get("active")),
        from_item(value.get("standby")),
        from_item(value.get("warmup")),
    )


def _epochs_to_item(epochs: Mapping[TaskId, int]) -> dict[str, Any]:
    by_epoch: dict[int, list[TaskId]] = {}
    for task, epoch in epochs.items():
        by_epoch.setdefault(epoch, []).append(task)
    return {str(e): to_item(from_task_ids(ts)) for e, ts in sorted(by_epoch.items())}


def _epochs_from_item(value: Mapping[str, Any] | None) -> dict[TaskId, int]:
    found: dict[TaskId, int] = {}
    for epoch, tasks in (value or {}).items():
        for sub, partitions in from_item(tasks).items():
            for p in partitions:
                found[(sub, p)] = int(epoch)
    return found


# --- members ---


def is_streams_member(item: Mapping[str, Any]) -> bool:
    return item.get("kind") == schema.KIND_MEMBER and item.get("groupType") == GROUP_TYPE


def member_to_item(group_id: str, shards: int, m: StreamsGroupMember) -> dict[str, Any]:
    t = m.tasks
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
        "topologyEpoch": m.topology_epoch,
        "processId": m.process_id,
        "clientTags": [list(kv) for kv in m.client_tags],
        "memberEpoch": t.epoch,
        "previousEpoch": t.previous_epoch,
        "state": t.state.value,
        "assigned": tasks_to_item(t.assigned),
        "revoking": tasks_to_item(t.revoking),
        "activeEpochs": _epochs_to_item(t.active_epochs),
        "target": tasks_to_item(m.target),
        "targetEpoch": m.target_epoch,
        "tver": m.target_version,
        "waitOn": list(m.wait_on),
        "acqVersion": m.acquired_version,
        "mver": m.version,
        "sessionDeadline": m.session_deadline,
        **push_mark_attributes(m),
    }
    if m.user_endpoint is not None:
        item["endpoint"] = {"host": m.user_endpoint.host, "port": m.user_endpoint.port}
    for name, value in (
        ("instanceId", m.instance_id),
        ("rackId", m.rack_id),
        ("rebalanceDeadline", m.rebalance_deadline),
        ("reportDigest", m.report_digest or None),
    ):
        if value is not None:
            item[name] = value
    return item


def member_from_item(item: Mapping[str, Any]) -> StreamsGroupMember:
    endpoint = item.get("endpoint")
    return StreamsGroupMember(
        member_id=item["memberId"],
        instance_id=item.get("instanceId"),
        rack_id=item.get("rackId"),
        client_id=item.get("clientId", ""),
        client_host=item.get("clientHost", ""),
        principal=item.get("principal") or None,
        rebalance_timeout_ms=int(item.get("rebalanceTimeoutMs", 0)),
        topology_epoch=int(item.get("topologyEpoch", 0)),
        process_id=item.get("processId", ""),
        user_endpoint=Endpoint(endpoint["host"], int(endpoint["port"])) if endpoint else None,
        client_tags=tuple((kv[0], kv[1]) for kv in item.get("clientTags") or ()),
        tasks=MemberTasks(
            epoch=int(item.get("memberEpoch", 0)),
            previous_epoch=int(item.get("previousEpoch", 0)),
            state=MemberState(item.get("state", MemberState.STABLE.value)),
            assigned=tasks_from_item(item.get("assigned")),
            revoking=tasks_from_item(item.get("revoking")),
            active_epochs=_epochs_from_item(item.get("activeEpochs")),
        ),
        target=tasks_from_item(item.get("target")),
        target_epoch=int(item.get("targetEpoch", 0)),
        target_version=int(item.get("tver", 0)),
        wait_on=tuple(item.get("waitOn") or ()),
        acquired_version=int(item.get("acqVersion", 0)),
        report_digest=item.get("reportDigest", ""),
        version=int(item.get("mver", 0)),
        session_deadline=int(item.get("sessionDeadline", 0)),
        **push_mark_fields(item),
        rebalance_deadline=(
            int(item["rebalanceDeadline"]) if "rebalanceDeadline" in item else None
        ),
    )


def member_condition(m: StreamsGroupMember) -> tuple[str, dict[str, str], dict[str, Any]]:
    return (
        "attribute_exists(pk) AND #mver = :mver AND #tver = :tver",
        {"#mver": "mver", "#tver": "tver"},
        {":mver": m.version, ":tver": m.target_version},
    )


# --- the topology ---


def _info(t: TopicInfo) -> list[Any]:
    return [t.name, t.partitions, t.replication_factor, [list(c) for c in t.configs]]


def _info_from(v: list[Any]) -> TopicInfo:
    return TopicInfo(v[0], int(v[1]), int(v[2]), tuple((c[0], c[1]) for c in v[3]))


def topology_to_item(group_id: str, topology: Topology) -> dict[str, Any]:
    subs = [
        {
            "id": s.subtopology_id,
            "sources": list(s.source_topics),
            "regex": list(s.source_topic_regex),
            "changelogs": [_info(t) for t in s.state_changelog_topics],
            "sinks": list(s.repartition_sink_topics),
            "repartitions": [_info(t) for t in s.repartition_source_topics],
            "copartition": [
                [list(g.source_topics), list(g.source_topic_regex),
                 list(g.repartition_source_topics)]
                for g in s.copartition_groups
            ],
        }
        for s in topology.subtopologies
    ]  # fmt: skip
    return {
        **schema.streams_topology_key(group_id),
        "kind": schema.KIND_STREAMS_TOPOLOGY,
        "groupId": group_id,
        "topologyEpoch": topology.epoch,
        # One string: its size is bounded by the request's (models/streams.py).
        "topology": json.dumps(subs, separators=(",", ":")),
        "since": {sid: epoch for sid, epoch in topology.since},
    }


def topology_from_item(item: Mapping[str, Any]) -> Topology:
    subs = []
    for s in json.loads(item["topology"]):
        subs.append(
            Subtopology(
                subtopology_id=s["id"],
                source_topics=tuple(s["sources"]),
                source_topic_regex=tuple(s["regex"]),
                state_changelog_topics=tuple(_info_from(t) for t in s["changelogs"]),
                repartition_sink_topics=tuple(s["sinks"]),
                repartition_source_topics=tuple(_info_from(t) for t in s["repartitions"]),
                copartition_groups=tuple(
                    CopartitionGroup(tuple(g[0]), tuple(g[1]), tuple(g[2]))
                    for g in s["copartition"]
                ),
            )
        )
    since = tuple(sorted((sid, int(e)) for sid, e in (item.get("since") or {}).items()))
    return Topology(int(item["topologyEpoch"]), tuple(subs), since)


# --- changelog offsets reports (core/streams/warmups.py) ---


def _offsets_to_item(offsets: Mapping[TaskId, int]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for (sub, p), offset in sorted(offsets.items()):
        found.setdefault(sub, {})[str(p)] = offset
    return found


def _offsets_from_item(value: Mapping[str, Any] | None) -> dict[TaskId, int]:
    return {(sub, int(p)): int(o) for sub, parts in (value or {}).items() for p, o in parts.items()}


def report_to_item(group_id: str, shards: int, member_id: str, report: Report) -> dict[str, Any]:
    return {
        **schema.streams_report_key(group_id, member_id, shards),
        "kind": schema.KIND_STREAMS_REPORT,
        "groupId": group_id,
        "memberId": member_id,
        "offsets": _offsets_to_item(report.offsets),
        "endOffsets": _offsets_to_item(report.end_offsets),
    }


def report_from_item(item: Mapping[str, Any]) -> Report:
    return Report(
        _offsets_from_item(item.get("offsets")), _offsets_from_item(item.get("endOffsets"))
    )


def _target_values(member: StreamsGroupMember) -> tuple[Any, list[Any]]:
    return tasks_to_item(member.target), list(member.wait_on)


CODEC: FamilyCodec[StreamsGroup, StreamsGroupMember] = FamilyCodec(
    group_type="streams",
    group_update=group_update,
    group_from_item=group_from_item,
    is_member=is_streams_member,
    member_from_item=member_from_item,
    member_to_item=member_to_item,
    member_condition=member_condition,
    target_values=_target_values,
)
