"""The offset rules of both group types, as pure functions: who may commit (Kafka's
ClassicGroup.validateOffsetCommit and ConsumerGroup.validateOffsetCommit with KIP-1251) and
when a committed offset expires (offsets.retention.minutes). The service reads the facts,
these decide, the store writes under a guard that re-checks the decision (docs/offsets.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import Errors
from .classic.identity import identity_error
from .classic.model import COMPLETING_REBALANCE, ClassicGroup, ClassicMember
from .consumer.member import ConsumerGroupMember
from .kinesis.positions import Position

# However far the next expiry, a retention check looks again within this long: a group may
# have emptied since.
MAX_RETENTION_CHECK_INTERVAL_MS = 3_600_000


@dataclass(frozen=True)
class CommittedOffset:
    topic: str
    topic_id: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    commit_timestamp_ms: int = 0
    # A Kinesis-backed topic's checkpoint (core/kinesis/positions.py).
    position: Position | None = None


# --- who may commit ---


def classic_membership_error(
    member: ClassicMember | None,
    member_id: str,
    instance_id: str | None,
    instance_owner: str | None,
) -> Errors | None:
    """Why a classic member's heartbeat or commit is refused for who it is (the identity rule,
    core/classic/identity.py, without the ownership check: the heartbeat checks it in its
    write, a commit in its fence). None: it is the member it says."""
    return identity_error(member, member_id, instance_id, instance_owner)


def classic_commit_error(
    group: ClassicGroup,
    member: ClassicMember | None,
    member_id: str,
    instance_id: str | None,
    instance_owner: str | None,
    generation: int,
) -> Errors | None:
    """The strict rule: a known member of the current generation, not while the group waits
    for the leader's assignment (27). None: admitted."""
    error = classic_membership_error(member, member_id, instance_id, instance_owner)
    if error is not None:
        return error
    if generation != group.generation:
        return Errors.ILLEGAL_GENERATION
    if group.state == COMPLETING_REBALANCE:
        return Errors.REBALANCE_IN_PROGRESS
    return None


def consumer_commit_error(
    member: ConsumerGroupMember | None,
    client_epoch: int,
    partitions: Iterable[tuple[str, int]],
) -> Errors | None:
    """KIP-1251: a member committing with its current epoch may commit anything; a newer epoch
    than the coordinator's is 113; an older one only partitions (topic id, index) it has held
    since an epoch no later than the client's. A classic-protocol member of the group keeps
    the strict generation rule (22). None: admitted."""
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID
    member_epoch = member.assignment.epoch
    if member.classic is not None and client_epoch != member_epoch:
        return Errors.ILLEGAL_GENERATION
    if client_epoch > member_epoch:
        return Errors.STALE_MEMBER_EPOCH
    if client_epoch < member_epoch:
        for topic_id, partition in partitions:
            since = member.assignment.assignment_epoch(topic_id, partition)
            if since is None or since > client_epoch:
                return Errors.STALE_MEMBER_EPOCH
    return None


# --- retention ---


@dataclass(frozen=True)
class RetainingGroup:
    """What retention needs to know of a group."""

    is_consumer_group: bool
    member_count: int
    empty_since_ms: int | None
    subscribed_topics: frozenset[str]


def expires_at(group: RetainingGroup, offset: CommittedOffset, retention_ms: int) -> int | None:
    """When `offset` expires, or None while it cannot (the group holds on to it): a classic
    group's offsets `retention` after it became Empty, never while it has members; a consumer
    group's offsets of topics it does not subscribe to `retention` after their commit."""
    if group.is_consumer_group:
        if offset.topic in group.subscribed_topics:
            return None
        return offset.commit_timestamp_ms + retention_ms
    if group.member_count > 0 or group.empty_since_ms is None:
        return None
    return group.empty_since_ms + retention_ms


@dataclass(frozen=True)
class RetentionPlan:
    expired: tuple[CommittedOffset, ...]
    # Every offset expired and the group is empty (or gone): the group goes too.
    delete_group: bool
    # When to look again (unless the group goes and no offset is left).
    next_check_ms: int


def plan_retention(
    group: RetainingGroup | None,
    offsets: Sequence[CommittedOffset],
    now_ms: int,
    retention_ms: int,
) -> RetentionPlan:
    """A retention check's decision. Offsets with no group (a group deleted while a commit
    raced it) expire by their commit time."""
    if group is None:
        expiries = {o: o.commit_timestamp_ms + retention_ms for o in offsets}
    else:
        expiries: dict[CommittedOffset, int | None] = {  # type: ignore[no-redef]
            o: expires_at(group, o, retention_ms) for o in offsets
        }
    expired = tuple(o for o, at in expiries.items() if at is not None and at <= now_ms)
    remaining = [at for at in expiries.values() if at is None or at > now_ms]
    empty = group is None or group.member_count == 0
    upcoming = [at for at in remaining if at is not None]
    next_check = min([now_ms + min(retention_ms, MAX_RETENTION_CHECK_INTERVAL_MS), *upcoming])
    return RetentionPlan(expired, not remaining and empty, next_check)
