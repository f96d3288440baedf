"""When a consumer member's step reads its group's members to settle the listed state
(core/consumer/group.may_settle): at once when it reaches STABLE at the target epoch, but a
join answered STABLE in a group of more than one member waits for its acknowledgement, so that
members starting together are answered without each reading every other."""

from __future__ import annotations

from groupcoord.core.consumer.group import SETTLED_AT_ONCE_BELOW, may_settle
from groupcoord.core.consumer.reconciliation import MemberAssignment, MemberState
from groupcoord.core.modern.members import RECONCILING, STABLE

TARGET = 5
JOINING = MemberAssignment(epoch=0)
JOINED = MemberAssignment(epoch=TARGET, previous_epoch=0, assigned={"t": frozenset({0})})
MOVED = MemberAssignment(epoch=TARGET, previous_epoch=4, assigned={"t": frozenset({0})})
UNRELEASED = MemberAssignment(
    epoch=TARGET, previous_epoch=0, state=MemberState.UNRELEASED_PARTITIONS
)


def settles(
    before: MemberAssignment, after: MemberAssignment, count: int = 16, **how: bool
) -> bool:
    return may_settle(RECONCILING, count, TARGET, before, after, **how)


def test_a_join_answered_stable_settles_at_its_acknowledgement_not_its_answer() -> None:
    assert not settles(JOINING, JOINED, joining=True)
    assert settles(JOINED, JOINED, acknowledged=True)
    assert not settles(JOINED, JOINED, acknowledged=False)  # a heartbeat that reports nothing


def test_a_lone_member_settles_at_its_join_there_being_no_one_to_read() -> None:
    assert settles(JOINING, JOINED, count=1, joining=True)


def test_a_member_reaching_its_target_in_a_heartbeat_settles_at_once() -> None:
    assert settles(UNRELEASED, JOINED)  # a joiner whose partitions were released meanwhile
    assert settles(MemberAssignment(epoch=4), MOVED)  # a member moved to a new target


def test_an_acknowledgement_of_a_moved_member_reads_nothing_more() -> None:
    # It settled when it reached the target; acknowledging that adds no read.
    assert not settles(MOVED, MOVED, acknowledged=True)


def test_only_a_small_group_listed_reconciling_settles() -> None:
    assert not may_settle(STABLE, 16, TARGET, MemberAssignment(epoch=4), MOVED)
    big = SETTLED_AT_ONCE_BELOW
    assert not may_settle(RECONCILING, big, TARGET, MemberAssignment(epoch=4), MOVED)
