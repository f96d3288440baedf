"""Lazy and swept expiry of streams group members: session timeouts and the rebalance timeout
of a member stuck in UNREVOKED_TASKS, as the consumer protocol's (service/consumer/expiry.py).
An expired member is removed and the group epoch bumped; the next target is installed at once,
so an idle group settles without traffic. The group item's `dl` is a lower bound of every
member's deadlines (and the end of the initial delay): when it passes, one request (or the
sweeper) reads the members, removes the overdue ones and writes the exact next deadline.
"""

from __future__ import annotations

from dataclasses import replace

from ...core.modern.expiry import is_due, lease_until, plan_expiry
from ...core.streams.expiry import StreamsExpiry
from ...core.streams.heartbeat_rules import GROUP_TYPE
from ...store.errors import Conflict
from ...store.store import Store
from ...store.stored_group import StoredGroup
from ...store.streams.installs import CHUNK
from ...store.writes import joined
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
    ss = store.streams
    lease = lease_until(group, now_ms)
    if lease is not None:
        try:
            group = ss.update_group(group, replace(group, deadline=lease))
        except Conflict:
            return
    plan = plan_expiry(group, ss.members(group), now_ms, RULE)
    if not plan.expired:
        try:
            group = ss.update_group(group, plan.group)
        except Conflict:
            return  # the group moved: the writer's deadline stands, or it is looked at again
        ensure_target(store, group, batched=False)  # the initial delay may be over
        return
    removals = joined([ss.remove_member(group, m) for m in plan.expired])
    try:
        fenced = ss.update_group(group, plan.group, extra=removals)
    except Conflict:
        return
    if plan.remaining:
        ensure_target(store, fenced, batched=False)


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
