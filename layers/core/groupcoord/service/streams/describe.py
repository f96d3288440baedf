"""streams-group-describe: the topology, and the members with their process, endpoint, tags,
epochs, tasks, targets and latest changelog offsets report. A group the caller may not
DESCRIBE answers 30 alone, unread; one whose topology names a topic the caller may not
DESCRIBE answers 29 with no members and no topology (as Kafka). A source regex is described
with the topics it resolved, those the caller may not describe left out; a ready group's
internal topics with the partition counts its configuration gave them (as Kafka describes a
ready group's configured topology), a group not ready's as its members sent them."""

from __future__ import annotations

from collections.abc import Mapping

from ...core.acls import AclOperation
from ...core.streams.group import group_state
from ...core.streams.heartbeat_rules import GROUP_TYPE
from ...core.streams.member import StreamsGroupMember
from ...core.streams.tasks import TaskId, TasksTuple
from ...core.streams.topology import TopicInfo, Topology
from ...core.streams.visibility import described_topics
from ...core.streams.warmups import Report
from ...errors import Errors
from ...models.streams import (
    StreamsDescribedAssignment,
    StreamsDescribedMember,
    StreamsDescribedSubtopology,
    StreamsDescribedTopology,
    StreamsEndpoint,
    StreamsGroupDescribedGroup,
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
    StreamsKeyValue,
    StreamsTaskOffset,
    StreamsTopicConfig,
    StreamsTopicInfo,
)
from ..consumer.describe import UNDESCRIBABLE_TOPICS
from ..context import ApiContext
from ..refusals import group_operations, may_describe_topics
from .answers import task_list
from .expiry import expire_streams_group
from .visibility import described_counts, resolved_sources


def streams_group_describe(
    request: StreamsGroupDescribeRequest, ctx: ApiContext
) -> StreamsGroupDescribeResponse:
    asked = request.include_authorized_operations
    return StreamsGroupDescribeResponse(
        groups=[
            _describe(group_id, ctx, asked)
            if ctx.caller.may_on_group(AclOperation.DESCRIBE, group_id)
            else StreamsGroupDescribedGroup(
                group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED
            )
            for group_id in request.group_ids
        ]
    )


def _assignment(tasks: TasksTuple) -> StreamsDescribedAssignment:
    return StreamsDescribedAssignment(
        active_tasks=task_list(tasks.active),
        standby_tasks=task_list(tasks.standby),
        warmup_tasks=task_list(tasks.warmup),
    )


def _offsets(offsets: Mapping[TaskId, int]) -> list[StreamsTaskOffset]:
    return [
        StreamsTaskOffset(subtopology_id=s, partition=p, offset=o)
        for (s, p), o in sorted(offsets.items())
    ]


def _info(t: TopicInfo, configured: Mapping[str, int]) -> StreamsTopicInfo:
    return StreamsTopicInfo(
        name=t.name,
        partitions=configured.get(t.name, t.partitions),
        replication_factor=t.replication_factor,
        topic_configs=[StreamsTopicConfig(key=k, value=v) for k, v in t.configs],
    )


def _topology(
    topology: Topology | None, counts: Mapping[str, int], ready: bool, ctx: ApiContext
) -> StreamsDescribedTopology | None:
    """The topology as described, on the registry's `counts` (visibility.described_counts):
    its regexes resolved, and a ready group's internal topics with their configured counts."""
    if topology is None:
        return None
    resolved = resolved_sources(topology, counts, lambda t: may_describe_topics(ctx, [t]))
    configured = (
        {t: n for t, n in counts.items() if t in topology.internal_topics()} if ready else {}
    )
    return StreamsDescribedTopology(
        epoch=topology.epoch,
        subtopologies=[
            StreamsDescribedSubtopology(
                subtopology_id=s.subtopology_id,
                source_topics=resolved.get(s.subtopology_id, list(s.source_topics)),
                repartition_sink_topics=list(s.repartition_sink_topics),
                state_changelog_topics=[_info(t, configured) for t in s.state_changelog_topics],
                repartition_source_topics=[
                    _info(t, configured) for t in s.repartition_source_topics
                ],
            )
            for s in topology.subtopologies
        ],
    )


def _member(m: StreamsGroupMember, report: Report) -> StreamsDescribedMember:
    """A member as described, with its latest changelog offsets report."""
    endpoint = m.user_endpoint
    return StreamsDescribedMember(
        member_id=m.member_id,
        member_epoch=m.epoch,
        instance_id=m.instance_id,
        rack_id=m.rack_id,
        client_id=m.client_id,
        client_host=m.client_host,
        topology_epoch=m.topology_epoch,
        process_id=m.process_id,
        user_endpoint=(
            StreamsEndpoint(host=endpoint.host, port=endpoint.port) if endpoint else None
        ),
        client_tags=[StreamsKeyValue(key=k, value=v) for k, v in m.client_tags],
        task_offsets=_offsets(report.offsets),
        task_end_offsets=_offsets(report.end_offsets),
        assignment=_assignment(m.tasks.assigned),
        target_assignment=_assignment(m.target),
    )


def _not_found(group_id: str, message: str) -> StreamsGroupDescribedGroup:
    return StreamsGroupDescribedGroup(
        group_id=group_id, error_code=Errors.GROUP_ID_NOT_FOUND, error_message=message
    )


def _describe(group_id: str, ctx: ApiContext, asked: bool) -> StreamsGroupDescribedGroup:
    ss = ctx.store.streams
    item = ss.read_group(group_id, consistent=True)
    if item is not None and item.group_type == GROUP_TYPE:
        expire_streams_group(ctx.store, item, ctx.now_ms)
        item = ss.read_group(group_id, consistent=True)
    if item is None:
        return _not_found(group_id, f"Group {group_id} not found.")
    if item.group_type != GROUP_TYPE:
        return _not_found(group_id, f"Group {group_id} is not a streams group.")
    group = item.streams()
    topology = ss.topology(group_id)
    if topology is not None and not may_describe_topics(ctx, described_topics(topology)):
        # As Kafka: no members, no topology, when one of its topics is not describable.
        return StreamsGroupDescribedGroup(
            group_id=group_id,
            error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
            error_message=UNDESCRIBABLE_TOPICS,
        )
    members = ss.members(group)
    reports = ss.reports(group) if members else {}
    ready = group.topology_status is None
    return StreamsGroupDescribedGroup(
        group_id=group_id,
        group_state=group_state(
            len(members), group.group_epoch, group.target_epoch, ready, members
        ),
        group_epoch=group.group_epoch,
        assignment_epoch=group.target_epoch,
        topology=_topology(
            topology,
            {}
            if topology is None
            else described_counts(ctx.store, topology, members, ctx.now_ms, ready),
            ready,
            ctx,
        ),
        members=[_member(m, reports.get(m.member_id, Report())) for m in members],
        authorized_operations=group_operations(ctx, group_id, asked),
    )
