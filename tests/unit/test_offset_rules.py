"""The offset rules of core/offsets.py: who may commit (both protocols, KIP-1251) and when a
committed offset expires."""

from __future__ import annotations

import pytest

from groupcoord.core.classic.model import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
)
from groupcoord.core.consumer.member import ClassicMetadata, ConsumerGroupMember
from groupcoord.core.consumer.reconciliation import MemberAssignment
from groupcoord.core.offsets import (
    MAX_RETENTION_CHECK_INTERVAL_MS,
    CommittedOffset,
    RetainingGroup,
    classic_commit_error,
    classic_membership_error,
    consumer_commit_error,
    expires_at,
    plan_retention,
)
from groupcoord.errors import Errors

GROUP = ClassicGroup("g", state=STABLE, generation=4, member_count=2)
MEMBER = ClassicMember("m-1", instance_id=None)
STATIC = ClassicMember("m-2", instance_id="i-2")


# --- classic ---


@pytest.mark.parametrize(
    ("member", "member_id", "instance", "owner", "expected"),
    [
        (MEMBER, "m-1", None, None, None),
        (STATIC, "m-2", "i-2", None, None),
        (None, "m-9", None, None, Errors.UNKNOWN_MEMBER_ID),
        # An unknown member id whose instance id another member owns: fenced.
        (None, "m-9", "i-2", "m-2", Errors.FENCED_INSTANCE_ID),
        # ...or that nobody owns, or that it owns itself (but it is gone): unknown.
        (None, "m-9", "i-9", None, Errors.UNKNOWN_MEMBER_ID),
        (None, "m-9", "i-9", "m-9", Errors.UNKNOWN_MEMBER_ID),
        # A pending member id is not a member yet.
        (ClassicMember("m-3", pending=True), "m-3", None, None, Errors.UNKNOWN_MEMBER_ID),
        # A member naming another instance id than its own.
        (STATIC, "m-2", "i-3", None, Errors.FENCED_INSTANCE_ID),
        (MEMBER, "m-1", "i-1", None, Errors.FENCED_INSTANCE_ID),
    ],
)
def test_classic_membership(
    member: ClassicMember | None,
    member_id: str,
    instance: str | None,
    owner: str | None,
    expected: Errors | None,
) -> None:
    assert classic_membership_error(member, member_id, instance, owner) == expected


def test_a_classic_commit_needs_the_current_generation() -> None:
    assert classic_commit_error(GROUP, MEMBER, "m-1", None, None, 4) is None
    assert classic_commit_error(GROUP, MEMBER, "m-1", None, None, 3) == Errors.ILLEGAL_GENERATION
    assert classic_commit_error(GROUP, MEMBER, "m-1", None, None, 5) == Errors.ILLEGAL_GENERATION


def test_a_classic_commit_waits_for_the_leaders_assignment_but_not_for_a_rebalance() -> None:
    awaiting = ClassicGroup("g", state=COMPLETING_REBALANCE, generation=4)
    assert classic_commit_error(awaiting, MEMBER, "m-1", None, None, 4) == (
        Errors.REBALANCE_IN_PROGRESS
    )
    # Kafka admits a commit of the current generation while the next rebalance gathers joins.
    preparing = ClassicGroup("g", state=PREPARING_REBALANCE, generation=4)
    assert classic_commit_error(preparing, MEMBER, "m-1", None, None, 4) is None


def test_who_the_member_is_is_checked_before_its_generation() -> None:
    assert classic_commit_error(GROUP, None, "m-9", None, None, 99) == Errors.UNKNOWN_MEMBER_ID


# --- consumer (KIP-1251) ---

T = "topic-id-1"


def consumer_member(
    epoch: int, assigned_at: dict[int, list[int]], **kw: object
) -> ConsumerGroupMember:
    held = frozenset(p for ps in assigned_at.values() for p in ps)
    assignment = MemberAssignment(
        epoch=epoch,
        assigned={T: held} if held else {},
        assigned_at={e: {T: frozenset(ps)} for e, ps in assigned_at.items() if ps},
    )
    return ConsumerGroupMember("c-1", assignment=assignment, **kw)  # type: ignore[arg-type]


def test_the_current_epoch_may_commit_anything() -> None:
    member = consumer_member(7, {5: [0], 7: [1]})
    assert consumer_commit_error(member, 7, [(T, 0), (T, 1), (T, 9), ("other", 0)]) is None


def test_a_newer_epoch_than_the_coordinators_is_stale() -> None:
    assert consumer_commit_error(consumer_member(7, {7: [0]}), 8, [(T, 0)]) == (
        Errors.STALE_MEMBER_EPOCH
    )


def test_an_older_epoch_commits_only_what_it_has_held_since_then() -> None:
    member = consumer_member(7, {5: [0], 7: [1]})
    assert consumer_commit_error(member, 5, [(T, 0)]) is None  # held since 5
    assert consumer_commit_error(member, 6, [(T, 0)]) is None  # and so since 6 too
    assert consumer_commit_error(member, 6, [(T, 1)]) == Errors.STALE_MEMBER_EPOCH  # since 7
    assert consumer_commit_error(member, 5, [(T, 2)]) == Errors.STALE_MEMBER_EPOCH  # never held
    assert consumer_commit_error(member, 5, [(T, 0), (T, 1)]) == Errors.STALE_MEMBER_EPOCH


def test_the_partitions_are_looked_at_only_for_an_older_epoch() -> None:
    def unreadable() -> object:
        raise AssertionError("the partitions were read")
        yield

    member = consumer_member(7, {7: [0]})
    assert consumer_commit_error(member, 7, unreadable()) is None  # type: ignore[arg-type]
    assert consumer_commit_error(member, 8, unreadable()) == Errors.STALE_MEMBER_EPOCH  # type: ignore[arg-type]


def test_an_unknown_member_and_a_classic_protocol_member() -> None:
    assert consumer_commit_error(None, 3, [(T, 0)]) == Errors.UNKNOWN_MEMBER_ID
    classic = consumer_member(7, {5: [0]}, classic=ClassicMetadata(session_timeout_ms=10_000))
    # A classic-protocol member keeps the strict generation rule: no older epochs.
    assert consumer_commit_error(classic, 5, [(T, 0)]) == Errors.ILLEGAL_GENERATION
    assert consumer_commit_error(classic, 7, [(T, 0)]) is None


# --- retention ---

RETENTION = 1_000


def offset(topic: str, committed_at: int, partition: int = 0) -> CommittedOffset:
    return CommittedOffset(topic, "id-" + topic, partition, 10, commit_timestamp_ms=committed_at)


def classic_group(members: int, empty_since: int | None) -> RetainingGroup:
    return RetainingGroup(False, members, empty_since, frozenset())


def consumer_group(members: int, topics: set[str]) -> RetainingGroup:
    return RetainingGroup(True, members, None, frozenset(topics))


def test_a_classic_groups_offsets_expire_after_it_became_empty() -> None:
    assert expires_at(classic_group(2, None), offset("a", 0), RETENTION) is None
    assert expires_at(classic_group(0, 500), offset("a", 0), RETENTION) == 1_500
    assert expires_at(classic_group(0, None), offset("a", 0), RETENTION) is None


def test_a_consumer_groups_unsubscribed_offsets_expire_after_their_commit() -> None:
    group = consumer_group(1, {"a"})
    assert expires_at(group, offset("a", 100), RETENTION) is None
    assert expires_at(group, offset("b", 100), RETENTION) == 1_100


def test_plan_deletes_what_expired_and_looks_again_at_the_next_expiry() -> None:
    old, new = offset("b", 0), offset("c", 500)
    plan = plan_retention(consumer_group(1, {"a"}), [old, new, offset("a", 0)], 1_200, RETENTION)
    assert plan.expired == (old,)
    assert not plan.delete_group  # a subscribed offset never expires, and it has a member
    assert plan.next_check_ms == 1_500  # when `new` expires


def test_an_empty_group_whose_offsets_all_expired_goes() -> None:
    offsets = [offset("a", 0), offset("a", 0, partition=1)]
    plan = plan_retention(classic_group(0, 100), offsets, 2_000, RETENTION)
    assert set(plan.expired) == set(offsets) and plan.delete_group
    assert plan_retention(None, offsets, 2_000, RETENTION).delete_group  # no group item at all
    # Not while a member holds on, nor before they all expired.
    assert not plan_retention(classic_group(1, None), offsets, 2_000, RETENTION).delete_group
    assert not plan_retention(classic_group(0, 100), offsets, 1_000, RETENTION).delete_group


def test_the_next_check_is_at_most_an_hour_away() -> None:
    long = 10 * MAX_RETENTION_CHECK_INTERVAL_MS
    plan = plan_retention(classic_group(2, None), [offset("a", 0)], 0, long)
    assert plan.next_check_ms == MAX_RETENTION_CHECK_INTERVAL_MS
    plan = plan_retention(classic_group(2, None), [offset("a", 0)], 0, RETENTION)
    assert plan.next_check_ms == RETENTION
