"""A classic group read, settled and committed: what every classic request does first (load
the group, apply its due timers, retrying on races) and how it commits a transition. It stands
beside service/classic/ and service/consumer/ because both use it: the classic requests, and the
online upgrade of a classic group (consumer/upgrade.py), which settles it before converting; the
classic package in turn imports the consumer one for mixed groups.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.classic.model import ClassicGroup
from ..core.classic.rules import due_work, may_count_joins, needs_members, settle_due
from ..core.push import classic_notice_due
from ..core.timer_checks import check_is_claimed
from ..store.classic.repository import ClassicGroupStore
from ..store.classic.transition import ClassicTransition, MemberUpdate
from ..store.store import Store
from ..store.stored_group import StoredGroup
from ..wire.consumer_protocol import ConsumerProtocolError, decode_subscription
from .push import notify_members
from .races import retry_on_race

# How long a claimed timer check keeps other requests from scanning the same group.
CHECK_CLAIM_MS = 2_000


class NotClassic(Exception):
    """The group exists and is of the other type."""

    def __init__(self, found: StoredGroup) -> None:
        super().__init__(found.group_id)
        self.found = found


def load(store: Store, group_id: str, *, consistent: bool = True) -> ClassicGroup | None:
    """The classic group, or None; NotClassic for a group of the other type."""
    found = store.classic.read_group(group_id, consistent=consistent)
    if found is None:
        return None
    if not found.header.is_classic_group:
        raise NotClassic(found)
    return found.classic()


def settle(
    store: Store, group: ClassicGroup, now: int, *, count_joins: bool = False
) -> ClassicGroup:
    """Apply whatever is due (dead members, timeouts, a complete barrier, changed topics),
    retrying on races; returns the group as it now stands. `count_joins`: also read the open
    barrier's join counters (a read unit per member shard) and close it if every member has
    joined; the requests that count or uncount a join ask for it, the others do not."""
    groups = store.classic

    def once(attempt: int) -> ClassicGroup:
        current = group
        if attempt > 0:  # lost a race: decide again on the group as it now stands
            fresh = load(store, group.group_id)
            if fresh is None:
                return group
            current = fresh
        transition = _due_transition(store, groups, current, now, count_joins)
        if transition is None:
            return current
        committed = groups.commit(transition)
        _sync_subscriptions(store, current, committed)
        announce(store, current, committed)
        return committed

    return retry_on_race(store.clock, once)


def _due_transition(
    store: Store, groups: ClassicGroupStore, group: ClassicGroup, now: int, count_joins: bool
) -> ClassicTransition | None:
    """Read what settling needs (core/classic/rules.py decides) and the writes it makes."""
    work = due_work(group, now)
    counted = (
        count_joins
        and may_count_joins(group, work, now)
        and groups.join_count(group) >= group.member_count
    )
    if not (work.any or counted):
        return None
    # A timer check reads every member: in a big group one request claims it by moving `dl` a
    # little ahead and the others go on without scanning (core/timer_checks.py). A claimant
    # that dies leaves the check due when its claim ends.
    only_timers = not (work.topic_change or work.barrier or counted)
    if (
        work.timers
        and only_timers
        and check_is_claimed(group.member_count)
        and not groups.claim_check(group, now + CHECK_CLAIM_MS)
    ):
        return None
    members = groups.members(group, payloads=False) if needs_members(group, work, counted) else None
    settlement = settle_due(group, members, work, counted, now)
    if settlement is None:
        return None
    settled = settlement.group
    transition = ClassicTransition(
        group=settled,
        expected_version=group.version,
        delete_members=list(settlement.removed),
        delete_instances=[m.instance_id for m in settlement.removed if m.instance_id],
    )
    if settlement.completion is not None:
        completion = settlement.completion
        transition.group = replace(
            settled, subscribed_topics=_subscribed_topics(groups, completion)
        )
        transition.member_updates += [
            MemberUpdate(
                m.member_id,
                joined_generation=m.joined_generation,
                member_generation=m.member_generation,
                session_deadline_ms=m.session_deadline_ms,
            )
            for m in completion.members
        ]
    return transition


def _subscribed_topics(groups: ClassicGroupStore, completion: Any) -> tuple[str, ...]:
    """For protocolType "consumer", the union of the members' subscribed topics (their
    metadata: the payloads are read for it, after the member items the barrier closed on)."""
    group = completion.group
    if group.protocol_type != "consumer":
        return ()
    topics: set[str] = set()
    for member in groups.with_payloads(group, completion.members):
        try:
            topics.update(decode_subscription(member.metadata_for(group.protocol_name)).topics)
        except ConsumerProtocolError:
            continue  # opaque or malformed metadata: nothing to record for this member
    return tuple(sorted(topics))


def _sync_subscriptions(store: Store, before: ClassicGroup, after: ClassicGroup) -> None:
    """Keep the topic registry's per-topic subscriber index in step with the group."""
    old, new = set(before.subscribed_topics), set(after.subscribed_topics)
    for topic in sorted(new - old):
        store.topics.subscribe(topic, after.group_id)
    for topic in sorted(old - new):
        store.topics.unsubscribe(topic, after.group_id)


def commit(store: Store, before: ClassicGroup, transition: ClassicTransition) -> ClassicGroup:
    committed = store.classic.commit(transition)
    _sync_subscriptions(store, before, committed)
    announce(store, before, committed)
    return committed


def announce(store: Store, before: ClassicGroup, after: ClassicGroup) -> None:
    """Push (service/push.py), once the transition committed: a rebalance that starts (every
    member must rejoin) or a sync that completes (the members waiting for their assignment)."""
    if classic_notice_due(before, after):
        notify_members(store, after.group_id, None)
