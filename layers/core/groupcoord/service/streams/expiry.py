"""Lazy and swept expiry of streams group members: session timeouts and the rebalance timeout
of a member stuck in UNREVOKED_TASKS, as the consumer protocol's (service/consumer/expiry.py).
An expired member is removed and the group epoch bumped; the next target is installed at once,
so an idle group settles without traffic. The group item's `dl` is a lower bound of every
member's deadlines (and the end of the initial delay): when it passes, one request (or the
sweeper) reads the members, removes the overdue ones and writes the exact next deadline.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...core.streams.heartbeat_rules import GROUP_TYPE, is_expired, next_deadline
from ...core.timer_checks import check_is_claimed
from ...store.errors import Conflict
from ...store.groups import header
from ...store.store import Store
from ...store.streams.codec import group_from_item
from ...store.streams.installs import CHUNK
from .install import ensure_target

# How long a claimed check keeps other requests from reading the same group's members (as the
# consumer protocol's: service/consumer/expiry.py).
SCAN_LEASE_MS = 2_000
SCAN_LEASE_PER_MEMBER_MS = 4


def expire_streams_group(store: Store, group_item: dict[str, Any], now_ms: int) -> None:
    """Run the group's expiry if it is due (idempotent, race-safe: every write is on the
    version read)."""
    if header(group_item).group_type != GROUP_TYPE:
        return
    group = group_from_item(group_item)
    if group.deadline is None or group.deadline > now_ms:
        return
    ss = store.streams
    if check_is_claimed(group.member_count):
        # A big group's check is claimed first (core/timer_checks.py): its deadline moves a
        # little ahead on the version read, and the requests that lose go on without reading
        # every member.
        lease = SCAN_LEASE_MS + SCAN_LEASE_PER_MEMBER_MS * group.member_count
        try:
            group = ss.update_group(group, replace(group, deadline=now_ms + lease))
        except Conflict:
            return
    members = ss.members(group)
    overdue = [m for m in members if is_expired(m, now_ms)]
    expired = overdue[: CHUNK // 2]  # one transaction's worth at a time
    gone = {m.member_id for m in expired}
    remaining = [m for m in members if m.member_id not in gone]
    deadline = next_deadline(remaining, group, now_ms)
    if len(overdue) > len(expired):
        deadline = now_ms  # more expired than one transaction takes: look again at once
    if not expired:
        try:
            group = ss.update_group(group, replace(group, deadline=deadline))
        except Conflict:
            return  # the group moved: the writer's deadline stands, or it is looked at again
        ensure_target(store, group, batched=False)  # the initial delay may be over
        return
    removals = [item for m in expired for item in ss.remove_member_items(group, m)]
    fenced = replace(group.with_members(-len(expired)), deadline=deadline)
    fenced = fenced.with_endpoints_changed(any(m.user_endpoint is not None for m in expired))
    if not remaining:
        fenced = replace(fenced, target_epoch=fenced.group_epoch)
    try:
        fenced = ss.update_group(group, fenced, extra=removals)
    except Conflict:
        return
    if remaining:
        ensure_target(store, fenced, batched=False)


def delete_streams_group_items(store: Store, group_item: dict[str, Any]) -> None:
    """A deleted group's members, topology and topic subscriptions (the group item holds no
    list of topics: they are the topology's)."""
    deleted = header(group_item)
    topology = store.streams.topology(deleted.group_id)
    if topology is not None:
        names = topology.internal_topics() | {
            t for s in topology.subtopologies for t in s.source_topics
        }
        for name in sorted(names):
            store.topics.unsubscribe(name, deleted.group_id)
    store.streams.delete_group_items(deleted.group_id, deleted.member_shards)
