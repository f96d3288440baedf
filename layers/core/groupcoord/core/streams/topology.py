"""A streams application's processing topology as the coordinator keeps it (Kafka's
StreamsTopology), and the checks Kafka makes before anything is read (130
STREAMS_INVALID_TOPOLOGY)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace

from ...errors import Errors
from ...models.streams import StreamsSubtopology, StreamsTopicInfo
from ...models.streams import StreamsTopology as TopologyMessage
from ..modern.refusal import Refusal
from ..topics import check_topic_name, regex_error

# Kafka's Topic.isInternal, and the prefix Kafka reserves for its own topics.
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


@dataclass(frozen=True)
class TopicInfo:
    """A changelog or repartition topic: its partitions (0: the coordinator decides), its
    replication factor (0: the default) and its configs."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CopartitionGroup:
    """Indexes into the sub-topology's source topics, source regexes and repartition sources."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()

    @property
    def is_stateful(self) -> bool:
        """A sub-topology with state stores (changelogs) gets standby and warm-up tasks."""
        return bool(self.state_changelog_topics)

    @property
    def repartition_source_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.repartition_source_topics)

    @property
    def external_source_topics(self) -> tuple[str, ...]:
        """Named sources that are not this topology's repartition topics."""
        internal = set(self.repartition_source_names)
        return tuple(t for t in self.source_topics if t not in internal)


@dataclass(frozen=True)
class Topology:
    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()
    # Sub-topology id -> the first topology epoch since which it has been the same: a member
    # still on an older topology epoch runs only the sub-topologies its epoch shares with
    # this one (topology updates in place; empty: every one since this epoch).
    since: tuple[tuple[str, int], ...] = ()

    def runs(self, subtopology_id: str, member_topology_epoch: int) -> bool:
        """Whether a member on `member_topology_epoch` may get tasks of the sub-topology."""
        if member_topology_epoch >= self.epoch:
            return True
        return dict(self.since).get(subtopology_id, self.epoch) <= member_topology_epoch

    def updated_to(self, new: Topology) -> Topology:
        """`new` replacing this topology: the sub-topologies identical in both keep their
        `since`, the others start at the new epoch."""
        old = {s.subtopology_id: s for s in self.subtopologies}
        since = dict(self.since)
        kept = []
        for s in new.subtopologies:
            if old.get(s.subtopology_id) == s:
                kept.append((s.subtopology_id, since.get(s.subtopology_id, self.epoch)))
            else:
                kept.append((s.subtopology_id, new.epoch))
        return replace(new, since=tuple(kept))

    def subtopology(self, subtopology_id: str) -> Subtopology | None:
        for s in self.subtopologies:
            if s.subtopology_id == subtopology_id:
                return s
        return None

    def internal_topics(self) -> frozenset[str]:
        names: set[str] = set()
        for s in self.subtopologies:
            names.update(t.name for t in s.state_changelog_topics)
            names.update(t.name for t in s.repartition_source_topics)
            names.update(s.repartition_sink_topics)
        return frozenset(names)

    def registry_names(self) -> frozenset[str] | None:
        """The registry topics its configuration reads: every named source and internal
        topic; None when a sub-topology has a source regex (which reads the whole registry)."""
        if any(s.source_topic_regex for s in self.subtopologies):
            return None
        sources = {t for s in self.subtopologies for t in s.source_topics}
        return frozenset(sources) | self.internal_topics()

    def digest(self) -> str:
        """A fingerprint of everything but the epoch: two joins with the same epoch must send
        the same topology (else 131)."""
        return digest_of(self.subtopologies)


def digest_of(subtopologies: tuple[Subtopology, ...]) -> str:
    text = json.dumps([_plain(s) for s in subtopologies], sort_keys=True)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def _plain(s: Subtopology) -> object:
    def info(t: TopicInfo) -> list[object]:
        return [t.name, t.partitions, t.replication_factor, [list(c) for c in t.configs]]

    return [
        s.subtopology_id,
        list(s.source_topics),
        list(s.source_topic_regex),
        [info(t) for t in s.state_changelog_topics],
        list(s.repartition_sink_topics),
        [info(t) for t in s.repartition_source_topics],
        [[list(g.source_topics), list(g.source_topic_regex), list(g.repartition_source_topics)]
         for g in s.copartition_groups],
    ]  # fmt: skip


def _topic_info(message: StreamsTopicInfo) -> TopicInfo:
    configs = tuple(sorted((c.key, c.value) for c in message.topic_configs))
    return TopicInfo(message.name, message.partitions, message.replication_factor, configs)


def _subtopology(message: StreamsSubtopology) -> Subtopology:
    return Subtopology(
        subtopology_id=message.subtopology_id,
        source_topics=tuple(message.source_topics),
        source_topic_regex=tuple(message.source_topic_regex),
        state_changelog_topics=tuple(_topic_info(t) for t in message.state_changelog_topics),
        repartition_sink_topics=tuple(message.repartition_sink_topics),
        repartition_source_topics=tuple(_topic_info(t) for t in message.repartition_source_topics),
        copartition_groups=tuple(
            CopartitionGroup(
                tuple(g.source_topics),
                tuple(g.source_topic_regex),
                tuple(g.repartition_source_topics),
            )
            for g in message.copartition_groups
        ),
    )


def from_message(message: TopologyMessage) -> Topology:
    """The request's topology, sub-topologies in id order (their order carries no meaning)."""
    subs = sorted((_subtopology(s) for s in message.subtopologies), key=lambda s: s.subtopology_id)
    return Topology(message.epoch, tuple(subs))


def _invalid(message: str) -> Refusal:
    return Refusal(Errors.STREAMS_INVALID_TOPOLOGY, message)


def _check_name(name: str, role: str) -> Refusal | None:
    if name in INTERNAL_TOPICS:
        return _invalid(f"{role} {name} is an internal topic of the coordinator.")
    problem = check_topic_name(name)
    if problem is not None:
        return _invalid(f"{role}: {problem.message}")
    return None


def _check_indexes(s: Subtopology) -> Refusal | None:
    for g in s.copartition_groups:
        for indexes, bound, what in (
            (g.source_topics, len(s.source_topics), "sourceTopics"),
            (g.source_topic_regex, len(s.source_topic_regex), "sourceTopicRegex"),
            (g.repartition_source_topics, len(s.repartition_source_topics),
             "repartitionSourceTopics"),
        ):  # fmt: skip
            if any(not 0 <= i < bound for i in indexes):
                return _invalid(
                    f"Subtopology {s.subtopology_id}: a copartition group's {what} index is "
                    f"out of range (the list has {bound} topics)."
                )
    return None


def _check_subtopology(s: Subtopology) -> Refusal | None:
    # Kafka Streams lists a repartition topic only in repartitionSourceTopics: a
    # sub-topology after a repartition step may read nothing else.
    if not (s.source_topics or s.source_topic_regex or s.repartition_source_topics):
        return _invalid(f"Subtopology {s.subtopology_id} has no source topics.")
    for changelog in s.state_changelog_topics:
        if changelog.partitions != 0:
            return _invalid(
                f"Changelog topic {changelog.name} must have an undefined partition count, "
                f"but it is set to {changelog.partitions}."
            )
    for repartition in s.repartition_source_topics:
        if repartition.partitions < 0:
            return _invalid(f"Repartition topic {repartition.name} has a negative partition count.")
    named = [
        *((t, "Source topic") for t in s.source_topics),
        *((t.name, "Changelog topic") for t in s.state_changelog_topics),
        *((t, "Repartition sink topic") for t in s.repartition_sink_topics),
        *((t.name, "Repartition source topic") for t in s.repartition_source_topics),
    ]
    for name, role in named:
        refusal = _check_name(name, role)
        if refusal is not None:
            return refusal
    for regex in s.source_topic_regex:
        problem = regex_error(regex)
        if problem is not None:
            return _invalid(f"Source topic regex of subtopology {s.subtopology_id}: {problem}.")
    return _check_indexes(s)


def check_topology(topology: Topology) -> Refusal | None:
    """What makes a topology invalid before any topic is looked at (130)."""
    seen: set[str] = set()
    for s in topology.subtopologies:
        if s.subtopology_id in seen:
            return _invalid(f"Subtopology {s.subtopology_id} appears more than once.")
        seen.add(s.subtopology_id)
        refusal = _check_subtopology(s)
        if refusal is not None:
            return refusal
    return None
