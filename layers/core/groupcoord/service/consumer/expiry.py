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
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ...core.consumer.expiry import ConsumerExpiry
from ...core.consumer.member import ConsumerGroupMember
from ...core.consumer.model import EMPTY, STABLE, ConsumerGroup
from ...core.modern.expiry import ExpiryPlan, is_due
from ...core.timer_checks import check_is_claimed
from ...store.consumer.installs import CHUNK
from ...store.store import Store
from ...store.stored_group import StoredGroup
from ..modern.expiry import ExpiryPass
from ..races import retry_on_race
from .common import state_refresh_ms
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
    return _Scan(store, now_ms).run(group)


class _Scan(ExpiryPass[ConsumerGroup, ConsumerGroupMember]):
    """The consumer protocol's expiry pass: a claim marks its scan (`scanId`), a lost
    result may be kept (_keep_scan_result), and fencing the last consumer-protocol members
    of a group whose other members all use the classic protocol downgrades it."""

    def __init__(self, store: Store, now_ms: int) -> None:
        rule = ConsumerExpiry(refresh_ms=state_refresh_ms(store.settings), chunk=CHUNK // 2)
        super().__init__(store.consumer, rule, now_ms)
        self.whole = store

    def claim(self, group: ConsumerGroup, lease_until_ms: int) -> ConsumerGroup:
        return replace(group, deadline=lease_until_ms, scan_id=uuid.uuid4().hex)

    def kept_elsewhere(self, group: ConsumerGroup, plan: ExpiryPlan[Any, Any], now_ms: int) -> None:
        _keep_scan_result(self.whole, group, plan.group.deadline, now_ms)

    def leaves_otherwise(
        self,
        group: ConsumerGroup,
        expired: Sequence[ConsumerGroupMember],
        members: Sequence[ConsumerGroupMember],
    ) -> bool:
        return maybe_downgrade(self.whole, group, list(expired), list(members), self.now)

    def after_removal(self, group: ConsumerGroup, remaining: bool) -> None:
        fresh = self.whole.consumer.group(group.group_id)
        if fresh is not None and remaining:
            ensure_target(self.whole, fresh, batched=False)


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

    def attempt(_: int) -> None:
        group = cs.group(claimed.group_id)
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
        cs.update_group(group, replace(group, deadline=kept, scan_id=None))

    retry_on_race(store.clock, attempt, attempts=KEEP_ATTEMPTS, pause=False, busy=lambda: None)


def delete_consumer_group_items(store: Store, group_item: StoredGroup) -> None:
    deleted = group_item.header
    store.consumer.delete_group_items(deleted.group_id, deleted.member_shards)
