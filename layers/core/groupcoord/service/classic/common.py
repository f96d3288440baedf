"""What the classic APIs share beyond settling (service/classic_group.py): the member's renewal
slack, the Empty consumer group a classic join replaces, and how a held join or sync waits at its
barrier."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from ...core.classic.model import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
)
from ...core.classic.rules import barrier_due
from ...core.session_renewal import renewal_slack_ms
from ...settings import Settings
from ...store.store import Store
from ...store.stored_group import StoredGroup
from ..classic_group import NotClassic, load, settle
from ..context import ApiContext
from ..races import GroupBusy

# How often a held join/sync re-reads the group item in a small group (an eventually
# consistent read); bigger groups poll less often (hold_plan).
POLL_INTERVAL_S = 0.1
MIN_POLL_INTERVAL_S = 0.01
# Read units per second that all the held joins and syncs of one group may spend on its group
# item's key, their re-sends after a 202 included: a third of DynamoDB's ~3,000 per partition,
# leaving room for heartbeats and commits. A module constant, not a setting.
HELD_READ_BUDGET_RCU_S = 1000.0
POLL_RCU = 0.5  # an eventually consistent read of the group item (< 4 KB)
REQUEST_RCU = 1.0  # the consistent read of the group item each (re-)sent join or sync starts with


def classic_renewal_slack_ms(member: ClassicMember, settings: Settings) -> int:
    """How far past its expiry a classic member's heartbeat renewal sets its deadline."""
    return renewal_slack_ms(
        member.heartbeat_interval_ms, settings.session_renewal_skips, member.expiry_ms
    )


def claimed_instance_owner(
    store: Store, group: ClassicGroup, member: ClassicMember | None, instance_id: str | None
) -> str | None:
    """The member id owning `instance_id`, read only when the membership rule looks at it
    (core/offsets.classic_membership_error): the member named is unknown or only pending."""
    if not instance_id or (member is not None and not member.pending):
        return None
    return store.classic.instance_owner(group.group_id, instance_id)


def is_empty_consumer_group(item: StoredGroup) -> bool:
    found = item.header
    return found.is_consumer_group and found.member_count == 0


def replace_empty_consumer_group(store: Store, item: StoredGroup, now: int) -> ClassicGroup:
    """The Empty consumer group `item` (as read) becomes an Empty classic group
    in one conditional write; then its topic registrations go (the classic group registers
    its own when its first barrier completes), and so do classic payload items a crash left
    under its keys in a classic past (nobody reads them; best effort). Conflict if the
    group moved."""
    groups = store.classic
    group = groups.replace_empty_consumer_group(item, store.settings.member_shards, now)
    replaced = item.header
    groups.delete_stray_payloads(group.group_id, replaced.member_shards)
    for topic in replaced.subscribed_topics:
        store.topics.unsubscribe(topic, group.group_id)
    if replaced.subscribed_regex:
        store.topics.set_regex(group.group_id, None)
    return group


@dataclass(frozen=True)
class HoldPlan:
    """How the held joins and syncs of a group pace their reads of its group item."""

    hold_ms: int  # how long a request is held (a whole number of poll intervals)
    poll_interval_s: float
    retry_after_ms: int


def hold_plan(member_count: int, hold_ms: int) -> HoldPlan:
    """Every member waiting at a barrier reads the group item when its (re-)sent request starts
    (a consistent read, REQUEST_RCU), then once per poll interval while held (POLL_RCU), then
    answers 202 and is re-sent after retry-after. With all `member_count` members waiting at
    once, their reads of the group's key must stay within HELD_READ_BUDGET_RCU_S (no hot
    key): each member may spend budget / members read units a second, so the poll interval and
    the pause before the re-send grow with the group. A request is held for the whole poll
    intervals that fit in `hold_ms` (groupcoord.barrier.hold.ms); when not even one fits, it is
    not held at all: a hold that ends in its only poll reads as often as a re-send does, and a
    held Lambda is billed for every second it waits.

    The price is latency: a member learns that its barrier closed at its next read, up to one
    poll interval or one retry-after later. With the defaults (2 s hold) a group of up to ~200
    members polls every 100 ms and is re-sent after 500 ms, as before; at 1,000 members it
    polls every 0.5 s and is re-sent after 1 s; from ~4,000 members on it is not held and is
    re-sent after members / 1,000 s: at 5,000 members a member hears of the close ~2.5 s after
    it on average, at worst 5 s. The barrier itself closes as soon as the last member joins
    (that member's request closes it and is answered at once)."""
    base_retry_ms = max(10, min(500, hold_ms // 4 or 100))
    per_member_rcu_s = HELD_READ_BUDGET_RCU_S / max(1, member_count)
    interval_s = max(POLL_INTERVAL_S, POLL_RCU / per_member_rcu_s)
    # A hair of slack: 2 s / 0.1 s must be 20 polls, not 19.
    polls = math.floor(hold_ms / 1000 / interval_s + 1e-9) if hold_ms > 0 else 0
    held_ms = min(hold_ms, math.ceil(polls * interval_s * 1000))
    cycle_ms = math.ceil((REQUEST_RCU + POLL_RCU * polls) / per_member_rcu_s * 1000)
    return HoldPlan(held_ms, interval_s, max(base_retry_ms, cycle_ms - held_ms))


def wait_for(
    ctx: ApiContext,
    group_id: str,
    done: Any,
    known: ClassicGroup,
) -> ClassicGroup | None:
    """Hold the request at its barrier until `done(group)` or the hold time passes,
    settling due timers meanwhile. `known` is the group as this request last read
    (consistently) or wrote it: no poll repeats that read. Returns the group that satisfied
    `done`, else None."""
    if done(known):
        return known
    plan = hold_plan(known.member_count, ctx.settings.barrier_hold_ms)
    interval = plan.poll_interval_s
    clock = ctx.clock
    deadline = clock.monotonic_s() + plan.hold_ms / 1000
    group = known
    while True:
        left = deadline - clock.monotonic_s()
        if left <= MIN_POLL_INTERVAL_S:  # the last poll was at the end of the hold
            return None
        clock.sleep(min(left, _until_due_s(group, interval, clock.now_ms())))
        # Polls read eventually consistently (half the cost, and 2x the per-key read limit);
        # an answer is only ever built from a consistent read.
        polled = _load_classic(ctx, group_id, consistent=False)
        if polled is None:
            return None
        group = polled
        if done(group) or _is_due(group, clock.now_ms()):
            fresh = _load_classic(ctx, group_id, consistent=True)
            if fresh is None:
                return None
            try:
                group = settle(ctx.store, fresh, clock.now_ms())
            except NotClassic:  # upgraded while settling (a lost race re-reads the group)
                raise GroupBusy(group_id) from None
            if done(group):
                return group


def _load_classic(ctx: ApiContext, group_id: str, *, consistent: bool) -> ClassicGroup | None:
    try:
        return load(ctx.store, group_id, consistent=consistent)
    except NotClassic:
        # Upgraded to a consumer group meanwhile: Kafka answers the pending joins
        # and syncs 27, and their rejoin goes to the consumer group.
        raise GroupBusy(group_id) from None


def _is_due(group: ClassicGroup, now: int) -> bool:
    return (
        (group.next_check_ms is not None and now >= group.next_check_ms)
        or group.topics_changed()
        or barrier_due(group, now)
    )


def _until_due_s(group: ClassicGroup, interval_s: float, now: int) -> float:
    """How long a held request sleeps before reading the group again: the poll interval, or
    less when one of the group's timers (the initial delay, a deadline) falls due sooner."""
    if group.next_check_ms is None:
        return interval_s
    due_in = (group.next_check_ms - now) / 1000
    if due_in >= interval_s:
        return interval_s
    # One request settles a due timer; in a big group the others' wake-ups spread over their
    # poll interval instead of all reading the group key at that instant.
    spread = random.uniform(0, interval_s - POLL_INTERVAL_S) if interval_s > POLL_INTERVAL_S else 0
    return max(MIN_POLL_INTERVAL_S, due_in) + spread


def retry_after_ms(ctx: ApiContext, group: ClassicGroup) -> int:
    """The pause a 202 asks for before the re-send (which is held again): hold_plan."""
    return hold_plan(group.member_count, ctx.settings.barrier_hold_ms).retry_after_ms


def delete_classic_group_items(store: Store, item: StoredGroup) -> None:
    store.classic.delete_group(item.classic())


def expire_classic_group(store: Store, item: StoredGroup, now: int) -> None:
    settle(store, item.classic(), now)


__all__ = [
    "COMPLETING_REBALANCE",
    "EMPTY",
    "PREPARING_REBALANCE",
    "STABLE",
]
