"""Pieces of the streams heartbeat's answer: task lists, statuses, and the endpoints' partitions
for interactive queries (Kafka's EndpointToPartitionsManager)."""

from __future__ import annotations

from collections.abc import Mapping

from ...core.streams.configuration import InvalidTopology, configure
from ...core.streams.group import StreamsGroup
from ...core.streams.heartbeat_rules import statuses
from ...core.streams.member import StreamsGroupMember
from ...core.streams.tasks import Tasks
from ...models.streams import (
    StreamsEndpoint,
    StreamsEndpointToPartitions,
    StreamsStatus,
    StreamsTaskIds,
    StreamsTopicPartitions,
)
from ...store.store import Store


def task_list(tasks: Tasks) -> list[StreamsTaskIds]:
    return [
        StreamsTaskIds(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items())
    ]


def status_list(group: StreamsGroup, member: StreamsGroupMember, now: int) -> list[StreamsStatus]:
    topology = None
    if group.topology_status is not None:
        topology = (group.topology_status, group.topology_detail)
    return [
        StreamsStatus(status_code=code, status_detail=detail)
        for code, detail in statuses(group, member, topology, now)
    ]


def _partitions(
    tasks: Tasks, sources: Mapping[str, tuple[str, ...]], counts: Mapping[str, int]
) -> list[StreamsTopicPartitions]:
    """The source partitions a member's tasks read: task (s, p) reads partition p of every
    source topic of sub-topology s that has one."""
    found: dict[str, set[int]] = {}
    for sub, partitions in tasks.items():
        for topic in sources.get(sub, ()):
            found.setdefault(topic, set()).update(p for p in partitions if p < counts.get(topic, 0))
    return [
        StreamsTopicPartitions(topic=t, partitions=sorted(ps))
        for t, ps in sorted(found.items())
        if ps
    ]


def endpoint_partitions(
    store: Store, group: StreamsGroup, member: StreamsGroupMember
) -> list[StreamsEndpointToPartitions]:
    """Every endpoint of the group with the partitions its member's active and standby tasks
    read (`member` as this request wrote it)."""
    members = {m.member_id: m for m in store.streams.members(group)}
    members[member.member_id] = member
    topology = store.streams.topology(group.group_id)
    counts = {t.name: t.partitions for t in store.topics.list()}
    sources: Mapping[str, tuple[str, ...]] = {}
    if topology is not None:
        try:
            sources = configure(topology, counts).source_topics
        except InvalidTopology:
            sources = {}
    found = []
    for m in sorted(members.values(), key=lambda m: m.member_id):
        if m.user_endpoint is None:
            continue
        assigned = m.tasks.assigned
        found.append(
            StreamsEndpointToPartitions(
                user_endpoint=StreamsEndpoint(host=m.user_endpoint.host, port=m.user_endpoint.port),
                active_partitions=_partitions(assigned.active, sources, counts),
                standby_partitions=_partitions(assigned.standby, sources, counts),
            )
        )
    return found
