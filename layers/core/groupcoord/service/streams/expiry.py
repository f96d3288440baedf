"""Lazy and swept expiry of streams group members: session timeouts and the rebalance timeout
of a member stuck in UNREVOKED_TASKS, as the consumer protocol's (service/consumer/expiry.py).
An expired member is removed and the group epoch bumped; the next target is installed at once,
so an idle group settles without traffic. The group item's `dl` is a lower bound of every
member's deadlines (and the end of the initial delay): when it passes, one request (or the
sweeper) reads the members, removes the overdue ones and writes the exact next deadline.
"""

from __future__ import annotations

from dataclasses import replace

from ...core.modern.expiry import is_due
from ...core.streams.expiry import StreamsExpiry
from ...core.streams.group import StreamsGroup
from ...core.streams.heartbeat_rules import GROUP_TYPE
from ...core.streams.member import StreamsGroupMember
from ...store.store import Store
from ...store.stored_group import StoredGroup
from ...store.streams.installs import CHUNK
from ..modern.expiry import ExpiryPass
from .install import ensure_target

RULE = StreamsExpiry(chunk=CHUNK // 2)  # one transaction's worth at a time


def expire_streams_group(store: Store, found: StoredGroup, now_ms: int) -> None:
    """Run the group's expiry if it is due (idempotent, race-safe: every write is on the
    version read)."""
    if found.group_type != GROUP_TYPE:
        return
    group = found.streams()
    if not is_due(group, now_ms):
        return
    _Check(store, now_ms).run(group)


class _Check(ExpiryPass[StreamsGroup, StreamsGroupMember]):
    """Streams' expiry pass: the next target installed after every check (the initial delay
    may be over)."""

    def __init__(self, store: Store, now_ms: int) -> None:
        super().__init__(store.streams, RULE, now_ms)
        self.whole = store

    def claim(self, group: StreamsGroup, lease_until_ms: int) -> StreamsGroup:
        return replace(group, deadline=lease_until_ms)

    def settled(self, group: StreamsGroup) -> None:
        ensure_target(self.whole, group, batched=False)

    def after_removal(self, group: StreamsGroup, remaining: bool) -> None:
        if remaining:
            ensure_target(self.whole, group, batched=False)


def delete_streams_group_items(store: Store, found: StoredGroup) -> None:
    """A deleted group's members, topology and topic subscriptions (the group item holds no
    list of topics: they are the topology's)."""
    deleted = found.header
    topology = store.streams.topology(deleted.group_id)
    if topology is not None:
        names = topology.internal_topics() | {
            t for s in topology.subtopologies for t in s.source_topics
        }
        for name in sorted(names):
            store.topics.unsubscribe(name, deleted.group_id)
    store.streams.delete_group_items(deleted.group_id, deleted.member_shards)
