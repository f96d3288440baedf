"""The member-based families' shared decisions (core/modern/): the static identity rule and
the expiry plan, each held against both families' rules."""

from __future__ import annotations

from groupcoord.core.consumer.expiry import ConsumerExpiry
from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.consumer.model import ConsumerGroup
from groupcoord.core.consumer.reconciliation import MemberAssignment
from groupcoord.core.modern.expiry import is_due, lease_until, plan_expiry
from groupcoord.core.modern.static import check_identity, needs_instance_owner
from groupcoord.core.streams.expiry import StreamsExpiry
from groupcoord.core.streams.group import StreamsGroup
from groupcoord.core.streams.member import Endpoint, StreamsGroupMember
from groupcoord.errors import Errors

NOW = 1_000_000


def consumer(member_id: str, deadline: int, instance_id: str | None = None) -> ConsumerGroupMember:
    assignment = MemberAssignment(epoch=3)
    return ConsumerGroupMember(
        member_id, instance_id=instance_id, assignment=assignment, session_deadline=deadline
    )


# --- the static identity rule (25, 82) ---


def test_a_known_member_passes_and_an_unknown_one_is_25() -> None:
    known = consumer("m", NOW)
    assert not needs_instance_owner(None, known)
    assert check_identity("g", "m", None, known, None) is None
    refused = check_identity("g", "m", None, None, None)
    assert refused is not None and refused.error == Errors.UNKNOWN_MEMBER_ID
    assert "not a member of group g" in refused.message


def test_a_static_member_is_checked_against_who_holds_its_instance() -> None:
    held = consumer("m", NOW, instance_id="i")
    assert not needs_instance_owner("i", held)  # it holds the instance it names
    assert check_identity("g", "m", "i", held, None) is None
    assert needs_instance_owner("i", None)
    unknown = check_identity("g", "m", "i", None, None)
    assert unknown is not None and unknown.error == Errors.UNKNOWN_MEMBER_ID
    assert unknown.message == "Instance id i is unknown."
    fenced = check_identity("g", "m", "i", None, "m2")
    assert fenced is not None and fenced.error == Errors.FENCED_INSTANCE_ID
    gone = check_identity("g", "m", "i", None, "m")  # its claim, its member gone
    assert gone is not None and gone.error == Errors.UNKNOWN_MEMBER_ID


# --- the expiry plan ---


def test_a_check_that_finds_nobody_overdue_writes_the_next_deadline() -> None:
    group = ConsumerGroup("g", member_count=3, group_epoch=3, target_epoch=3, deadline=NOW)
    members = [consumer("a", NOW + 10), consumer("b", NOW + 5)]
    assert is_due(group, NOW) and not is_due(group, NOW - 1)
    plan = plan_expiry(group, members, NOW, ConsumerExpiry(refresh_ms=1_000, chunk=49))
    assert plan.expired == ()
    assert plan.group.deadline == NOW + 5
    assert plan.group.member_count == 2  # recounted from the members read
    assert plan.group.group_epoch == 3


def test_overdue_members_are_removed_a_transactions_worth_at_a_time() -> None:
    group = StreamsGroup("g", member_count=4, group_epoch=5, target_epoch=5, deadline=NOW)
    members = [
        StreamsGroupMember("a", session_deadline=NOW - 2, user_endpoint=Endpoint("h", 1)),
        StreamsGroupMember("b", session_deadline=NOW - 1),
        StreamsGroupMember("c", session_deadline=NOW - 1),
        StreamsGroupMember("d", session_deadline=NOW + 9),
    ]
    plan = plan_expiry(group, members, NOW, StreamsExpiry(chunk=2))
    assert [m.member_id for m in plan.expired] == ["a", "b"]
    assert [m.member_id for m in plan.remaining] == ["c", "d"]
    assert plan.group.member_count == 2 and plan.group.group_epoch == 6
    assert plan.group.deadline == NOW  # "c" is left for the next check, at once
    assert plan.group.endpoint_epoch == 1  # "a" had an endpoint
    assert plan.group.target_epoch == 5


def test_removing_the_last_members_installs_the_empty_target() -> None:
    group = ConsumerGroup("g", member_count=1, group_epoch=3, target_epoch=3, deadline=NOW)
    plan = plan_expiry(
        group, [consumer("a", NOW - 1)], NOW, ConsumerExpiry(refresh_ms=1_000, chunk=49)
    )
    assert plan.group.member_count == 0
    assert plan.group.group_epoch == plan.group.target_epoch == 4
    assert plan.group.deadline is None


def test_only_a_big_groups_check_is_claimed() -> None:
    assert lease_until(ConsumerGroup("g", member_count=10), NOW) is None
    assert lease_until(ConsumerGroup("g", member_count=100), NOW) == NOW + 2_000 + 400


# --- the group both families extend (core/modern/model.py) ---


def test_a_membership_change_is_a_new_group_epoch_in_both_families() -> None:
    for group in (ConsumerGroup("g", group_epoch=3), StreamsGroup("g", group_epoch=3)):
        joined = group.with_members(1)
        assert type(joined) is type(group)
        assert (joined.group_epoch, joined.member_count, joined.state) == (4, 1, "Assigning")
        emptied = joined.with_members(-1)
        assert (emptied.group_epoch, emptied.member_count, emptied.state) == (5, 0, "Empty")


def test_a_streams_shutdown_request_lasts_until_the_group_empties() -> None:
    asked = StreamsGroup("g", member_count=2, shutdown_requested_by="m")
    assert asked.with_members(-1).shutdown_requested_by == "m"
    assert asked.with_members(-1).with_members(-1).shutdown_requested_by is None
