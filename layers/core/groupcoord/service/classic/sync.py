"""sync-group: the leader's assignment is stored, followers wait for it (held, then 202)."""

from __future__ import annotations

from dataclasses import replace

from ...core.acls import AclOperation
from ...core.classic.identity import identity_error, needs_instance_owner
from ...core.classic.model import (
    COMPLETING_REBALANCE,
    EMPTY,
    STABLE,
    ClassicGroup,
    ClassicMember,
)
from ...core.classic.rules import next_check_ms, sync_error
from ...errors import Errors
from ...models.classic import SyncGroupRequest, SyncGroupResponse
from ...store.classic.transition import ClassicTransition, MemberUpdate
from ...store.errors import ConditionFailed, Conflict
from ..classic_group import NotClassic, commit, load, settle
from ..consumer.classic_members import is_consumer_group, mixed_sync
from ..context import ApiContext
from ..handlers_types import Accepted
from ..kinesis.lineage import stripped_assignments
from ..races import GroupBusy, retry_on_race
from ..refusals import group_refusal
from .common import retry_after_ms, wait_for


def _error(error: Errors) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=error)


def _check(
    request: SyncGroupRequest, ctx: ApiContext, group: ClassicGroup | None
) -> tuple[ClassicMember | None, Errors | None]:
    if group is None or group.state == EMPTY:
        return None, Errors.UNKNOWN_MEMBER_ID
    groups = ctx.store.classic
    member = groups.member(group, request.member_id)
    instance = request.group_instance_id
    owner = None
    if instance and needs_instance_owner(member):
        owner = groups.instance_owner(group.group_id, instance)
    error = identity_error(
        member,
        request.member_id,
        instance,
        owner,
        may_act_as=lambda m: ctx.caller.may_act_as(m.principal),
    )
    if error is None:
        error = sync_error(
            group, request.generation_id, request.protocol_type, request.protocol_name
        )
    return (None, error) if error is not None else (member, None)


def _answer(ctx: ApiContext, group: ClassicGroup, member: ClassicMember) -> SyncGroupResponse:
    # The assignment is on the member's payload item (one consistent read), written before
    # the flip to Stable that this answer was decided on.
    member = ctx.store.classic.with_payload(group, member)
    assigned = member.assignment if member.assignment_generation == group.generation else b""
    return SyncGroupResponse(
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        assignment=assigned,
    )


def sync_group(request: SyncGroupRequest, ctx: ApiContext) -> SyncGroupResponse | Accepted:
    refused = group_refusal(ctx, AclOperation.READ, request.group_id, SyncGroupResponse)
    if refused is not None:
        return refused
    if not request.group_id:
        return _error(Errors.INVALID_GROUP_ID)
    try:
        # A write that lost a race: the group or the member changed since the read.
        return retry_on_race(
            ctx.clock,
            lambda _: _sync(request, ctx),
            lost=(Conflict, ConditionFailed),
            busy=lambda: _error(Errors.REBALANCE_IN_PROGRESS),
        )
    except NotClassic as other:
        if is_consumer_group(other.found):
            return mixed_sync(request, ctx)  # a classic-protocol member of a consumer group
        return _error(Errors.UNKNOWN_MEMBER_ID)
    except GroupBusy:
        return _error(Errors.REBALANCE_IN_PROGRESS)


def _sync(request: SyncGroupRequest, ctx: ApiContext) -> SyncGroupResponse | Accepted:
    """One attempt: read the group, settle what is due, decide and write."""
    groups = ctx.store.classic
    now = ctx.clock.now_ms()
    group = load(ctx.store, request.group_id)
    if group is not None:
        group = settle(ctx.store, group, now)
    member, refusal = _check(request, ctx, group)
    if refusal is not None:
        return _error(refusal)
    assert group is not None and member is not None
    deadline = now + member.expiry_ms
    if group.state == STABLE:
        if member.synced_generation != group.generation:
            groups.mark_synced(group, member.member_id, deadline)
        else:
            groups.renew_session(group, member.member_id, deadline)
        return _answer(ctx, group, member)
    if group.state != COMPLETING_REBALANCE:
        return _error(Errors.REBALANCE_IN_PROGRESS)
    if group.leader == member.member_id:
        return _leader_sync(request, ctx, group, member, now)
    groups.mark_synced(group, member.member_id, deadline)
    return _follower_waits(request, ctx, member.member_id, group)


def _leader_sync(
    request: SyncGroupRequest,
    ctx: ApiContext,
    group: ClassicGroup,
    leader: ClassicMember,
    now: int,
) -> SyncGroupResponse:
    groups = ctx.store.classic
    everyone = groups.members(group, payloads=False)
    members = {m.member_id: m for m in everyone if not m.pending}
    assignments = [
        (a.member_id, a.assignment) for a in request.assignments if a.member_id in members
    ]
    if group.protocol_type == "consumer":
        # A Kinesis shard the group may not have yet (done, or its parents not) goes to no
        # one, whatever the leader's assignor did (docs/kinesis.md).
        assignments = stripped_assignments(
            ctx.store, group.group_id, assignments, group.created_at_ms
        )
    # Members first (idempotent), then the flip to Stable conditioned on the version read: a
    # crash in between leaves CompletingRebalance, and the leader's re-sent sync redoes it.
    groups.write_assignments(group, assignments)
    own = next((data for member_id, data in assignments if member_id == leader.member_id), b"")
    # Followers that synced first were waiting with no session timer running; in Stable their
    # timers run again, so the group's next check must account for them (else a follower that
    # dies right after the flip would be noticed only at some later deadline).
    stable = replace(group, state=STABLE)
    renewed = [
        replace(m, session_deadline_ms=now + m.expiry_ms) if m.member_id == leader.member_id else m
        for m in everyone
    ]
    transition = ClassicTransition(
        group=replace(stable, next_check_ms=next_check_ms(stable, renewed, now)),
        expected_version=group.version,
        member_updates=[
            MemberUpdate(
                leader.member_id,
                synced_generation=group.generation,
                session_deadline_ms=now + leader.expiry_ms,
            )
        ],
    )
    committed = commit(ctx.store, group, transition)
    return SyncGroupResponse(
        protocol_type=committed.protocol_type,
        protocol_name=committed.protocol_name,
        assignment=own,
    )


def _follower_waits(
    request: SyncGroupRequest, ctx: ApiContext, member_id: str, known: ClassicGroup
) -> SyncGroupResponse | Accepted:
    generation = known.generation

    def done(group: ClassicGroup) -> bool:
        return group.generation != generation or group.state != COMPLETING_REBALANCE

    group = wait_for(ctx, request.group_id, done, known)
    if group is None:
        return Accepted(member_id=member_id, retry_after_ms=retry_after_ms(ctx, known))
    if group.generation != generation:
        member = ctx.store.classic.member(group, member_id)
        return _error(Errors.ILLEGAL_GENERATION if member else Errors.UNKNOWN_MEMBER_ID)
    if group.state != STABLE:
        return _error(Errors.REBALANCE_IN_PROGRESS)
    # As Kafka does when it propagates the assignment: the session restarts with the answer.
    try:
        member = ctx.store.classic.restart_session(group, member_id, ctx.clock.now_ms())
    except ConditionFailed:  # removed meanwhile
        return _error(Errors.UNKNOWN_MEMBER_ID)
    return _answer(ctx, group, member)
