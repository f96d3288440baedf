"""The consumer-group heartbeat's decisions (service/consumer/heartbeat.py), pure: a join, a
static member's takeover and leave, and the reconciliation of a member towards its target.

The service reads the group and the members, asks these planners what to do, and writes the
plan. No I/O, no clock: the caller passes `now` and the session timeout in force.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...errors import Errors
from ...models.consumer import ConsumerGroupHeartbeatRequest
from ..lag import changed_meaningfully as lags_changed_meaningfully
from ..lag import kept as kept_lags
from ..modern import members, static
from ..modern.access import Conversion
from ..modern.refusal import Refusal
from ..modern.static import InstanceClaim, instance_claim
from ..session_renewal import renewed_deadline
from .assignment import Assignment, is_subset, minus
from .group import is_full_request, owned_partitions
from .member import STATIC_LEAVE_EPOCH, ConsumerGroupMember
from .model import ASSIGNING, EMPTY, STABLE, ConsumerGroup
from .reconciliation import MemberAssignment, MemberState, reconcile, revocation_recorded

# --- the group a heartbeat acts on ---

# Kafka's getOrMaybeCreateConsumerGroup with the protocols' migration: an epoch-0 join
# upgrades a classic group with members (core/modern/access.py).
CONVERSION = Conversion(group_type="consumer", kind="consumer group", upgrades_classic=True)


def after_topic_changes(group: ConsumerGroup, matter: bool) -> ConsumerGroup:
    """The group once it has taken in the topic changes it had not seen: a new group epoch
    (a new target due) when they change what its target is computed from, else only the
    count seen (service/consumer/install.topic_changes_matter decides `matter`)."""
    seen = replace(group, topic_changes_seen=group.topic_changes)
    if not matter:
        return seen
    return replace(
        seen,
        group_epoch=group.group_epoch + 1,
        state=ASSIGNING if group.member_count else EMPTY,
    )


# --- a new member ---


@dataclass(frozen=True)
class NewMember:
    """A join of a member the group does not know: the member and the group to write."""

    member: ConsumerGroupMember
    group: ConsumerGroup
    instance_claim: InstanceClaim | None


def plan_new_member(
    group: ConsumerGroup,
    joiner: ConsumerGroupMember,
    subscribes: bool,
    instance_owner: str | None,
    *,
    max_size: int,
    now: int,
    session_ms: int,
) -> Refusal | NewMember:
    """A new member joins `group`. `joiner` is a fresh member with the request applied,
    `subscribes` whether that gave it a subscription, `instance_owner` the member id the
    joiner's instance id is claimed by (None: unclaimed; a claimed instance whose owner
    still exists is a takeover, not a new member)."""
    full = members.refuse_when_full("consumer", group.member_count, max_size)
    if full is not None:
        return full
    deadline = now + session_ms
    member = replace(joiner, session_deadline=deadline)
    claim = instance_claim(member.member_id, member.instance_id, instance_owner)
    joined = group.with_members(+1)
    if not subscribes and group.group_epoch > 0:
        # A member that subscribes to nothing changes no target: the epoch stays (an Empty
        # group with a target is Stable with it).
        state = group.state if group.state != EMPTY else STABLE
        joined = replace(joined, group_epoch=group.group_epoch, state=state)
    if group.deadline is None or deadline < group.deadline:
        joined = replace(joined, deadline=deadline)
    return NewMember(member=member, group=joined, instance_claim=claim)


# --- static members ---


def plan_static_takeover(
    owner: ConsumerGroupMember,
    new_member_id: str,
    instance_id: str,
    now: int,
    session_ms: int,
) -> Refusal | ConsumerGroupMember:
    """A static member rejoins under `new_member_id` while `owner` holds its `instance_id`
    (core/modern/static.py): the new member id takes over the owner's assignment and target
    at epoch 0 (the request still to be applied)."""
    return static.plan_static_takeover(
        owner, new_member_id, instance_id, now, session_ms, _handover
    )


def _handover(owner: ConsumerGroupMember) -> dict[str, Any]:
    return {"assignment": replace(owner.assignment, epoch=0, previous_epoch=0)}


def static_leave(member: ConsumerGroupMember) -> ConsumerGroupMember:
    """The member after a static leave: its partitions kept for the instance's return, those
    pending revocation released. The kept partitions' assignment epochs reset to 0 (KIP-1251),
    so the instance's next member id may commit them whatever epoch it is at."""
    return static.static_leave(member, _kept)


def _kept(member: ConsumerGroupMember) -> dict[str, Any]:
    kept = member.assignment.assigned
    leaving = replace(
        member.assignment,
        epoch=STATIC_LEAVE_EPOCH,
        revoking={},
        assigned_at={0: kept} if kept else {},
    )
    return {"assignment": leaving}


# --- reconciliation ---


def _follows_target(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """The member's target is the installed one (not a newer one an unfinished install wrote)
    and the member is not a static member that left."""
    return member.target_epoch <= group.target_epoch and member.epoch != STATIC_LEAVE_EPOCH


def needs_holdings_of_others(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Whether reconciling `member` needs to know what other members still hold: it moves
    towards its target and that target has partitions it does not hold yet."""
    return _follows_target(group, member) and bool(minus(member.target, member.assignment.holds))


@dataclass(frozen=True)
class ReconcilePlan:
    """What a heartbeat that changes no membership does: write `member` (when `writes`: a
    heartbeat that changes nothing and finds the session a whole session ahead writes
    nothing, core/session_renewal.py), then answer
    `refusal` if set, else lower the group's deadline to `lower_group_deadline_to` if set and
    answer the member's epoch (and its assignment if `sends_assignment`)."""

    member: ConsumerGroupMember
    before: MemberAssignment
    after: MemberAssignment
    refusal: Refusal | None
    lower_group_deadline_to: int | None
    sends_assignment: bool
    writes: bool = True


def plan_reconcile(
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    updated: ConsumerGroupMember,
    request: ConsumerGroupHeartbeatRequest,
    held_by_others: Assignment,
    *,
    now: int,
    session_ms: int,
    renewal_slack_ms: int = 0,
) -> ReconcilePlan:
    """The next state of `member` (as read; `updated` is it with the request applied).
    `held_by_others` is what the members it waits on still hold; it is read and consulted
    only when `needs_holdings_of_others` says so. The session is renewed (to `now +
    session_ms + renewal_slack_ms`) whenever the member is written, and otherwise only when
    its deadline is less than a session away."""
    before = member.assignment
    after = before
    if _follows_target(group, member):
        held = held_by_others if needs_holdings_of_others(group, member) else {}
        after = reconcile(
            before, group.target_epoch, member.target, owned_partitions(request), held
        )
    elif before.epoch == 0 and not before.holds and group.target_epoch > 0:
        # A joiner whose target an unfinished install already wrote: it holds nothing, so it
        # takes the epoch in force (not 0, which would read as a rejoin) and waits.
        after = MemberAssignment(epoch=group.target_epoch)
    elif member.epoch != STATIC_LEAVE_EPOCH:
        # Its next target is not in force yet: it waits, but a revocation it did is kept.
        after = revocation_recorded(before, owned_partitions(request))
    revoking = MemberState.UNREVOKED_PARTITIONS
    rebalance_deadline = members.next_rebalance_deadline(updated, before, after, revoking, now)
    acquired = not is_subset(after.holds, before.holds)
    new = replace(
        updated,
        assignment=after,
        rebalance_deadline=rebalance_deadline,
        acquired_version=member.acquired_version + (1 if acquired else 0),
    )
    # Reported lags ride on a write made anyway, and force one only on a meaningful change.
    lags = kept_lags(member.lags, request.reported_lags(), after.holds)
    writes = (
        new != member
        or renewed_deadline(member.session_deadline, now, session_ms, renewal_slack_ms) is not None
        or lags_changed_meaningfully(member.lags, lags)
    )
    if writes:
        new = replace(new, session_deadline=now + session_ms + renewal_slack_ms, lags=lags)
    refusal = None
    lower_to = None
    if after.epoch == 0 and request.member_epoch == 0:
        # The group's first target is not installed yet (its installer is slow or died and its
        # lease has not run out): the member is in, but has no epoch to answer.
        refusal = Refusal(
            Errors.COORDINATOR_LOAD_IN_PROGRESS,
            "The group's first assignment is being computed; retry the join.",
        )
    else:
        lower_to = members.lowers_deadline(rebalance_deadline, group.deadline)
    return ReconcilePlan(
        member=new,
        before=before,
        after=after,
        refusal=refusal,
        lower_group_deadline_to=lower_to,
        sends_assignment=is_full_request(request) or after.assigned != before.assigned,
        writes=writes,
    )
