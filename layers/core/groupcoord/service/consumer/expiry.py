"""Lazy and swept expiry of consumer group members: session timeouts and the rebalance timeout
of a member stuck in UNREVOKED_PARTITIONS. An expired member is fenced (removed) and the group
epoch bumped; the new target is installed at once, so an idle group settles without traffic.

A heartbeat renews only the member's own item, so the group item's `dl` is a lower bound of
every member's deadlines: when it passes, one request (or the sweeper) reads the members,
fences the overdue ones and writes the exact next deadline. In a big group it first claims the
scan by moving `dl` a little ahead (and marking the claim, `scanId`), and concurrent requests
that lose the claim go on without scanning (core/timer_checks.py); a small group's scan is not
claimed. A scan that fenced nobody keeps its result even if the group moved meanwhile
(in a join storm it always does): else the claim would run out and the next request scan again,
every SCAN_LEASE_MS for as long as the storm lasts.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from ...core.consumer.expiry import ConsumerExpiry
from ...core.consumer.model import EMPTY, STABLE, ConsumerGroup
from ...core.modern.expiry import is_due, lease_until, plan_expiry
from ...core.timer_checks import check_is_claimed
from ...store.consumer.installs import CHUNK
from ...store.errors import Conflict
from ...store.store import Store
from ...store.stored_group import StoredGroup
from ...store.writes import joined
from .common import reload, state_refresh_ms
from .downgrade import maybe_downgrade
from .install import ensure_target

# Attempts to keep a scan's result on a group that moved since the scan read it.
KEEP_ATTEMPTS = 3


def expire_consumer_group(
    store: Store, group_item: StoredGroup, now_ms: int
) -> ConsumerGroup | None:
    """Run the group's expiry scan if it is due. Returns the group as the scan wrote it, when
    that is all that changed (a caller need not read it again); None when the caller must.

    A small group's scan starts from `group_item` as the caller read it (eventually
    consistent, maybe): its one write is conditional on that version, and if the group moved
    the result is kept on the fresh one or dropped (_keep_scan_result). A big group's claim
    starts from a consistent read."""
    cs = store.consumer
    seen = group_item.header
    item: StoredGroup | None = group_item
    if not seen.is_consumer_group or check_is_claimed(seen.member_count):
        item = cs.read_group(seen.group_id, consistent=True)
    if item is None or not item.header.is_consumer_group:
        return None
    group = item.consumer()
    if not is_due(group, now_ms):
        return group if item is not group_item else None
    lease = lease_until(group, now_ms)
    if lease is not None:
        claim = replace(group, deadline=lease, scan_id=uuid.uuid4().hex)
        try:
            group = cs.update_group(group, claim)
        except Conflict:
            return None  # someone else scans, or the group moved: it is looked at again
    return _scan(store, group, now_ms)


def _scan(store: Store, group: ConsumerGroup, now_ms: int) -> ConsumerGroup | None:
    cs = store.consumer
    members = cs.members(group)
    rule = ConsumerExpiry(refresh_ms=state_refresh_ms(store.settings), chunk=CHUNK // 2)
    plan = plan_expiry(group, members, now_ms, rule)
    if not plan.expired:
        try:
            return cs.update_group(group, plan.group)
        except Conflict:
            _keep_scan_result(store, group, plan.group.deadline, now_ms)
        return None
    # The downgrade: fencing the last consumer-protocol members of a group whose other
    # members all use the classic protocol turns it into a classic group.
    try:
        if maybe_downgrade(store, group, list(plan.expired), members, now_ms):
            return None
    except Conflict:
        return None  # the group or a member moved: it is looked at again
    removals = joined([cs.remove_member(group, m) for m in plan.expired])
    try:
        cs.update_group(group, plan.group, extra=removals)
    except Conflict:
        return None
    fresh = cs.group(group.group_id)
    if fresh is not None and plan.remaining:
        ensure_target(store, fresh, batched=False)
    return None


def _keep_scan_result(
    store: Store, claimed: ConsumerGroup, deadline: int | None, now_ms: int
) -> None:
    """The next deadline of a scan that fenced nobody, on a group written since the scan's
    member read (a join, an install). Kept only while the group's `dl` is the one the scan
    started from (its claim's, if claimed: the same `scanId` too; a write that lowered the
    deadline, or another scan's result, changed it), and no later than the earliest
    deadline a member can have got since the read: a join or a renewal gives at least the
    group's session timeout (a classic-protocol member's own, at least
    group.min.session.timeout.ms, once the group has had one), a rebalance timeout only a
    member of a group that is not Stable, which is looked at again within the state refresh
    anyway."""
    cs = store.consumer
    settings = store.settings
    for _ in range(KEEP_ATTEMPTS):
        group = reload(cs, claimed.group_id)
        if group is None or group.scan_id != claimed.scan_id:
            return
        if group.deadline != claimed.deadline:
            return
        shortest_session = settings.group_consumer_session_timeout_ms
        if group.classic_protocols is not None:  # it has had classic-protocol members
            shortest_session = min(shortest_session, settings.group_min_session_timeout_ms)
        bound = now_ms + shortest_session
        kept = bound if deadline is None else min(deadline, bound)
        if group.state not in (STABLE, EMPTY):
            kept = min(kept, now_ms + state_refresh_ms(settings))
        try:
            cs.update_group(group, replace(group, deadline=kept, scan_id=None))
            return
        except Conflict:
            continue


def delete_consumer_group_items(store: Store, group_item: StoredGroup) -> None:
    deleted = group_item.header
    store.consumer.delete_group_items(deleted.group_id, deleted.member_shards)
