"""The consumer heartbeat's planners (core/consumer/heartbeat_rules.py): a new member, a static
member's takeover and leave, and the reconciliation of a member towards its target."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from groupcoord.core.consumer.assignment import Assignment
from groupcoord.core.consumer.group import Refusal
from groupcoord.core.consumer.heartbeat_rules import (
    InstanceClaim,
    NewMember,
    ReconcilePlan,
    needs_holdings_of_others,
    plan_new_member,
    plan_reconcile,
    plan_static_takeover,
    static_leave,
)
from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.consumer.model import ConsumerGroup
from groupcoord.core.consumer.reconciliation import MemberAssignment, MemberState
from groupcoord.errors import Errors
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest

T = "AAAAAAAAAAAAAAAAAAAAAQ"  # a topic id, as the request model requires
NOW = 1_000_000
SESSION = 45_000
REBALANCE = 30_000
STABLE = MemberState.STABLE
UNREVOKED = MemberState.UNREVOKED_PARTITIONS
UNRELEASED = MemberState.UNRELEASED_PARTITIONS


def parts(*ps: int) -> dict[str, frozenset[int]]:
    return {T: frozenset(ps)} if ps else {}


def group(**fields: Any) -> ConsumerGroup:
    """A Stable group of two members at epoch 3, its target installed."""
    defaults: dict[str, Any] = {"member_count": 2, "group_epoch": 3, "target_epoch": 3}
    return ConsumerGroup("g", **{"state": "Stable", **defaults, **fields})


def member(epoch: int, *held: int, **fields: Any) -> ConsumerGroupMember:
    """A member Stable at `epoch` holding `held`, whose target is what it holds."""
    fields.setdefault(
        "assignment", MemberAssignment(epoch=epoch, previous_epoch=epoch - 1, assigned=parts(*held))
    )
    fields.setdefault("target", parts(*held))
    fields.setdefault("target_epoch", epoch)
    fields.setdefault("rebalance_timeout_ms", REBALANCE)
    return ConsumerGroupMember("m", session_deadline=NOW - 1, **fields)


def heartbeat(epoch: int, *owned: int) -> ConsumerGroupHeartbeatRequest:
    """A heartbeat with only what changed: the owned partitions, nothing else."""
    body = {
        "groupId": "g",
        "memberId": "m",
        "memberEpoch": epoch,
        "topicPartitions": [{"topicId": T, "partitions": list(owned)}],
    }
    return ConsumerGroupHeartbeatRequest.model_validate(body)


def full(epoch: int, *owned: int) -> ConsumerGroupHeartbeatRequest:
    """A full request: every field set (a join owns nothing)."""
    owned_topics = [{"topicId": T, "partitions": list(owned)}] if owned else []
    body = {
        "groupId": "g",
        "memberId": "m",
        "memberEpoch": epoch,
        "rebalanceTimeoutMs": REBALANCE,
        "subscribedTopicNames": ["a"],
        "topicPartitions": owned_topics,
    }
    return ConsumerGroupHeartbeatRequest.model_validate(body)


def plan(
    g: ConsumerGroup,
    m: ConsumerGroupMember,
    request: ConsumerGroupHeartbeatRequest,
    held: Assignment | None = None,
    updated: ConsumerGroupMember | None = None,
) -> ReconcilePlan:
    return plan_reconcile(g, m, updated or m, request, held or {}, now=NOW, session_ms=SESSION)


# --- a new member ---


def new_member(
    g: ConsumerGroup,
    joiner: ConsumerGroupMember,
    subscribes: bool = True,
    owner: str | None = None,
    max_size: int = 10,
) -> NewMember | Refusal:
    return plan_new_member(
        g, joiner, subscribes, owner, max_size=max_size, now=NOW, session_ms=SESSION
    )


def test_a_full_group_refuses_a_new_member() -> None:
    refused = new_member(group(member_count=3), ConsumerGroupMember("m"), max_size=3)
    assert refused == Refusal(
        Errors.GROUP_MAX_SIZE_REACHED,
        "The consumer group has reached its maximum capacity of 3 members.",
    )
    admitted = new_member(group(member_count=2), ConsumerGroupMember("m"), max_size=3)
    assert isinstance(admitted, NewMember)


def test_a_subscribing_joiner_bumps_the_group_epoch() -> None:
    joined = new_member(group(), ConsumerGroupMember("m", subscribed_topic_names=("a",)))
    assert isinstance(joined, NewMember)
    assert joined.member == ConsumerGroupMember(
        "m", subscribed_topic_names=("a",), session_deadline=NOW + SESSION
    )
    assert joined.instance_claim is None
    g = joined.group
    assert (g.member_count, g.group_epoch, g.target_epoch, g.state) == (3, 4, 3, "Assigning")


def test_a_joiner_that_subscribes_to_nothing_keeps_the_group_epoch() -> None:
    joined = new_member(group(state="Reconciling"), ConsumerGroupMember("m"), subscribes=False)
    assert isinstance(joined, NewMember)
    assert (joined.group.member_count, joined.group.group_epoch) == (3, 3)
    assert joined.group.state == "Reconciling"
    # An empty group with a target is Stable with it.
    joined = new_member(group(member_count=0, state="Empty"), ConsumerGroupMember("m"), False)
    assert isinstance(joined, NewMember)
    g = joined.group
    assert (g.member_count, g.group_epoch, g.state) == (1, 3, "Stable")
    # A brand-new group has no epoch to keep: its first member starts epoch 1.
    fresh = group(member_count=0, group_epoch=0, target_epoch=0, state="Empty")
    joined = new_member(fresh, ConsumerGroupMember("m"), subscribes=False)
    assert isinstance(joined, NewMember)
    assert (joined.group.group_epoch, joined.group.state) == (1, "Assigning")


def test_the_joiners_session_lowers_a_later_group_deadline_only() -> None:
    deadline = NOW + SESSION
    for before, after in [
        (None, deadline),
        (deadline + 1, deadline),
        (deadline, deadline),
        (deadline - 1, deadline - 1),
    ]:
        joined = new_member(group(deadline=before), ConsumerGroupMember("m"))
        assert isinstance(joined, NewMember)
        assert joined.group.deadline == after


def test_a_static_joiner_claims_its_instance_or_moves_a_dangling_claim() -> None:
    static = ConsumerGroupMember("m", instance_id="i")
    joined = new_member(group(), static, owner=None)
    assert isinstance(joined, NewMember)
    assert joined.instance_claim == InstanceClaim("i")
    joined = new_member(group(), static, owner="removed")
    assert isinstance(joined, NewMember)
    assert joined.instance_claim == InstanceClaim("i", from_member_id="removed")
    # Its own claim (its member item missing): nothing to write for the instance.
    joined = new_member(group(), static, owner="m")
    assert isinstance(joined, NewMember)
    assert joined.instance_claim is None


# --- static members ---


def test_an_instance_not_released_is_not_taken_over() -> None:
    owner = replace(member(4, 0, 1), member_id="old", instance_id="i")
    refused = plan_static_takeover(owner, "new", "i", NOW, SESSION)
    assert refused == Refusal(
        Errors.UNRELEASED_INSTANCE_ID,
        "Static member new with instance id i cannot join the group because the instance id "
        "is owned by old member.",
    )


def test_a_released_instance_is_taken_over_at_epoch_0_with_its_assignment_and_target() -> None:
    owner = replace(
        static_leave(replace(member(4, 0, 1, target=parts(0, 1, 2)), instance_id="i")),
        member_id="old",
        version=7,
    )
    copy = plan_static_takeover(owner, "new", "i", NOW, SESSION)
    assert isinstance(copy, ConsumerGroupMember)
    assert (copy.member_id, copy.instance_id, copy.version) == ("new", "i", 0)
    assert (copy.epoch, copy.assignment.previous_epoch) == (0, 0)
    assert copy.assignment.assigned == parts(0, 1)
    assert (copy.target, copy.target_epoch) == (parts(0, 1, 2), 4)
    assert copy.session_deadline == NOW + SESSION


def test_a_static_leave_keeps_the_assigned_partitions_at_assignment_epoch_0() -> None:
    revoking = MemberAssignment(
        epoch=5,
        previous_epoch=4,
        state=UNREVOKED,
        assigned=parts(0, 1),
        revoking=parts(2),
        assigned_at={3: parts(0), 5: parts(1, 2)},
    )
    left = static_leave(member(5, assignment=revoking, rebalance_deadline=NOW + 5))
    assert (left.epoch, left.assignment.previous_epoch) == (-2, 4)
    assert (left.assignment.assigned, left.assignment.revoking) == (parts(0, 1), {})
    assert left.assignment.assigned_at == {0: parts(0, 1)}
    assert left.rebalance_deadline is None
    assert static_leave(member(5)).assignment.assigned_at == {}


# --- reconciliation ---


def test_what_others_hold_is_needed_only_for_target_partitions_not_held_yet() -> None:
    g = group(target_epoch=4)
    assert needs_holdings_of_others(g, member(3, 0, target=parts(0, 1), target_epoch=4))
    assert not needs_holdings_of_others(g, member(3, 0, 1, target=parts(0), target_epoch=4))
    # A target newer than the installed one (an unfinished install) is not followed yet.
    assert not needs_holdings_of_others(g, member(3, 0, target=parts(0, 1), target_epoch=5))
    left = static_leave(member(3, 0, target=parts(0, 1), target_epoch=4))
    assert not needs_holdings_of_others(g, left)


def test_a_steady_heartbeat_renews_the_session_and_sends_no_assignment() -> None:
    m = member(3, 0, 1, rebalance_deadline=NOW + 5)
    p = plan(group(), m, heartbeat(3, 0, 1))
    assert p.after is m.assignment and p.before is m.assignment
    assert p.member == replace(m, session_deadline=NOW + SESSION, rebalance_deadline=None)
    assert (p.refusal, p.lower_group_deadline_to, p.sends_assignment) == (None, None, False)
    # A full request gets the assignment whatever changed.
    assert plan(group(), m, full(3, 0, 1)).sends_assignment


def test_the_request_applied_is_the_member_written() -> None:
    m = member(3, 0)
    updated = replace(m, rack_id="r", client_id="c")
    p = plan(group(), m, heartbeat(3, 0), updated=updated)
    assert (p.member.rack_id, p.member.client_id) == ("r", "c")


def test_a_new_target_gives_free_partitions_and_counts_the_acquisition() -> None:
    m = member(3, 0, target=parts(0, 1, 2), target_epoch=4, acquired_version=6)
    p = plan(group(group_epoch=4, target_epoch=4), m, heartbeat(3, 0))
    assert (p.after.state, p.after.epoch, p.after.assigned) == (STABLE, 4, parts(0, 1, 2))
    assert p.member.acquired_version == 7
    assert p.sends_assignment


def test_partitions_others_still_hold_are_withheld() -> None:
    m = member(3, 0, target=parts(0, 1, 2), target_epoch=4)
    p = plan(group(target_epoch=4), m, heartbeat(3, 0), held=parts(2))
    assert (p.after.state, p.after.epoch, p.after.assigned) == (UNRELEASED, 4, parts(0, 1))
    assert p.member.acquired_version == 1


def test_what_others_hold_is_ignored_when_not_needed() -> None:
    # Partition 1 is back in the target while the member still has it pending revocation:
    # the member holds it, so nobody else can.
    a = MemberAssignment(
        epoch=3, previous_epoch=2, state=UNREVOKED, assigned=parts(0), revoking=parts(1)
    )
    m = member(3, assignment=a, target=parts(0, 1), target_epoch=4)
    g = group(target_epoch=4)
    assert not needs_holdings_of_others(g, m)
    p = plan(g, m, heartbeat(3, 0), held=parts(1))
    assert (p.after.state, p.after.epoch, p.after.assigned) == (STABLE, 4, parts(0, 1))
    # Its holdings did not grow: no acquisition.
    assert p.member.acquired_version == 0


def test_a_joiner_whose_target_an_unfinished_install_wrote_takes_the_epoch_in_force() -> None:
    joiner = member(0, target=parts(0), target_epoch=5, assignment=MemberAssignment())
    p = plan(group(group_epoch=5, target_epoch=4), joiner, full(0))
    assert p.after == MemberAssignment(epoch=4)
    assert p.refusal is None and p.sends_assignment
    # One that still holds partitions stays where it is until the install completes.
    holding = member(3, 0, target=parts(0, 1), target_epoch=5)
    p = plan(group(group_epoch=5, target_epoch=4), holding, heartbeat(3, 0))
    assert p.after is holding.assignment and not p.sends_assignment


def test_a_revocation_done_while_an_install_is_unfinished_is_not_lost() -> None:
    # Asked to revoke 1 (for the target of epoch 4), the member revokes it; its heartbeat
    # saying so comes while the next install (epoch 5) has written its target but not
    # flipped yet. The revocation is recorded (the partition released for whoever waits on
    # it); the member keeps its epoch and what it is assigned until that target is in force.
    a = MemberAssignment(
        epoch=3, previous_epoch=2, state=UNREVOKED, assigned=parts(0), revoking=parts(1)
    )
    m = member(3, assignment=a, target=parts(2), target_epoch=5, rebalance_deadline=NOW + 7)
    unfinished = group(group_epoch=5, target_epoch=4)
    p = plan(unfinished, m, heartbeat(3, 0))
    assert p.after == replace(a, state=STABLE, revoking={})
    assert p.member.rebalance_deadline is None
    assert p.writes and not p.sends_assignment and p.refusal is None
    # Still owning it: nothing changes.
    assert plan(unfinished, m, heartbeat(3, 0, 1)).after is a
    # The client said it once: its next heartbeats report no change (topicPartitions null).
    # Once the target is in force they move it on (before, it waited on the revocation for
    # ever: the answer carried nothing new, so the client had nothing to report).
    unchanged = ConsumerGroupHeartbeatRequest.model_validate(
        {"groupId": "g", "memberId": "m", "memberEpoch": 3}
    )
    later = plan(group(group_epoch=5, target_epoch=5), p.member, unchanged)
    assert (later.after.state, later.after.epoch) == (UNREVOKED, 3)
    assert (later.after.assigned, later.after.revoking) == ({}, parts(0))
    assert later.sends_assignment


def test_a_static_member_that_left_is_not_reconciled() -> None:
    left = static_leave(member(3, 0, target=parts(0, 1), target_epoch=4))
    p = plan(group(target_epoch=4), left, heartbeat(3, 0))
    assert p.after is left.assignment


def test_a_join_before_the_first_target_is_refused_after_the_member_is_written() -> None:
    joiner = member(0, assignment=MemberAssignment(), target_epoch=0)
    p = plan(group(group_epoch=1, target_epoch=0), joiner, full(0))
    assert p.refusal == Refusal(
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        "The group's first assignment is being computed; retry the join.",
    )
    assert p.member.session_deadline == NOW + SESSION
    assert p.lower_group_deadline_to is None
    # An epoch-0 answer to a member that did not join is no refusal.
    assert plan(group(group_epoch=1, target_epoch=0), joiner, heartbeat(2)).refusal is None


def test_asked_to_revoke_the_rebalance_timeout_starts_and_lowers_a_later_group_deadline() -> None:
    m = member(3, 0, 1, target=parts(0), target_epoch=4)
    g = group(target_epoch=4)
    p = plan(g, m, heartbeat(3, 0, 1))
    assert (p.after.state, p.after.epoch, p.after.revoking) == (UNREVOKED, 3, parts(1))
    assert p.member.rebalance_deadline == NOW + REBALANCE
    assert p.lower_group_deadline_to == NOW + REBALANCE
    assert p.sends_assignment  # the assigned partitions shrank
    later = plan(replace(g, deadline=NOW + REBALANCE + 1), m, heartbeat(3, 0, 1))
    assert later.lower_group_deadline_to == NOW + REBALANCE
    for earlier in (NOW + REBALANCE, NOW + 1):
        assert (
            plan(replace(g, deadline=earlier), m, heartbeat(3, 0, 1)).lower_group_deadline_to
            is None
        )


def test_the_rebalance_timeout_runs_on_while_revoking_and_ends_after() -> None:
    a = MemberAssignment(
        epoch=3, previous_epoch=2, state=UNREVOKED, assigned=parts(0), revoking=parts(1)
    )
    m = member(3, assignment=a, target=parts(0), target_epoch=4, rebalance_deadline=NOW + 7)
    g = group(target_epoch=4, deadline=NOW + 100)
    still = plan(g, m, heartbeat(3, 0, 1))
    assert still.after is a
    assert still.member.rebalance_deadline == NOW + 7
    assert still.lower_group_deadline_to == NOW + 7
    assert plan(replace(g, deadline=NOW + 5), m, heartbeat(3, 0, 1)).lower_group_deadline_to is None
    done = plan(g, m, heartbeat(3, 0))
    assert (done.after.state, done.after.epoch) == (STABLE, 4)
    assert done.member.rebalance_deadline is None and done.lower_group_deadline_to is None


# --- the group a heartbeat acts on, whom a join is about (plan_group_access, plan_join_route) ---


def test_the_group_a_heartbeat_acts_on() -> None:
    from groupcoord.core.consumer.heartbeat_rules import CONVERSION
    from groupcoord.core.modern.access import GroupAccess
    from groupcoord.core.modern.access import plan_group_access as access

    def plan_group_access(*found: Any) -> Any:
        return access(*found, CONVERSION)

    create, use, upgrade = GroupAccess.CREATE, GroupAccess.USE, GroupAccess.UPGRADE
    assert plan_group_access("g", None, 0, 0) is create
    assert plan_group_access("g", "classic", 0, 0) is GroupAccess.REPLACE  # an Empty one
    assert plan_group_access("g", "consumer", 3, 5) is use
    assert plan_group_access("g", "classic", 2, 0) is upgrade
    for refused in (
        plan_group_access("g", None, 0, 3),
        plan_group_access("g", "classic", 0, 1),
        plan_group_access("g", "classic", 2, 4),
        plan_group_access("g", "streams", 2, 0),
    ):
        assert not isinstance(refused, GroupAccess) and refused.error == 69


def test_whom_a_join_is_about() -> None:
    from groupcoord.core.modern.static import JoinRoute, plan_join_route

    assert plan_join_route("m2", False, "m1", True) is JoinRoute.TAKEOVER
    # A claim left behind by a removed member is no takeover: a new member, taking the claim.
    assert plan_join_route("m2", False, "m1", False) is JoinRoute.NEW
    assert plan_join_route("m1", True, "m1", True) is JoinRoute.EXISTING
    assert plan_join_route("m1", True, None, False) is JoinRoute.EXISTING
    assert plan_join_route("m1", False, None, False) is JoinRoute.NEW


def test_unseen_topic_changes_bump_the_epoch_only_when_they_matter() -> None:
    from groupcoord.core.consumer.heartbeat_rules import after_topic_changes
    from groupcoord.core.consumer.model import ASSIGNING, STABLE, ConsumerGroup

    group = ConsumerGroup(
        "g", member_count=2, group_epoch=4, target_epoch=4, state=STABLE, topic_changes=3
    )
    bumped = after_topic_changes(group, matter=True)
    assert (bumped.group_epoch, bumped.topic_changes_seen, bumped.state) == (5, 3, ASSIGNING)
    seen = after_topic_changes(group, matter=False)
    assert (seen.group_epoch, seen.topic_changes_seen, seen.state) == (4, 3, STABLE)
