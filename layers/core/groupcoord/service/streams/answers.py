"""Pieces of the streams heartbeat's answer: task lists, statuses, and the endpoints' partitions
for interactive queries (Kafka's EndpointToPartitionsManager)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
from .topology import registry_counts
from .visibility import members_visible


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


def _entry(m: StreamsGroupMember, target_epoch: int) -> dict[str, Any]:
    """A member's line of the endpoints map: its endpoint and its target's active and standby
    tasks (where the installed assignment puts them, as the classic protocol's
    partitionsByHost: one endpoint epoch per install, however many members then reconcile).
    A target newer than the group's `target_epoch` is an install not yet flipped: the tasks it
    is assigned stand in for it until the flip's new epoch rebuilds the map."""
    assert m.user_endpoint is not None
    tasks = m.target if m.target_epoch <= target_epoch else m.tasks.assigned
    return {
        **_identity(m),
        "h": m.user_endpoint.host,
        "p": m.user_endpoint.port,
        "a": {s: sorted(ps) for s, ps in tasks.active.items()},
        "s": {s: sorted(ps) for s, ps in tasks.standby.items()},
    }


def _identity(m: StreamsGroupMember) -> dict[str, Any]:
    """Who a line of the map is: the member id and, for a static member, its instance."""
    found: dict[str, Any] = {"m": m.member_id}
    if m.instance_id is not None:
        found["i"] = m.instance_id
    return found


def _line_key(e: dict[str, Any]) -> str:
    """Whose line it is: a static member's instance (its rejoin under a new member id takes
    over the same line, so the map and its epoch stay), else the member."""
    return f"i:{e['i']}" if "i" in e else f"m:{e['m']}"


def _build(store: Store, group: StreamsGroup) -> dict[str, Any]:
    """The endpoints map from every member (a Query per member shard), the topology and the
    partition counts of its source topics."""
    topology = store.streams.topology(group.group_id)
    members = store.streams.members(group)
    visible = members_visible(store, members, store.clock.now_ms())
    counts = registry_counts(store, topology, visible=visible)
    sources: Mapping[str, tuple[str, ...]] = {}
    if topology is not None:
        try:
            sources = configure(topology, counts).source_topics
        except InvalidTopology:
            sources = {}
    read = {t for topics in sources.values() for t in topics}
    return {
        "sources": {s: list(ts) for s, ts in sources.items()},
        "counts": {t: n for t, n in counts.items() if t in read},
        "entries": [_entry(m, group.target_epoch) for m in members if m.user_endpoint],
    }


@dataclass(frozen=True)
class _Map:
    """A stored endpoints map, decoded: each member's line as answered, and what a line is
    computed from (kept per process: EndpointsStore.remember)."""

    lines: dict[str, StreamsEndpointToPartitions]
    sources: dict[str, tuple[str, ...]]
    counts: dict[str, int]

    @classmethod
    def of(cls, data: dict[str, Any]) -> _Map:
        sources = {s: tuple(ts) for s, ts in data["sources"].items()}
        counts = data["counts"]
        lines = {_line_key(e): _line(e, sources, counts) for e in data["entries"]}
        return cls(lines, sources, counts)


def _line(
    e: dict[str, Any], sources: Mapping[str, tuple[str, ...]], counts: Mapping[str, int]
) -> StreamsEndpointToPartitions:
    def tasks(raw: dict[str, list[int]]) -> Tasks:
        return {s: frozenset(ps) for s, ps in raw.items()}

    return StreamsEndpointToPartitions(
        user_endpoint=StreamsEndpoint(host=e["h"], port=int(e["p"])),
        active_partitions=_partitions(tasks(e["a"]), sources, counts),
        standby_partitions=_partitions(tasks(e["s"]), sources, counts),
    )


def _stored_map(store: Store, group: StreamsGroup) -> _Map:
    """The map of the group's endpoint epoch: this process's copy, else one GetItem (and its
    chunks), else built from the members by the first heartbeat that needs it and written."""
    endpoints, gid, born = store.streams.endpoints, group.group_id, group.created_at_ms
    found = endpoints.cached(gid, group.endpoint_epoch, born)
    if found is not None:
        return found
    head = endpoints.head(gid)
    data = endpoints.read(gid, head, group.endpoint_epoch, born)
    stored = data is not None
    if data is None:
        data = _build(store, group)
        stored = endpoints.write(gid, group.endpoint_epoch, data, head, born)
    decoded = _Map.of(data)
    if stored:  # a build that lost the race is answered, not kept: the winner's is the map
        endpoints.remember(gid, group.endpoint_epoch, born, decoded, len(decoded.lines))
    return decoded


def endpoint_partitions(
    store: Store, group: StreamsGroup, member: StreamsGroupMember
) -> list[StreamsEndpointToPartitions]:
    """Every endpoint of the group with the partitions its member's target active and standby
    tasks read, from the map of the group's endpoint epoch (_stored_map), with `member`'s own
    line as this request wrote it."""
    found = _stored_map(store, group)
    lines = dict(found.lines)
    key = _line_key(_identity(member))
    lines.pop(key, None)
    if member.user_endpoint is not None:
        own = _entry(member, group.target_epoch)
        lines[key] = _line(own, found.sources, found.counts)
    return [line for _, line in sorted(lines.items())]
