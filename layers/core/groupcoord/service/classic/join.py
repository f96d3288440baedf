"""join-group: the two-step join, the join barrier (held, then 202), static members.

A join reads what its decision needs, asks core/classic/joining.py what to do (`plan_join`),
and writes what the plan says; a lost race reads and decides again."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ...core.acls import AclOperation
from ...core.classic.joining import (
    HandOutMemberId,
    Joiner,
    JoinFacts,
    JoinOpenBarrier,
    JoinPlan,
    Refuse,
    Renew,
    WriteJoin,
    leads_a_rebalance,
    needs_instance_owner,
    needs_voters,
    plan_join,
    reads_member,
    replaced_member_id,
    with_resumed_timers,
)
from ...core.classic.model import (
    EMPTY,
    PREPARING_REBALANCE,
    ClassicGroup,
    ClassicMember,
)
from ...core.classic.rules import check_join_request
from ...core.migration import CONSUMER_PROTOCOL_TYPE, named_topics
from ...errors import Errors
from ...models.classic import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from ...store.classic.transition import ClassicTransition
from ...store.errors import ConditionFailed, Conflict
from ..classic_group import NotClassic, commit, load, settle
from ..consumer.classic_members import is_consumer_group_with_members, mixed_join
from ..context import ApiContext
from ..handlers_types import Accepted
from ..kinesis.sync import sync_stale_named
from ..races import DecideAgain, GroupBusy, retry_on_race
from ..refusals import group_refusal, may_describe_topics
from .common import is_empty_consumer_group, replace_empty_consumer_group, retry_after_ms, wait_for


def _error(
    request: JoinGroupRequest, error: Errors, member_id: str | None = None
) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=error,
        member_id=request.member_id if member_id is None else member_id,
        protocol_type=None,
    )


def new_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


@dataclass(frozen=True)
class Registered:
    """A join is recorded: the member waits for `generation`; `group` is the group as the
    registration left it (read consistently or written)."""

    member_id: str
    generation: int
    group: ClassicGroup


def join_group(request: JoinGroupRequest, ctx: ApiContext) -> JoinGroupResponse | Accepted:
    # Kafka checks READ on the group before the coordinator validates or reads anything.
    refused = group_refusal(ctx, AclOperation.READ, request.group_id, JoinGroupResponse)
    if refused is not None:
        return refused
    # Beyond Kafka, whose coordinator never reads a classic subscription: ours does (it assigns
    # in a consumer group, and tells a group of its topics' changes), so a subscription may
    # name only topics the caller may DESCRIBE, as in consumer-group-heartbeat (29).
    if request.protocol_type == CONSUMER_PROTOCOL_TYPE and ctx.caller.checked:
        named = named_topics((p.name, p.metadata) for p in request.protocols)
        if not may_describe_topics(ctx, named):
            return _error(request, Errors.TOPIC_AUTHORIZATION_FAILED)
    return _join(request, ctx)


def _join(request: JoinGroupRequest, ctx: ApiContext) -> JoinGroupResponse | Accepted:
    names = [p.name for p in request.protocols]
    refusal = check_join_request(
        request.group_id, request.session_timeout_ms, request.protocol_type, names, ctx.settings
    )
    if refusal is not None:
        return _error(request, refusal)
    if request.group_instance_id == "":
        return _error(request, Errors.INVALID_REQUEST)
    try:
        outcome = _register(request, ctx)
    except NotClassic as other:
        if is_consumer_group_with_members(other.found):
            # A classic-protocol member of a consumer group (a mixed group).
            answer = mixed_join(request, ctx, new_member_id)
            # None: this join downgraded the group (a static replacement): join it as classic.
            return _join(request, ctx) if answer is None else answer
        return _error(request, Errors.GROUP_ID_NOT_FOUND)
    except GroupBusy:
        return _error(request, Errors.REBALANCE_IN_PROGRESS)
    if isinstance(outcome, JoinGroupResponse):
        return outcome
    try:
        return _respond_when_joined(request, ctx, outcome)
    except GroupBusy:  # e.g. upgraded to a consumer group meanwhile: rejoin
        return _error(request, Errors.REBALANCE_IN_PROGRESS, member_id=outcome.member_id)


def _register(request: JoinGroupRequest, ctx: ApiContext) -> JoinGroupResponse | Registered:
    """Record the join; returns a final response or the registration."""
    return retry_on_race(ctx.clock, lambda _: _register_once(request, ctx))


def _register_once(request: JoinGroupRequest, ctx: ApiContext) -> JoinGroupResponse | Registered:
    now = ctx.clock.now_ms()
    try:
        group = load(ctx.store, request.group_id)
    except NotClassic as other:
        # An Empty consumer group is replaced by a new member's join (whatever the
        # migration policy); a known member id, or a group with members, is not ours.
        if request.member_id or not is_empty_consumer_group(other.found):
            raise
        replace_empty_consumer_group(ctx.store, other.found, now)
        raise Conflict(request.group_id) from None  # replaced: decide again on what is there
    if group is None:
        # Created by this join if the plan writes it (a member id it names is unknown: 25).
        group = ClassicGroup(
            group_id=request.group_id,
            member_shards=ctx.settings.member_shards,
            created_at_ms=now,
            empty_since_ms=now,
        )
        expected: int | None = None
    else:
        group = settle(ctx.store, group, now)
        expected = group.version
    facts = _read_facts(request, ctx, group, expected is not None, now)
    joiner = Joiner(
        request,
        ctx.client_id,
        ctx.client_host,
        principal=ctx.caller.principal,
        owners_enforced=ctx.caller.bound_to_own_members,
    )
    # A fresh id for a new member, drawn whether or not the plan hands one out.
    plan = plan_join(joiner, facts, now, ctx.settings, new_member_id(ctx.client_id))
    if _synced_new_shards(request, ctx, group, plan, now):
        raise DecideAgain()  # the sync told the group: decide on the group as it is now
    return _carry_out(request, ctx, group, expected, plan, now)


def _synced_new_shards(
    request: JoinGroupRequest, ctx: ApiContext, group: ClassicGroup, plan: JoinPlan, now: int
) -> bool:
    """The lazy shard sync of a classic group (docs/kinesis.md): when its leader joins a
    rebalance, the Kinesis-backed topics of the group's and the leader's subscriptions whose
    last sync is older than groupcoord.kinesis.shard.sync.interval.ms are synced, so that the
    leader's metadata lists the shards a reshard added. Whether a registry changed."""
    if request.protocol_type != CONSUMER_PROTOCOL_TYPE or not leads_a_rebalance(group, plan):
        return False
    named = named_topics((p.name, p.metadata) for p in request.protocols)
    return sync_stale_named(ctx.store, named | set(group.subscribed_topics), now)


def _read_facts(
    request: JoinGroupRequest, ctx: ApiContext, group: ClassicGroup, exists: bool, now: int
) -> JoinFacts:
    """Read what the join's decision looks at, and nothing else (core/classic/joining.py says
    which reads it needs)."""
    groups = ctx.store.classic
    existing = groups.member(group, request.member_id) if reads_member(request, exists) else None
    owner = None
    if needs_instance_owner(request, exists, existing, now):
        owner = groups.instance_owner(group.group_id, request.group_instance_id or "")
    replaced_id = replaced_member_id(request, owner)
    old = groups.member(group, replaced_id) if replaced_id is not None else None
    if old is None:
        return JoinFacts(group, exists, existing=existing, instance_owner=owner)
    inherited = groups.with_payload(group, old)
    voters = None
    if needs_voters(request, group, old):
        voters = tuple(groups.members(group, payloads=False))
    return JoinFacts(
        group,
        exists,
        existing=existing,
        instance_owner=owner,
        old_static=old,
        inherited_assignment=inherited.assignment,
        inherited_assignment_generation=inherited.assignment_generation,
        voters=voters,
    )


def _carry_out(
    request: JoinGroupRequest,
    ctx: ApiContext,
    read: ClassicGroup,
    expected: int | None,
    plan: JoinPlan,
    now: int,
) -> JoinGroupResponse | Registered:
    """Write what the plan says; Conflict when the group (or the member) moved meanwhile."""
    groups = ctx.store.classic
    if isinstance(plan, Refuse):
        return _error(request, plan.error, member_id=plan.member_id)
    if isinstance(plan, HandOutMemberId):
        transition = ClassicTransition(
            group=plan.group, expected_version=expected, put_members=[plan.member]
        )
        commit(ctx.store, read, transition)
        return _error(request, Errors.MEMBER_ID_REQUIRED, member_id=plan.member.member_id)
    if isinstance(plan, Renew):
        try:
            groups.renew_session(read, plan.member_id, plan.session_deadline_ms)
        except ConditionFailed:  # removed meanwhile: decide again on fresh state
            raise Conflict(read.group_id) from None
        return Registered(plan.member_id, plan.generation, read)
    if isinstance(plan, JoinOpenBarrier):
        # Its own item and its shard's join counter are written, never the group item (no
        # hot key; store/classic/).
        try:
            groups.register_join(read, plan.member, new_metadata=plan.new_metadata)
        except ConditionFailed:  # removed, or the barrier moved on: decide again
            raise Conflict(read.group_id) from None
        settled = settle(ctx.store, read, now, count_joins=True)
        return Registered(plan.member.member_id, plan.generation, settled)
    return _write_join(ctx, read, expected, plan, now)


def _write_join(
    ctx: ApiContext, read: ClassicGroup, expected: int | None, plan: WriteJoin, now: int
) -> JoinGroupResponse | Registered:
    """Commit the join with the group item; then answer at once, or settle and register."""
    group = plan.group
    if plan.resumes_timers:
        group = with_resumed_timers(plan, ctx.store.classic.members(read, payloads=False), now)
    transition = ClassicTransition(
        group=group,
        expected_version=expected,
        put_members=[plan.member],
        put_payloads=list(plan.put_payloads),
        delete_members=list(plan.delete_members),
        put_instances=dict(plan.put_instances),
        join_counts=list(plan.join_counts),
    )
    committed = commit(ctx.store, read, transition)
    if plan.respond_now:
        return _response(ctx, committed, plan.member, skip_assignment=plan.skip_assignment)
    if plan.settle_after:
        committed = settle(ctx.store, committed, now, count_joins=True)
    return Registered(plan.member_id, plan.generation, committed)


def _respond_when_joined(
    request: JoinGroupRequest, ctx: ApiContext, registered: Registered
) -> JoinGroupResponse | Accepted:
    member_id, generation = registered.member_id, registered.generation

    def done(group: ClassicGroup) -> bool:
        return group.generation >= generation or group.state == EMPTY

    group = wait_for(ctx, request.group_id, done, registered.group)
    if group is None:
        return Accepted(member_id=member_id, retry_after_ms=retry_after_ms(ctx, registered.group))
    if group.state == EMPTY:
        return _error(request, Errors.UNKNOWN_MEMBER_ID, member_id=member_id)
    if group.generation != generation or group.state == PREPARING_REBALANCE:
        # The group moved on (another rebalance started): rejoin.
        return _error(request, Errors.REBALANCE_IN_PROGRESS, member_id=member_id)
    # Kafka restarts a member's session timer when it answers its join: the time spent at
    # the barrier (and in delivering this answer) must not count against the session.
    try:
        member = ctx.store.classic.restart_session(group, member_id, ctx.clock.now_ms())
    except ConditionFailed:  # not (or no longer) a member
        return _error(request, Errors.UNKNOWN_MEMBER_ID, member_id=member_id)
    return _response(ctx, group, member)


def _response(
    ctx: ApiContext, group: ClassicGroup, member: ClassicMember, skip_assignment: bool = False
) -> JoinGroupResponse:
    members: list[JoinGroupResponseMember] = []
    if group.leader == member.member_id:
        members = [
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                metadata=m.metadata_for(group.protocol_name),
            )
            for m in sorted(
                ctx.store.classic.members(group, payloads=True),
                key=lambda m: (m.joined_at_ms, m.member_id),
            )
            if not m.pending and m.joined_generation == group.generation
        ]
    return JoinGroupResponse(
        generation_id=group.generation,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader=group.leader or "",
        skip_assignment=skip_assignment,
        member_id=member.member_id,
        members=members,
        heartbeat_interval_ms=member.heartbeat_interval_ms,
    )
