"""join-group: the two-step join, the join barrier (held, then 202), static members."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from ... import clock
from ...core.classic.model import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
    Protocol,
)
from ...core.classic.rules import (
    check_join_request,
    expiry_ms,
    extend_initial_delay,
    heartbeat_interval_ms,
    pending_expired,
    start_rebalance,
    supports_protocols,
    vote_protocol,
    with_member_protocols,
)
from ...errors import Errors
from ...models.classic import JoinGroupRequest, JoinGroupResponse, JoinGroupResponseMember
from ...store.classic_groups import ClassicTransition
from ...store.errors import ConditionFailed, Conflict
from ..consumer.classic_members import is_consumer_group_with_members, mixed_join
from ..context import ApiContext
from ..handlers_types import Accepted
from .common import (
    RACE_RETRIES,
    GroupBusy,
    NotClassic,
    back_off,
    commit,
    is_empty_consumer_group,
    load,
    replace_empty_consumer_group,
    resumed_timers,
    retry_after_ms,
    settle,
    wait_for,
)


def _error(
    request: JoinGroupRequest, error: Errors, member_id: str | None = None
) -> JoinGroupResponse:
    return JoinGroupResponse(
        error_code=error,
        member_id=request.member_id if member_id is None else member_id,
        protocol_type=None,
    )


def _template(
    request: JoinGroupRequest, ctx: ApiContext, member_id: str, now: int
) -> ClassicMember:
    rebalance_timeout = (
        request.session_timeout_ms
        if request.rebalance_timeout_ms < 0
        else request.rebalance_timeout_ms
    )
    expiry = expiry_ms(
        request.session_timeout_ms, request.heartbeat_frequency, request.failed_heartbeat_threshold
    )
    return ClassicMember(
        member_id=member_id,
        instance_id=request.group_instance_id,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout,
        expiry_ms=expiry,
        heartbeat_interval_ms=heartbeat_interval_ms(
            request.session_timeout_ms, request.heartbeat_frequency
        ),
        protocol_type=request.protocol_type,
        protocols=tuple(Protocol(p.name, p.metadata) for p in request.protocols),
        session_deadline_ms=now + expiry,
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
        if is_consumer_group_with_members(other.item):
            # A classic-protocol member of a consumer group (a mixed group).
            answer = mixed_join(request, ctx, new_member_id)
            # None: this join downgraded the group (a static replacement): join it as classic.
            return join_group(request, ctx) if answer is None else answer
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
    for attempt in range(RACE_RETRIES):
        now = clock.now_ms()
        try:
            group = load(ctx.store, request.group_id)
        except NotClassic as other:
            # An Empty consumer group is replaced by a new member's join (whatever the
            # migration policy); a known member id, or a group with members, is not ours.
            if request.member_id or not is_empty_consumer_group(other.item):
                raise
            try:
                replace_empty_consumer_group(ctx.store, other.item, now)
            except Conflict:
                back_off(attempt)
            continue
        if group is None:
            if request.member_id:
                return _error(request, Errors.UNKNOWN_MEMBER_ID)
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
        try:
            return _decide(request, ctx, group, expected, now)
        except Conflict:
            back_off(attempt)
    raise GroupBusy(request.group_id)


def _decide(
    request: JoinGroupRequest,
    ctx: ApiContext,
    group: ClassicGroup,
    expected: int | None,
    now: int,
) -> JoinGroupResponse | Registered:
    groups = ctx.store.classic
    read = group
    names = [p.name for p in request.protocols]
    instance = request.group_instance_id
    existing: ClassicMember | None = None
    if request.member_id:
        existing = groups.member(group, request.member_id) if expected is not None else None
        if existing is not None and pending_expired(existing, now):
            # Gone, though the group's timer check that removes it may not have run yet (it
            # can be claimed by another request, or the sweeper, still reading the members).
            existing = None
        if existing is None:
            owner = groups.instance_owner(group.group_id, instance) if instance else None
            fenced = owner is not None and owner != request.member_id
            return _error(
                request, Errors.FENCED_INSTANCE_ID if fenced else Errors.UNKNOWN_MEMBER_ID
            )
        if instance and existing.instance_id != instance:
            return _error(request, Errors.FENCED_INSTANCE_ID)
    elif instance:
        owner = groups.instance_owner(group.group_id, instance) if expected is not None else None
        if owner is not None:
            old = groups.member(group, owner)
            if old is not None:
                return _replace_static_member(request, ctx, group, old, now)
    replacing = 1 if existing is not None and not existing.pending else 0
    if not supports_protocols(group, request.protocol_type, names, replacing=replacing):
        return _error(request, Errors.INCONSISTENT_GROUP_PROTOCOL)

    if existing is None and not instance:
        # Kafka's two-step join: hand out an id, remember it as pending until it rejoins.
        if group.member_count >= ctx.settings.group_max_size:
            return _error(request, Errors.GROUP_MAX_SIZE_REACHED)
        member = replace(_template(request, ctx, new_member_id(ctx.client_id), now), pending=True)
        # A pending id lives for the session timeout of its first join.
        member = replace(member, session_deadline_ms=now + request.session_timeout_ms)
        next_check = min(
            t for t in (group.next_check_ms, member.session_deadline_ms) if t is not None
        )
        commit(
            ctx.store,
            group,
            ClassicTransition(
                group=replace(group, next_check_ms=next_check),
                expected_version=expected,
                put_members=[member],
            ),
        )
        return _error(request, Errors.MEMBER_ID_REQUIRED, member_id=member.member_id)

    is_new = existing is None or existing.pending
    member_id = existing.member_id if existing is not None else new_member_id(ctx.client_id)
    member = _template(request, ctx, member_id, now)
    if existing is not None and not existing.pending:
        # (Its assignment stays on its payload item: a join writes only the protocols there.)
        member = replace(
            member,
            joined_generation=existing.joined_generation,
            member_generation=existing.member_generation,
            joined_at_ms=existing.joined_at_ms,
            synced_generation=existing.synced_generation,
        )
    if is_new and group.member_count >= ctx.settings.group_max_size:
        return _error(request, Errors.GROUP_MAX_SIZE_REACHED)

    # Told from the digest on the member item: the metadata itself is on the payload item.
    new_metadata = (
        existing is None or existing.pending or existing.protocols_digest != member.protocols_digest
    )
    changed = new_metadata or (
        existing is not None and existing.protocol_type != member.protocol_type
    )
    if not is_new and not changed:
        # A known member that re-sends its join with unchanged metadata: after the barrier
        # closed (a poll after 202, or a follower rejoining in Stable) it gets the current
        # generation; while the barrier is open its join stays registered.
        closed = member.joined_generation == group.generation and (
            group.state == COMPLETING_REBALANCE
            or (group.state == STABLE and group.leader != member.member_id)
        )
        still_open = (
            group.state == PREPARING_REBALANCE and member.joined_generation == group.generation + 1
        )
        if closed or still_open:
            try:
                groups.renew_session(group, member_id, now + member.expiry_ms)
            except ConditionFailed:  # removed meanwhile: decide again on fresh state
                raise Conflict(group.group_id) from None
            return Registered(member_id, member.joined_generation, group)

    pending_generation = group.generation + 1
    if _joins_without_group_write(group, existing, member):
        # A known member joins the open barrier: its own item and its shard's join counter
        # are written, never the group item (no hot key; store/classic_groups.py).
        member = replace(member, joined_generation=pending_generation, joined_at_ms=now)
        try:
            groups.register_join(group, member, new_metadata=new_metadata)
        except ConditionFailed:  # removed, or the barrier moved on: decide again
            raise Conflict(group.group_id) from None
        settled = settle(ctx.store, group, now, count_joins=True)
        return Registered(member_id, pending_generation, settled)

    transition = ClassicTransition(group=group, expected_version=expected)
    if is_new:
        counts = with_member_protocols(group.protocol_counts, added=member.protocol_names)
        group = replace(
            group,
            member_count=group.member_count + 1,
            protocol_counts=counts,
            protocol_type=group.protocol_type or request.protocol_type,
            rebalance_timeout_ms=max(group.rebalance_timeout_ms, member.rebalance_timeout_ms),
        )
        if instance:
            transition.put_instances[instance] = member_id
    else:
        assert existing is not None
        counts = with_member_protocols(
            group.protocol_counts, added=member.protocol_names, removed=existing.protocol_names
        )
        group = replace(
            group,
            protocol_counts=counts,
            rebalance_timeout_ms=max(group.rebalance_timeout_ms, member.rebalance_timeout_ms),
        )
    if group.state != PREPARING_REBALANCE:
        group = start_rebalance(group, now)
    if group.initial_delay_until_ms is not None:
        group = extend_initial_delay(group, now, ctx.settings)
    pending_generation = group.generation + 1
    if member.joined_generation != pending_generation:
        transition.join_counts.append((member_id, 1))
        member = replace(member, joined_generation=pending_generation, joined_at_ms=now)
    candidates = [
        t
        for t in (
            group.next_check_ms,
            group.join_deadline_ms,
            group.initial_delay_until_ms,
            member.session_deadline_ms,
            resumed_timers(ctx.store, read, group, now, skip=member_id),
        )
        if t is not None
    ]
    group = replace(group, next_check_ms=min(candidates), empty_since_ms=None)
    transition.group = group
    transition.put_members = [member]
    if new_metadata:
        transition.put_payloads = [member]
    committed = commit(ctx.store, group, transition)
    return Registered(member_id, pending_generation, _settle_join(ctx, read, committed, now))


def _joins_without_group_write(
    group: ClassicGroup, existing: ClassicMember | None, member: ClassicMember
) -> bool:
    """A known member's join leaves the group item alone when the barrier is open (past the
    initial delay, which joins extend), and the join changes nothing the group item counts:
    its protocol names (the group's protocol counts) and its rebalance timeout (the group's
    is the largest). The joins that do change it write it, counting the join in the same
    transaction."""
    if existing is None or existing.pending or group.state != PREPARING_REBALANCE:
        return False
    if group.initial_delay_until_ms is not None:
        return False
    if existing.joined_generation >= group.pending_generation:
        return False  # joined already, now with other metadata: rewritten with the group
    return (
        set(member.protocol_names) == set(existing.protocol_names)
        and member.rebalance_timeout_ms <= group.rebalance_timeout_ms
    )


def _settle_join(
    ctx: ApiContext, read: ClassicGroup, committed: ClassicGroup, now: int
) -> ClassicGroup:
    """After a join that wrote the group item: close the barrier if that join was the last
    one. A join that started the rebalance is its only counted join so far, so the counters
    are read only when the barrier was already open (or one member is all it waits for)."""
    if read.state == PREPARING_REBALANCE or committed.member_count <= 1:
        return settle(ctx.store, committed, now, count_joins=True)
    return committed


def _replace_static_member(
    request: JoinGroupRequest,
    ctx: ApiContext,
    group: ClassicGroup,
    old: ClassicMember,
    now: int,
) -> JoinGroupResponse | Registered:
    """A static member rejoins with a new member id: it takes the old one's place (Kafka's
    updateStaticMemberThenRebalanceOrCompleteJoin). In Stable nothing rebalances unless the
    protocol the group would select with the member's new protocols differs from the current
    one: its metadata (a ConsumerProtocol subscription carries generationId and owned
    partitions, so it differs after any rebalance) is simply updated. The new member id's
    payload item inherits the old one's assignment (a sync in Stable answers it; an upgrade
    converts it), and the old payload goes with the old member item."""
    inherited = ctx.store.classic.with_payload(group, old)
    member = replace(
        _template(request, ctx, new_member_id(ctx.client_id), now),
        joined_generation=old.joined_generation,
        member_generation=old.member_generation,
        joined_at_ms=old.joined_at_ms,
        synced_generation=old.synced_generation,
        assignment=inherited.assignment,
        assignment_generation=inherited.assignment_generation,
    )
    if not supports_protocols(group, request.protocol_type, member.protocol_names, replacing=1):
        return _error(request, Errors.INCONSISTENT_GROUP_PROTOCOL)
    same_protocol = group.state == STABLE and _selects_same_protocol(ctx, group, old, member)
    counts = with_member_protocols(
        group.protocol_counts, added=member.protocol_names, removed=old.protocol_names
    )
    leader = member.member_id if group.leader == old.member_id else group.leader
    group = replace(group, protocol_counts=counts, leader=leader)
    transition = ClassicTransition(
        group=group,
        expected_version=group.version,
        delete_members=[old],
        put_instances={member.instance_id or "": member.member_id},
        put_payloads=[member],
    )
    if same_protocol:
        transition.put_members = [member]
        transition.group = replace(
            group,
            next_check_ms=min(
                t for t in (group.next_check_ms, member.session_deadline_ms) if t is not None
            ),
        )
        committed = commit(ctx.store, group, transition)
        # KIP-814: a static leader that comes back in Stable must not reassign.
        return _response(
            ctx, committed, member, skip_assignment=committed.leader == member.member_id
        )
    read = group
    if group.state != PREPARING_REBALANCE:
        group = start_rebalance(group, now)
    pending_generation = group.generation + 1
    # The new member id takes the old one's place, and its join counter (on its own shard).
    if read.awaiting_join(old):
        transition.join_counts.append((old.member_id, -1))
    transition.join_counts.append((member.member_id, 1))
    member = replace(member, joined_generation=pending_generation, joined_at_ms=now)
    candidates = [
        t
        for t in (
            group.next_check_ms,
            group.join_deadline_ms,
            member.session_deadline_ms,
            resumed_timers(ctx.store, read, group, now, skip=old.member_id),
        )
        if t is not None
    ]
    transition.group = replace(group, next_check_ms=min(candidates))
    transition.put_members = [member]
    committed = commit(ctx.store, group, transition)
    return Registered(member.member_id, pending_generation, _settle_join(ctx, read, committed, now))


def _selects_same_protocol(
    ctx: ApiContext, group: ClassicGroup, old: ClassicMember, new: ClassicMember
) -> bool:
    """Kafka's selectProtocol() with `new` in place of `old` still picks the group's protocol."""
    voters = [
        new if m.member_id == old.member_id else m
        for m in ctx.store.classic.members(group, payloads=False)
        if not m.pending
    ]
    try:
        return vote_protocol(voters) == group.protocol_name
    except ValueError:  # no protocol in common any more
        return False


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
        member = ctx.store.classic.restart_session(group, member_id, clock.now_ms())
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
