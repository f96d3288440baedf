"""Streams source regexes under the authorizer (core/streams/visibility.py): whose DESCRIBE
rights decide what a group's regexes resolve, and whether a topic change the registry told
the group of changes what they resolve (else the group does not move: its members would learn
of a topic they may not describe)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from ...core.streams.configuration import resolve_sources
from ...core.streams.group import StreamsGroup
from ...core.streams.member import StreamsGroupMember
from ...core.streams.topology import Topology
from ...core.streams.visibility import Visible, all_visible, resolved_digest
from ...store.store import Store
from ..authorization import describable_by
from .topology import registry_counts, registry_topics


def members_visible(store: Store, members: Iterable[StreamsGroupMember], now_ms: int) -> Visible:
    """The topics a group's regexes may resolve: those every member's principal may DESCRIBE
    (authorizer on; None: every topic)."""
    callers = {(m.principal, m.client_host) for m in members}
    return all_visible(
        describable_by(store, p, host, now_ms) for p, host in sorted(callers, key=str)
    )


def digest_if_gated(store: Store, topology: Topology, visible: Visible) -> str | None:
    """The fingerprint of what `topology` resolves now, for a group whose topic changes are
    gated by it (authorizer on, a source regex); None for any other group (every change the
    registry tells it of moves it)."""
    if not store.settings.authorizer_enabled or topology.registry_names() is not None:
        return None
    return resolved_digest(registry_topics(store, topology, visible=visible))


def topic_changes_matter(store: Store, group: StreamsGroup, now_ms: int) -> bool:
    """Whether the topic changes the group has not taken in change what its topology resolves
    (the members' visible topics, their ids and counts) since the last install."""
    if not store.settings.authorizer_enabled or group.resolved_digest is None:
        return True
    topology = store.streams.topology(group.group_id)
    if topology is None:
        return True
    visible = members_visible(store, store.streams.members(group), now_ms)
    return digest_if_gated(store, topology, visible) != group.resolved_digest


def described_counts(
    store: Store,
    topology: Topology,
    members: Iterable[StreamsGroupMember],
    now_ms: int,
    ready: bool,
) -> dict[str, int]:
    """The registry's partition counts streams-group-describe shows `topology` with: a ready
    group's internal topics (Kafka describes a ready group's configured topology) and what its
    regexes resolve (over what every member may describe, as its installs). Nothing is read
    for a group that is neither ready nor reads a regex."""
    regex = topology.registry_names() is None
    if not (ready or regex):
        return {}
    visible = members_visible(store, members, now_ms) if regex else None
    return registry_counts(store, topology, visible=visible)


def resolved_sources(
    topology: Topology, counts: Mapping[str, int], may_describe: Callable[[str], bool]
) -> dict[str, list[str]]:
    """Per sub-topology with a source regex, the topics it reads on `counts`
    (described_counts), without those `may_describe` refuses: what streams-group-describe
    shows as its sources. Empty for a topology without a regex."""
    if topology.registry_names() is not None:
        return {}
    internal = topology.internal_topics()
    return {
        s.subtopology_id: [t for t in resolve_sources(s, internal, counts) if may_describe(t)]
        for s in topology.subtopologies
        if s.source_topic_regex
    }
