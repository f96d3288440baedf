"""A streams group's topology against the topic registry: its configuration (core/streams/
configuration.py) on the registry's partition counts, its internal topics created, and the
group subscribed to its topics so that a topic's creation or growth reaches it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace

from ...core.consumer.group import combined_regex
from ...core.streams.configuration import (
    ConfiguredTopology,
    StatusCode,
    configure,
    readable_counts,
    summarize,
)
from ...core.streams.topology import Topology
from ...core.streams.visibility import Visible, readable_topics
from ...core.topics import TopicRecord
from ...store.store import Store
from ...store.topics import TopicAlreadyExists
from ...topic_ids import new_topic_id


def subscribe(store: Store, group_id: str, topology: Topology) -> None:
    """Register the group for its topics' changes (before the listing that configures it: a
    topic created after the listing bumps the group). Its internal topics are registered
    once they exist (`configured`), so that their creation does not bump it."""
    internal = topology.internal_topics()
    sources = {t for s in topology.subtopologies for t in s.source_topics} - internal
    for name in sorted(sources):
        store.topics.subscribe(name, group_id)
    regex = combined_regex(r for s in topology.subtopologies for r in s.source_topic_regex)
    if regex is not None:
        store.topics.set_regex(group_id, regex)


def registry_topics(
    store: Store, topology: Topology | None, *, consistent: bool = True, visible: Visible = None
) -> list[TopicRecord]:
    """The registry topics `topology` is configured on: only those it names (a read of a
    few items, whatever else the registry holds), or the whole registry for a source regex,
    of which a regex resolves only what `visible` lets through (core/streams/visibility.py).
    Consistent for what acts on the counts (an install's configuration, which must see a
    topic created just before it subscribed, and the topics it just created; the endpoints
    map, kept for its epoch); eventually consistent for a join's check, on every join."""
    if topology is None:
        return []
    names = topology.registry_names()
    if names is None:
        return readable_topics(topology, store.topics.list(consistent=consistent), visible)
    return store.topics.get_many(names, consistent=consistent)


def registry_counts(
    store: Store, topology: Topology | None, *, consistent: bool = True, visible: Visible = None
) -> dict[str, int]:
    """The partition counts `configure` reads for `topology` (readable_counts of
    registry_topics)."""
    return readable_counts(registry_topics(store, topology, consistent=consistent, visible=visible))


# Whether the request may create an internal topic (Kafka: CREATE on it, or on the cluster).
MayCreate = Callable[[str], bool]


def configured(
    store: Store,
    group_id: str,
    topology: Topology,
    now_ms: int,
    may_create: MayCreate,
    visible: Visible = None,
) -> ConfiguredTopology:
    """The topology configured on the registry's topics (a regex resolving what `visible` lets
    through), its missing internal topics created first (with the partition counts
    configuration derived): once they exist it is ready. A caller who may not create them
    leaves them missing (status 3, naming them)."""
    topics = registry_topics(store, topology, visible=visible)
    result = configure(topology, readable_counts(topics))
    if result.status is StatusCode.MISSING_SOURCE_TOPICS:
        return _kinesis_named(result, topology, topics)
    if not result.to_create:
        return result
    denied = [t.name for t in result.to_create if not may_create(t.name)]
    if denied:
        return replace(result, detail=f"Unauthorized to CREATE on topics {summarize(denied)}.")
    for topic in result.to_create:
        record = TopicRecord(
            name=topic.name,
            topic_id=new_topic_id(),
            partitions=topic.partitions,
            replication_factor=topic.replication_factor,
            created_at_ms=now_ms,
        )
        with contextlib.suppress(TopicAlreadyExists):  # a racing install created it
            store.topics.create(record, now_ms)
    for name in sorted(topology.internal_topics()):
        store.topics.subscribe(name, group_id)
    return configure(topology, registry_counts(store, topology, visible=visible))


def _kinesis_named(
    result: ConfiguredTopology, topology: Topology, topics: list[TopicRecord]
) -> ConfiguredTopology:
    """A missing source that is a Kinesis-backed topic: said so (core/streams/configuration.
    readable_counts), rather than "missing"."""
    sources = {t for s in topology.subtopologies for t in s.source_topics}
    kinesis = sorted(t.name for t in topics if t.kinesis is not None and t.name in sources)
    if not kinesis:
        return result
    return replace(
        result,
        detail=f"Source topics {summarize(kinesis)} are backed by Kinesis streams: a streams "
        "group does not read Kinesis-backed topics (their shards' lineage is not gated for "
        "tasks); read them with a consumer group.",
    )
