"""Topology configuration (Kafka's InternalTopicManager with RepartitionTopics,
CopartitionedTopicsEnforcer and ChangelogTopics), pure: the topology and the partition counts
of the registry's topics in, the number of tasks of each sub-topology, the internal topics to
create and the group's status out.

A topology that can never be configured (a loop of repartition topics, a repartition source
nothing writes) raises `InvalidTopology` (130); one that cannot be configured yet (a missing
source topic, topics whose partition counts disagree, internal topics still to be created)
comes back with a status and no tasks: the group is NotReady until it can.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from ..topics import TopicRecord, compile_regex
from .topology import INTERNAL_TOPICS, Subtopology, TopicInfo, Topology


class StatusCode(IntEnum):
    """Kafka's StreamsGroupHeartbeatResponse.Status."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5


class InvalidTopology(Exception):
    """130 STREAMS_INVALID_TOPOLOGY: the topology can never be configured."""


class _NotConfigurable(Exception):
    """Kafka's TopicConfigurationException: not configurable yet, with a status."""

    def __init__(self, status: StatusCode, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class InternalTopic:
    """A changelog or repartition topic the coordinator creates in the topic registry."""

    name: str
    partitions: int
    replication_factor: int = -1  # -1: the registry's default
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ConfiguredTopology:
    epoch: int
    # Sub-topology id -> its number of tasks (its largest source); empty unless configured.
    task_counts: Mapping[str, int] = field(default_factory=dict)
    # Sub-topology id -> the topics its tasks read (resolved regexes included): the
    # partitions an endpoint serves (partitionsByUserEndpoint).
    source_topics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    stateful: frozenset[str] = frozenset()
    to_create: tuple[InternalTopic, ...] = ()
    status: StatusCode | None = None
    detail: str = ""

    @property
    def is_ready(self) -> bool:
        """Every topic is there with the right partition count: tasks may be assigned."""
        return self.status is None


def readable_counts(topics: Iterable[TopicRecord]) -> dict[str, int]:
    """The partition counts a streams topology is configured on: every topic of the registry
    but the Kinesis-backed ones. A streams group's tasks are partitions with no lineage, so a
    shard's children would be processed beside their parent, out of order: a source that is a
    Kinesis-backed topic counts as missing (status 1, `configured` says why), and a source
    regex does not match one."""
    return {t.name: t.partitions for t in topics if t.kinesis is None}


def summarize(topics: Iterable[str]) -> str:
    """Kafka's summarizeTopics: the first three, and how many more."""
    ordered = sorted(set(topics))
    if not ordered:
        return "<none>"
    shown = ", ".join(ordered[:3])
    more = len(ordered) - 3
    return shown + (f" and {more} additional topics" if more > 0 else "")


def resolve_sources(
    s: Subtopology, internal: frozenset[str], partitions: Mapping[str, int]
) -> tuple[str, ...]:
    """The external topics `s` reads: its named sources and the registry's topics its regexes
    fully match (RE2; never an internal topic, of this topology or the coordinator's)."""
    names = set(s.external_source_topics)
    for regex in s.source_topic_regex:
        pattern = compile_regex(regex).regex
        if pattern is None:
            continue
        names.update(
            t
            for t in partitions
            if t not in internal and t not in INTERNAL_TOPICS and pattern.fullmatch(t)
        )
    return tuple(sorted(names))


def configure(topology: Topology, partitions: Mapping[str, int]) -> ConfiguredTopology:
    """`partitions`: topic name -> partition count of every topic of the registry the topology
    may read (its named topics, and every topic when it has a regex source)."""
    internal = topology.internal_topics()
    sources = {
        s.subtopology_id: resolve_sources(s, internal, partitions) for s in topology.subtopologies
    }
    try:
        _check_sources(topology, sources, partitions)
        decided = _decide_partition_counts(topology, sources, partitions)
        to_create = _missing_internal_topics(topology, decided, partitions)
    except _NotConfigurable as why:
        return ConfiguredTopology(topology.epoch, status=why.status, detail=why.detail)
    counts = _counter(partitions, decided)
    task_counts = {
        s.subtopology_id: max(counts(t) for t in (*sources[s.subtopology_id],
                                                  *s.repartition_source_names))
        for s in topology.subtopologies
    }  # fmt: skip
    read = {
        sid: tuple(sorted({*names, *topology_sub(topology, sid).repartition_source_names}))
        for sid, names in sources.items()
    }
    stateful = frozenset(s.subtopology_id for s in topology.subtopologies if s.is_stateful)
    if to_create:
        return ConfiguredTopology(
            topology.epoch,
            to_create=to_create,
            status=StatusCode.MISSING_INTERNAL_TOPICS,
            detail="Internal topics are missing: " + summarize(t.name for t in to_create),
        )
    return ConfiguredTopology(topology.epoch, task_counts, read, stateful)


def topology_sub(topology: Topology, subtopology_id: str) -> Subtopology:
    found = topology.subtopology(subtopology_id)
    assert found is not None
    return found


def _counter(partitions: Mapping[str, int], decided: Mapping[str, int]) -> Callable[[str], int]:
    """A topic's partition count: the registry's if it exists, else the one decided."""

    def count(topic: str) -> int:
        if topic in partitions:
            return partitions[topic]
        return decided[topic]

    return count


def _check_sources(
    topology: Topology, sources: Mapping[str, tuple[str, ...]], partitions: Mapping[str, int]
) -> None:
    missing = {t for s in topology.subtopologies for t in s.external_source_topics} - set(
        partitions
    )
    if missing:
        raise _NotConfigurable(
            StatusCode.MISSING_SOURCE_TOPICS, f"Source topics {summarize(missing)} are missing."
        )
    for s in topology.subtopologies:
        if not sources[s.subtopology_id] and not s.repartition_source_topics:
            raise _NotConfigurable(
                StatusCode.MISSING_SOURCE_TOPICS,
                f"No topic matches the source topic regex of subtopology {s.subtopology_id}.",
            )


def _decide_partition_counts(
    topology: Topology, sources: Mapping[str, tuple[str, ...]], partitions: Mapping[str, int]
) -> dict[str, int]:
    decided = _repartition_counts(topology, sources, partitions)
    _enforce_copartitioning(topology, sources, partitions, decided)
    counts = _counter(partitions, decided)
    for s in topology.subtopologies:
        largest = max(counts(t) for t in (*sources[s.subtopology_id], *s.repartition_source_names))
        for changelog in s.state_changelog_topics:
            decided[changelog.name] = largest
    return decided


def _repartition_counts(
    topology: Topology, sources: Mapping[str, tuple[str, ...]], partitions: Mapping[str, int]
) -> dict[str, int]:
    """Kafka's RepartitionTopics: a repartition topic without a fixed count gets the largest
    source of the sub-topology that writes it, iterated to a fixpoint (a repartition topic
    may be written by a sub-topology that itself reads one)."""
    counts = {
        t.name: t.partitions
        for s in topology.subtopologies
        for t in s.repartition_source_topics
        if t.partitions != 0
    }
    while True:
        needed = progress = False
        for s in topology.subtopologies:
            for sink in s.repartition_sink_topics:
                if sink in counts:
                    continue
                known = [counts[t] for t in s.repartition_source_names if t in counts]
                known += [partitions[t] for t in sources[s.subtopology_id] if t in partitions]
                if known:
                    counts[sink] = max(known)
                    progress = True
                else:
                    needed = True
        if not needed:
            break
        if not progress:
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics. There may "
                "be loops in the topology that cannot be resolved."
            )
    for s in topology.subtopologies:
        if any(t not in counts for t in s.repartition_source_names):
            raise InvalidTopology(
                "Failed to compute number of partitions for all repartition topics, because a "
                "repartition source topic is never used as a sink topic."
            )
    return counts


def _copartition_groups(
    s: Subtopology, internal: frozenset[str], partitions: Mapping[str, int]
) -> list[set[str]]:
    groups = []
    for g in s.copartition_groups:
        topics = {s.source_topics[i] for i in g.source_topics}
        for i in g.source_topic_regex:
            one = Subtopology(s.subtopology_id, source_topic_regex=(s.source_topic_regex[i],))
            topics.update(resolve_sources(one, internal, partitions))
        topics.update(s.repartition_source_topics[i].name for i in g.repartition_source_topics)
        groups.append(topics)
    return groups


def _enforce_copartitioning(
    topology: Topology,
    sources: Mapping[str, tuple[str, ...]],
    partitions: Mapping[str, int],
    decided: dict[str, int],
) -> None:
    """Kafka's CopartitionedTopicsEnforcer, group by group (status 2 on a mismatch)."""
    infos: list[TopicInfo] = [
        t for s in topology.subtopologies for t in s.repartition_source_topics
    ]
    fixed = {t.name for t in infos if t.partitions != 0}
    repartition = {t.name for t in infos}
    internal = topology.internal_topics()
    for s in topology.subtopologies:
        for group in _copartition_groups(s, internal, partitions):
            if group:
                decided.update(_enforce(group, fixed, repartition, _counter(partitions, decided)))


def _enforce(
    group: set[str], fixed: set[str], repartition: set[str], count: Callable[[str], int]
) -> dict[str, int]:
    ours = {t: count(t) for t in group if t in repartition}
    external = {t: count(t) for t in group if t not in repartition}
    if not external:
        pinned = {count(t) for t in group & fixed}
        if len(pinned) > 1:
            raise _mismatch(ours)
        target = pinned.pop() if pinned else max(ours.values())
    else:
        if len(set(external.values())) > 1:
            raise _mismatch(external)
        target = next(iter(external.values()))
    for topic, current in ours.items():
        if topic in fixed and current != target:
            raise _NotConfigurable(
                StatusCode.INCORRECTLY_PARTITIONED_TOPICS,
                f"Number of partitions [{current}] of repartition topic [{topic}] doesn't match "
                f"number of partitions [{target}] of the source topic.",
            )
    return dict.fromkeys(ours, target)


def _mismatch(counts: Mapping[str, int]) -> _NotConfigurable:
    shown = ", ".join(f"{t}={n}" for t, n in sorted(counts.items()))
    return _NotConfigurable(
        StatusCode.INCORRECTLY_PARTITIONED_TOPICS,
        f"Following topics do not have the same number of partitions: [{{{shown}}}]",
    )


def _missing_internal_topics(
    topology: Topology, decided: Mapping[str, int], partitions: Mapping[str, int]
) -> tuple[InternalTopic, ...]:
    """The internal topics to create; an existing one with another partition count is 2."""
    wanted: dict[str, InternalTopic] = {}
    for s in topology.subtopologies:
        for t in (*s.repartition_source_topics, *s.state_changelog_topics):
            count = t.partitions or decided[t.name]
            factor = t.replication_factor or -1
            wanted[t.name] = InternalTopic(t.name, count, factor, t.configs)
    for name, topic in list(wanted.items()):
        if name in partitions:
            if partitions[name] != topic.partitions:
                raise _NotConfigurable(
                    StatusCode.INCORRECTLY_PARTITIONED_TOPICS,
                    f"Existing topic {name} has different number of partitions: expected "
                    f"{topic.partitions}, found {partitions[name]}",
                )
            del wanted[name]
    return tuple(wanted[n] for n in sorted(wanted))
