"""What a streams group's source regexes resolve to when the authorizer is on: only the topics
its members may DESCRIBE (as a consumer group's regex), so that a group neither reads nor is
sized by, nor moves for, a topic its members may not know exists. The fingerprint of what an
install resolved tells a topic change that matters from one that changes nothing visible."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..consumer.group import subscription_digest
from ..topics import TopicRecord, regex_matches
from .topology import Topology

# Whether a topic may be resolved (None: every topic may).
Visible = Callable[[str], bool] | None


def all_visible(checks: Iterable[Visible]) -> Visible:
    """Topics every one of `checks` lets through (a group's members: their regexes are the
    group's, so each must be allowed to know each topic); None when none restricts."""
    found = [c for c in checks if c is not None]
    if not found:
        return None
    return lambda topic: all(check(topic) for check in found)


def readable_topics(
    topology: Topology, topics: Iterable[TopicRecord], visible: Visible
) -> list[TopicRecord]:
    """The registry topics `topology`'s configuration reads: those it names (its sources and
    internal topics, authorized when it was sent) and those a source regex matches that
    `visible` lets through."""
    regexes = [r for s in topology.subtopologies for r in s.source_topic_regex]
    named = {t for s in topology.subtopologies for t in s.source_topics}
    named |= topology.internal_topics()
    return [
        t
        for t in topics
        if t.name in named
        or (any(regex_matches(r, t.name) for r in regexes) and (visible is None or visible(t.name)))
    ]


def resolved_digest(topics: Iterable[TopicRecord]) -> str:
    """A fingerprint of the topics a configuration read: names, ids and partition counts."""
    return subscription_digest({f"{t.name}/{t.topic_id}": t.partitions for t in topics})


def described_topics(topology: Topology) -> set[str]:
    """The topics streams-group-describe shows of `topology`, which the caller must be allowed
    to DESCRIBE every one of (Kafka's KafkaApis.handleStreamsGroupDescribe): each sub-topology's
    sources, repartition sinks, changelogs and repartition sources."""
    names: set[str] = set()
    for s in topology.subtopologies:
        names.update(s.source_topics, s.repartition_sink_topics)
        names.update(t.name for t in (*s.state_changelog_topics, *s.repartition_source_topics))
    return names
