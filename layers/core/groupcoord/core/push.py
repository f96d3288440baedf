"""When the push channel tells members to heartbeat (docs/sessions.md, "Push"): the pure
decisions; service/push.py posts the notices."""

from __future__ import annotations

from collections.abc import Iterable

from .classic.model import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
)
from .classic.model import GROUP_TYPE as CLASSIC
from .consumer.assignment import Assignment, overlaps
from .consumer.assignment import minus as partitions_minus
from .consumer.member import ConsumerGroupMember
from .consumer.model import ConsumerGroup

# A deferred install's notice asks for a heartbeat no sooner than this (never a tight loop).
DEFERRED_NOTICE_MIN_MS = 100
# How many other members a crashed member's disconnect grace is told to (grace_watchers).
GRACE_WATCHERS = 2


def classic_notice_due(before: ClassicGroup, after: ClassicGroup) -> bool:
    """Whether a committed classic transition needs every member told: a rebalance that
    starts (each must rejoin), or a sync that completes (those waiting for their
    assignment)."""
    starts = after.state == PREPARING_REBALANCE and (
        before.state != PREPARING_REBALANCE or before.generation != after.generation
    )
    synced = before.state == COMPLETING_REBALANCE and after.state == STABLE
    return starts or synced


def grace_notice_after_ms(grace_until_ms: int, now_ms: int) -> int:
    """How long after a disconnect grace's notice the other members should heartbeat: what is
    left of the grace as the notice goes (`$disconnect`'s own writes took some of it), so their
    heartbeat, the request that expires the member, comes as the grace ends and not that
    much later; 0 (at once) once it has ended."""
    return max(0, grace_until_ms - now_ms)


def grace_watchers(
    connected: Iterable[str], crashed: str, count: int = GRACE_WATCHERS
) -> list[str]:
    """Whom a crashed member's disconnect grace is told to, to heartbeat as it ends: `count`
    of the other members with a connection, the next ones after `crashed` in the order of
    their ids, round the end. One heartbeat past the grace expires the member, and the
    install that follows tells the members whose target changed; the second watcher is for
    redundancy (a lost notice, a beat that lost a race; each looks again a second later).
    Not every member: all of them heartbeating into the group at the grace's end queued the
    expiry and the install behind each other (a kill's partitions owned again 1.6-1.8 s
    median, 2-2.4 s p99 at 16 members, the 1 s grace included).

    In that order, members crashed together still reach a live one: the last crashed member
    before a live one (whose connection stays) tells it, and a crashed member whose next
    ones are crashed too was told to them only if their `$disconnect`s came later, so its
    grace is over by the time theirs is."""
    others = sorted(set(connected) - {crashed})
    after = [m for m in others if m > crashed]
    return (after + others[: len(others) - len(after)])[:count]


def deferred_install_wait_ms(
    group: ConsumerGroup, now_ms: int, interval_ms: int, *, first_change: bool
) -> int | None:
    """After a request left the group's install to a later one (batched in time), how long
    members should wait before the heartbeat that installs it; None when no notice is due:
    the target is installed, or (`first_change`: the notice of a membership change to every
    member) the group was behind already before this change, and so told already."""
    if group.group_epoch <= group.target_epoch:
        return None
    if first_change and group.group_epoch != group.target_epoch + 1:
        return None
    if group.install_id is not None and group.install_until > now_ms:
        # A running install covers the bumps before its lease only: look again once it is
        # done (it tells the members it retargets itself).
        return max(DEFERRED_NOTICE_MIN_MS, interval_ms)
    return max(DEFERRED_NOTICE_MIN_MS, group.assigned_at + interval_ms - now_ms)


def release_notice_members(
    released: Assignment, members: Iterable[ConsumerGroupMember], releaser: str
) -> list[str]:
    """Whom a consumer member's released partitions concern: the other members whose target
    has one of them that they do not hold yet (they wait for it). Not the whole group: each
    release then made every member heartbeat at once (and again at its second look), and the
    waiter's own heartbeat queued behind theirs (a joiner's share came about 1 s late)."""

    def waits(m: ConsumerGroupMember) -> bool:
        return overlaps(partitions_minus(m.target, m.assignment.holds), released)

    return sorted(m.member_id for m in members if m.member_id != releaser and waits(m))


def topic_change_notice_due(group_type: str, state: str, member_count: int) -> bool:
    """Whether a group told of a topic change (its `topicChanges` bumped: a topic it subscribes
    to created, grown, deleted or resharded, or a Kinesis shard's end committed, its children
    now assignable) needs its members told: any group with members, but a classic group that
    is rebalancing already (its members rejoin anyway, and the rebalance reads the topics
    afresh). A consumer or streams member's heartbeat then bumps the group epoch and installs
    the next target (whose members are told in turn); a classic member's starts a rebalance."""
    if member_count <= 0:
        return False
    if group_type == CLASSIC:
        return state in (STABLE, COMPLETING_REBALANCE)
    return True
