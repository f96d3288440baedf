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
from typing import Any

from ...core.consumer.group import EMPTY, STABLE, group_state, is_expired, next_deadline
from ...core.consumer.model import ConsumerGroup
from ...core.timer_checks import check_is_claimed
from ...store.consumer.codec import group_from_item
from ...store.consumer.installs import CHUNK
from ...store.errors import Conflict
from ...store.groups import header
from ...store.store import Store
from .common import reload, state_refresh_ms
from .downgrade import maybe_downgrade
from .install import ensure_target

# How long a claimed scan keeps other requests from scanning the same group: long enough to
# read every member (a claim that runs out mid-scan lets the next request scan too, and then the
# first scan's result is lost), short enough that a claimant that died delays little.
SCAN_LEASE_MS = 2_000
SCAN_LEASE_PER_MEMBER_MS = 4
# Attempts to keep a scan's result on a group that moved since the scan read it.
KEEP_ATTEMPTS = 3


def expire_consumer_group(
    store: Store, group_item: dict[str, Any], now_ms: int
) -> ConsumerGroup | None:
    """Run the group's expiry scan if it is due. Returns the group as the scan wrote it, when
    that is all that changed (a caller need not read it again); None when the caller must.

    A small group's scan starts from `group_item` as the caller read it (eventually
    consistent, maybe): its one write is conditional on that version, and if the group moved
    the result is kept on the fresh one or dropped (_keep_scan_result). A big group's claim
    starts from a consistent read."""
    cs = store.consumer
    seen = header(group_item)
    item: dict[str, Any] | None = group_item
    if not seen.is_consumer_group or check_is_claimed(seen.member_count):
        item = cs.group_item(seen.group_id, consistent=True)
    if item is None or not header(item).is_consumer_group:
        return None
    group = group_from_item(item)
    if group.deadline is None or group.deadline > now_ms:
        return group if item is not group_item else None
    if check_is_claimed(group.member_count):
        lease_ms = SCAN_LEASE_MS + SCAN_LEASE_PER_MEMBER_MS * group.member_count
        claim = replace(group, deadline=now_ms + lease_ms, scan_id=uuid.uuid4().hex)
        try:
            group = cs.update_group(group, claim)
        except Conflict:
            return None  # someone else scans, or the group moved: it is looked at again
    return _scan(store, group, now_ms)


def _scan(store: Store, group: ConsumerGroup, now_ms: int) -> ConsumerGroup | None:
    cs = store.consumer
    members = cs.members(group)
    expired = [m for m in members if is_expired(m, now_ms)][: CHUNK // 2]
    remaining = [m for m in members if m not in expired]
    refresh = state_refresh_ms(store.settings)
    if not expired:
        state = group_state(len(members), group.group_epoch, group.target_epoch, members)
        deadline = next_deadline(members, now_ms, None if state in (STABLE, EMPTY) else refresh)
        scanned = replace(
            group, deadline=deadline, state=state, member_count=len(members), scan_id=None
        )
        try:
            return cs.update_group(group, scanned)
        except Conflict:
            _keep_scan_result(store, group, deadline, now_ms)
        return None
    if len(members) == len(expired) + len(remaining):  # every overdue member is fenced now
        # The downgrade: fencing the last consumer-protocol members of a group whose other
        # members all use the classic protocol turns it into a classic group.
        try:
            if maybe_downgrade(store, group, expired, members, now_ms):
                return None
        except Conflict:
            return None  # the group or a member moved: it is looked at again
    removals = [item for m in expired for item in cs.remove_member_items(group, m)]
    deadline = next_deadline(remaining, now_ms, refresh)
    if len(members) > len(expired) + len(remaining):  # more expired than one pass takes
        deadline = now_ms
    fenced = replace(
        group.with_members(len(remaining) - group.member_count),
        deadline=deadline,
        scan_id=None,
    )
    if not remaining:
        fenced = replace(fenced, target_epoch=fenced.group_epoch)
    try:
        cs.update_group(group, fenced, extra=removals)
    except Conflict:
        return None
    fresh = cs.group_item(group.group_id, consistent=True)
    if fresh is not None and remaining:
        ensure_target(store, group_from_item(fresh), batched=False)
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


def delete_consumer_group_items(store: Store, group_item: dict[str, Any]) -> None:
    deleted = header(group_item)
    store.consumer.delete_group_items(deleted.group_id, deleted.member_shards)
