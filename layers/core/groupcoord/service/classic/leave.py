"""leave-group: members leave (or are removed by instance id); the group rebalances."""

from __future__ import annotations

from dataclasses import replace

from ...core.acls import AclOperation
from ...core.classic.identity import identity_error, needs_instance_owner
from ...core.classic.model import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    ClassicGroup,
    ClassicMember,
)
from ...core.classic.rules import next_check_ms, remove_members, uncounted_joins
from ...errors import Errors
from ...models.classic import LeaveGroupMemberResponse, LeaveGroupRequest, LeaveGroupResponse
from ...store.classic.transition import ClassicTransition
from ..classic_group import NotClassic, commit, load, settle
from ..consumer.classic_members import is_consumer_group, mixed_leave
from ..context import ApiContext
from ..races import GroupBusy, retry_on_race
from ..refusals import group_refusal


def leave_group(request: LeaveGroupRequest, ctx: ApiContext) -> LeaveGroupResponse:
    # A refusal is the top-level error, with no member results (Kafka's getErrorResponse).
    refused = group_refusal(ctx, AclOperation.READ, request.group_id, LeaveGroupResponse)
    if refused is not None:
        return refused
    if not request.group_id:
        return LeaveGroupResponse(error_code=Errors.INVALID_GROUP_ID)
    try:
        return retry_on_race(ctx.clock, lambda _: _leave(request, ctx))
    except NotClassic as other:
        if is_consumer_group(other.found):
            return mixed_leave(request, ctx)  # classic-protocol members of a consumer group
        return _unknown(request)
    except GroupBusy:
        return LeaveGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS)


def _unknown(request: LeaveGroupRequest) -> LeaveGroupResponse:
    """A missing group: as Kafka answers it, no top-level error, 25 for every member."""
    return LeaveGroupResponse(
        members=[
            LeaveGroupMemberResponse(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=Errors.UNKNOWN_MEMBER_ID,
            )
            for m in request.members
        ],
    )


def _next_check(
    ctx: ApiContext,
    group: ClassicGroup,
    shrunk: ClassicGroup,
    leaving: dict[str, ClassicMember],
    now: int,
) -> int | None:
    """The group's next timer check after the leave. Without listing the members when a
    bound will do (no hot key: a leave must not read all 5,000): a departure only removes
    session timers, so the check read is still a lower bound of the remaining members' ones;
    a check that fires early recomputes the exact time (one claimed listing). Leaving
    CompletingRebalance resumes the timers of members that waited for the sync: those need
    the listing."""
    if group.state == COMPLETING_REBALANCE and shrunk.state != COMPLETING_REBALANCE:
        groups = ctx.store.classic
        remaining = [m for m in groups.members(group, payloads=False) if m.member_id not in leaving]
        return next_check_ms(shrunk, remaining, now)
    bounds = [t for t in (group.next_check_ms, next_check_ms(shrunk, [], now)) if t is not None]
    return min(bounds) if bounds else None


def _leaver(
    ctx: ApiContext, group: ClassicGroup, member_id: str, instance: str | None
) -> tuple[ClassicMember | None, Errors]:
    """The member one entry of a leave names (a pending id may leave too), or why not."""
    groups = ctx.store.classic
    owner = None
    if member_id:
        member = groups.member(group, member_id)
        if instance and needs_instance_owner(member, pending_is_member=True):
            owner = groups.instance_owner(group.group_id, instance)
    elif instance:
        # An admin removal of a static member by its instance id alone.
        owner = groups.instance_owner(group.group_id, instance)
        member = groups.member(group, owner) if owner else None
        if member is None:
            return None, Errors.UNKNOWN_MEMBER_ID
        member_id = member.member_id
    else:
        return None, Errors.UNKNOWN_MEMBER_ID
    error = identity_error(
        member,
        member_id,
        instance,
        owner,
        may_act_as=lambda m: ctx.caller.may_act_as(m.principal),
        pending_is_member=True,
    )
    return (None, error) if error is not None else (member, Errors.NONE)


def _leave(request: LeaveGroupRequest, ctx: ApiContext) -> LeaveGroupResponse:
    now = ctx.clock.now_ms()
    group = load(ctx.store, request.group_id)
    if group is None:
        return _unknown(request)
    group = settle(ctx.store, group, now)
    results: list[LeaveGroupMemberResponse] = []
    leaving: dict[str, ClassicMember] = {}
    for identity in request.members:
        instance = identity.group_instance_id
        member_id = identity.member_id
        member, error = _leaver(ctx, group, member_id, instance)
        if member is not None:
            leaving[member.member_id] = member
        results.append(
            LeaveGroupMemberResponse(
                member_id=member_id, group_instance_id=instance, error_code=error
            )
        )
    if leaving:
        departed = [m for m in leaving.values() if not m.pending]
        shrunk = remove_members(group, departed, now) if departed else group
        shrunk = replace(shrunk, next_check_ms=_next_check(ctx, group, shrunk, leaving, now))
        committed = commit(
            ctx.store,
            group,
            ClassicTransition(
                group=shrunk,
                expected_version=group.version,
                delete_members=list(leaving.values()),
                delete_instances=[m.instance_id for m in departed if m.instance_id],
                join_counts=[(m, -1) for m in uncounted_joins(group, departed)],
            ),
        )
        # The barrier may be complete now (a leave during a rebalance it started is not).
        settle(ctx.store, committed, now, count_joins=group.state == PREPARING_REBALANCE)
    return LeaveGroupResponse(members=results)
