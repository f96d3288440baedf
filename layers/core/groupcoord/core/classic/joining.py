"""join-group's decisions as pure functions of what the service read, the request and `now`.

The service reads (the member named, the static instance's owner, the member it replaces,
the voters), asks `plan_join` what to do, and writes what the plan says. Which reads a join
needs is decided here too (`reads_member`, `needs_instance_owner`, `replaced_member_id`,
`needs_voters`): a join reads only what its decision looks at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ...errors import Errors
from ...models.classic import JoinGroupRequest
from ..ownership import may_act_as
from .identity import identity_error
from .limits import ClassicLimits
from .model import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
    Protocol,
)
from .rules import (
    expiry_ms,
    extend_initial_delay,
    heartbeat_interval_ms,
    next_check_ms,
    pending_expired,
    start_rebalance,
    supports_protocols,
    vote_protocol,
    with_member_protocols,
)


@dataclass(frozen=True)
class Joiner:
    """Who asks to join: the request and the client it came from."""

    request: JoinGroupRequest
    client_id: str = ""
    client_host: str = ""
    # Who asks (recorded on a member it creates), and whether only a member's creator may act
    # as it (the authorizer is on: core/ownership.py).
    principal: str | None = None
    owners_enforced: bool = False

    def may_act_as(self, member: ClassicMember) -> bool:
        return may_act_as(self.principal or "", member.principal, self.owners_enforced)


@dataclass(frozen=True)
class JoinFacts:
    """What the service read for one join (each read only when the helpers below ask for it)."""

    group: ClassicGroup  # settled; or a new Empty group when `exists` is False
    exists: bool  # the group item is in the table
    existing: ClassicMember | None = None  # the member the request names, as its item has it
    instance_owner: str | None = None  # the member id owning the request's static instance
    # A static member rejoining with a new member id replaces this one (as its item has it)...
    old_static: ClassicMember | None = None
    # ... whose assignment, from its payload item, the new member id inherits.
    inherited_assignment: bytes = b""
    inherited_assignment_generation: int = -1
    # The group's members (as their items have them): for a static replacement in Stable.
    voters: tuple[ClassicMember, ...] | None = None


# --- the plans ---


@dataclass(frozen=True)
class Refuse:
    """Answer `error` at once; nothing is written."""

    error: Errors
    member_id: str


@dataclass(frozen=True)
class HandOutMemberId:
    """Kafka's two-step join: write `member` (pending) and the group, answer 79 with its id."""

    group: ClassicGroup
    member: ClassicMember


@dataclass(frozen=True)
class Renew:
    """A known member re-sends an unchanged join: renew its session (its item only) and wait
    for `generation`."""

    member_id: str
    generation: int
    session_deadline_ms: int


@dataclass(frozen=True)
class JoinOpenBarrier:
    """A known member joins the open barrier: its item and its shard's join counter are
    written, never the group item; then the barrier's counted joins are checked."""

    member: ClassicMember
    new_metadata: bool  # its payload's protocols are written too
    generation: int


@dataclass(frozen=True)
class WriteJoin:
    """A join written with the group item, in one transition."""

    group: ClassicGroup  # the new state, its next check not yet lowered by resumed timers
    member: ClassicMember  # the member written (put_members)
    generation: int  # the generation the member waits for
    put_payloads: tuple[ClassicMember, ...] = ()
    put_instances: dict[str, str] = field(default_factory=dict)
    delete_members: tuple[ClassicMember, ...] = ()
    join_counts: tuple[tuple[str, int], ...] = ()
    # The group leaves CompletingRebalance: the service reads the members and lowers the next
    # check to their restarted session timers (with_resumed_timers).
    resumes_timers: bool = False
    # Settle after the commit, counting the barrier's joins: the barrier may now be complete.
    settle_after: bool = False
    # Answer now from the committed group, without waiting at a barrier (a static member
    # replaced in Stable); `skip_assignment` when it is the leader coming back.
    respond_now: bool = False
    skip_assignment: bool = False

    @property
    def member_id(self) -> str:
        return self.member.member_id


JoinPlan = Refuse | HandOutMemberId | Renew | JoinOpenBarrier | WriteJoin


# --- which reads a join needs ---


def reads_member(request: JoinGroupRequest, exists: bool) -> bool:
    """The member the request names is read when there is one to read."""
    return bool(request.member_id) and exists


def needs_instance_owner(
    request: JoinGroupRequest, exists: bool, existing: ClassicMember | None, now: int
) -> bool:
    """A static instance's owner is read to tell an unknown member (25) from a fenced one (82),
    and for a join without a member id, to find the member it replaces."""
    if not request.group_instance_id or not exists:
        return False
    if request.member_id:
        return existing is None or pending_expired(existing, now)
    return True


def replaced_member_id(request: JoinGroupRequest, instance_owner: str | None) -> str | None:
    """The member a static member rejoining without a member id would replace (read next)."""
    if request.member_id or not request.group_instance_id:
        return None
    return instance_owner


def needs_voters(
    request: JoinGroupRequest, group: ClassicGroup, old_static: ClassicMember | None
) -> bool:
    """A static replacement in Stable asks the vote whether the group's protocol stays: only
    when the replacement is not refused for its protocols first."""
    if old_static is None or group.state != STABLE:
        return False
    names = [p.name for p in request.protocols]
    return supports_protocols(group, request.protocol_type, names, replacing=1)


def leads_a_rebalance(group: ClassicGroup, plan: JoinPlan) -> bool:
    """Whether the join `plan` is the leader's joining a rebalance (or the first member's into
    an Empty group, which has no leader yet), before the barrier closes: where a classic group
    syncs its stale Kinesis-backed topics lazily. One join a rebalance, not every member's;
    and a sync that finds new shards tells the group while its barrier is open, so the topic
    change is taken into this rebalance rather than starting another."""
    if isinstance(plan, WriteJoin) and plan.respond_now:
        return False  # answered from the current generation: the leader does not assign
    if not isinstance(plan, JoinOpenBarrier | WriteJoin):
        return False
    return group.leader == plan.member.member_id or group.state == EMPTY


# --- the decisions ---


def member_template(joiner: Joiner, member_id: str, now: int) -> ClassicMember:
    """The member as the request describes it, its session starting `now`."""
    request = joiner.request
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
        client_id=joiner.client_id,
        client_host=joiner.client_host,
        principal=joiner.principal,
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


def plan_join(
    joiner: Joiner, facts: JoinFacts, now: int, settings: ClassicLimits, new_member_id: str
) -> JoinPlan:
    """What a join does, given what was read, along Kafka's lines (classicGroupJoin): a known
    member id (a pending one's rejoin included), a new static member (or the replacement of
    the instance's old member id), a new dynamic member. `new_member_id` is the id a new
    member (or a static member's replacement) gets."""
    request = joiner.request
    if request.member_id:
        return _plan_existing_member(joiner, facts, now, settings)
    if request.group_instance_id:
        if facts.old_static is not None:
            if not joiner.may_act_as(facts.old_static):  # another principal's instance
                return Refuse(Errors.GROUP_AUTHORIZATION_FAILED, request.member_id)
            return _plan_static_replacement(joiner, facts, facts.old_static, now, new_member_id)
        return _plan_new_static_member(joiner, facts, now, settings, new_member_id)
    return _plan_new_dynamic_member(joiner, facts, now, settings, new_member_id)


def _refuses_protocols(joiner: Joiner, group: ClassicGroup, replacing: int) -> Refuse | None:
    request = joiner.request
    names = [p.name for p in request.protocols]
    if not supports_protocols(group, request.protocol_type, names, replacing=replacing):
        return Refuse(Errors.INCONSISTENT_GROUP_PROTOCOL, request.member_id)
    return None


def _full(joiner: Joiner, group: ClassicGroup, settings: ClassicLimits) -> Refuse | None:
    if group.member_count >= settings.group_max_size:
        return Refuse(Errors.GROUP_MAX_SIZE_REACHED, joiner.request.member_id)
    return None


def _plan_new_dynamic_member(
    joiner: Joiner, facts: JoinFacts, now: int, settings: ClassicLimits, new_member_id: str
) -> JoinPlan:
    """Kafka's two-step join: hand out an id, remember it as pending until it rejoins."""
    group = facts.group
    refused = _refuses_protocols(joiner, group, replacing=0) or _full(joiner, group, settings)
    if refused is not None:
        return refused
    # A pending id lives for the session timeout of its first join.
    member = replace(
        member_template(joiner, new_member_id, now),
        pending=True,
        session_deadline_ms=now + joiner.request.session_timeout_ms,
    )
    next_check = min(t for t in (group.next_check_ms, member.session_deadline_ms) if t is not None)
    return HandOutMemberId(replace(group, next_check_ms=next_check), member)


def _plan_new_static_member(
    joiner: Joiner, facts: JoinFacts, now: int, settings: ClassicLimits, new_member_id: str
) -> JoinPlan:
    """A static member whose instance id the group does not know: joins at once."""
    group = facts.group
    refused = _refuses_protocols(joiner, group, replacing=0)
    if refused is not None:
        return refused
    member = member_template(joiner, new_member_id, now)
    refused = _full(joiner, group, settings)
    if refused is not None:
        return refused
    return _write_join(joiner, group, None, member, True, now, settings)


def _plan_existing_member(
    joiner: Joiner, facts: JoinFacts, now: int, settings: ClassicLimits
) -> JoinPlan:
    """A join under a member id: a pending id's rejoin (it becomes a member), or a member's."""
    request = joiner.request
    group = facts.group
    existing = facts.existing
    if existing is not None and pending_expired(existing, now):
        # Gone, though the group's timer check that removes it may not have run yet (it can
        # be claimed by another request, or the sweeper, still reading the members).
        existing = None
    # A pending id may rejoin (the two-step join), so pending counts as a member here.
    error = identity_error(
        existing,
        request.member_id,
        request.group_instance_id,
        facts.instance_owner,
        may_act_as=joiner.may_act_as,
        pending_is_member=True,
    )
    if error is not None:
        return Refuse(error, request.member_id)
    assert existing is not None
    refused = _refuses_protocols(joiner, group, replacing=0 if existing.pending else 1)
    if refused is not None:
        return refused
    member = member_template(joiner, existing.member_id, now)
    member = replace(member, principal=existing.principal or member.principal)  # its creator's
    if not existing.pending:
        # (Its assignment stays on its payload item: a join writes only the protocols there.)
        member = replace(
            member,
            joined_generation=existing.joined_generation,
            member_generation=existing.member_generation,
            joined_at_ms=existing.joined_at_ms,
            synced_generation=existing.synced_generation,
        )
    if existing.pending:
        refused = _full(joiner, group, settings)
        if refused is not None:
            return refused
    # Told from the digest on the member item: the metadata itself is on the payload item.
    new_metadata = existing.pending or existing.protocols_digest != member.protocols_digest
    changed = new_metadata or existing.protocol_type != member.protocol_type
    if not existing.pending and not changed:
        renewed = _renewal_of_unchanged_join(group, member, now)
        if renewed is not None:
            return renewed
    if _joins_without_group_write(group, existing, member):
        pending_generation = group.pending_generation
        member = replace(member, joined_generation=pending_generation, joined_at_ms=now)
        return JoinOpenBarrier(member, new_metadata, pending_generation)
    return _write_join(joiner, group, existing, member, new_metadata, now, settings)


def _renewal_of_unchanged_join(
    group: ClassicGroup, member: ClassicMember, now: int
) -> Renew | None:
    """A known member that re-sends its join with unchanged metadata: after the barrier
    closed (a poll after 202, or a follower rejoining in Stable) it gets the current
    generation; while the barrier is open its join stays registered."""
    closed = member.joined_generation == group.generation and (
        group.state == COMPLETING_REBALANCE
        or (group.state == STABLE and group.leader != member.member_id)
    )
    still_open = (
        group.state == PREPARING_REBALANCE and member.joined_generation == group.generation + 1
    )
    if closed or still_open:
        return Renew(member.member_id, member.joined_generation, now + member.expiry_ms)
    return None


def _write_join(
    joiner: Joiner,
    group: ClassicGroup,
    existing: ClassicMember | None,
    member: ClassicMember,
    new_metadata: bool,
    now: int,
    settings: ClassicLimits,
) -> WriteJoin:
    """A join written with the group item: a new member counted in, or a known member's new
    metadata or timeout; the rebalance starts (or the initial delay extends) and the join is
    counted for the barrier in the same transaction."""
    read = group
    instance = joiner.request.group_instance_id
    put_instances: dict[str, str] = {}
    is_new = existing is None or existing.pending
    timeout = max(group.rebalance_timeout_ms, member.rebalance_timeout_ms)
    if is_new:
        counts = with_member_protocols(group.protocol_counts, added=member.protocol_names)
        group = replace(
            group,
            member_count=group.member_count + 1,
            protocol_counts=counts,
            protocol_type=group.protocol_type or joiner.request.protocol_type,
            rebalance_timeout_ms=timeout,
        )
        if instance:
            put_instances[instance] = member.member_id
    else:
        assert existing is not None
        counts = with_member_protocols(
            group.protocol_counts, added=member.protocol_names, removed=existing.protocol_names
        )
        group = replace(group, protocol_counts=counts, rebalance_timeout_ms=timeout)
    if group.state != PREPARING_REBALANCE:
        group = start_rebalance(group, now)
    if group.initial_delay_until_ms is not None:
        group = extend_initial_delay(group, now, settings)
    pending_generation = group.pending_generation
    join_counts: tuple[tuple[str, int], ...] = ()
    if member.joined_generation != pending_generation:
        join_counts = ((member.member_id, 1),)
        member = replace(member, joined_generation=pending_generation, joined_at_ms=now)
    timers = (
        group.next_check_ms,
        group.join_deadline_ms,
        group.initial_delay_until_ms,
        member.session_deadline_ms,
    )
    group = replace(
        group, next_check_ms=min(t for t in timers if t is not None), empty_since_ms=None
    )
    return WriteJoin(
        group=group,
        member=member,
        generation=pending_generation,
        put_payloads=(member,) if new_metadata else (),
        put_instances=put_instances,
        join_counts=join_counts,
        resumes_timers=_leaves_completing_rebalance(read, group),
        settle_after=_settles_after(read, group),
    )


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


def _leaves_completing_rebalance(before: ClassicGroup, after: ClassicGroup) -> bool:
    return before.state == COMPLETING_REBALANCE and after.state != COMPLETING_REBALANCE


def _settles_after(before: ClassicGroup, after: ClassicGroup) -> bool:
    """A join that wrote the group item may have been the last one the barrier waited for. A
    join that started the rebalance is its only counted join so far, so the counters are worth
    reading only when the barrier was already open (or one member is all it waits for)."""
    return before.state == PREPARING_REBALANCE or after.member_count <= 1


def _plan_static_replacement(
    joiner: Joiner, facts: JoinFacts, old: ClassicMember, now: int, new_member_id: str
) -> JoinPlan:
    """A static member rejoins with a new member id: it takes the old one's place (Kafka's
    updateStaticMemberThenRebalanceOrCompleteJoin). In Stable nothing rebalances unless the
    protocol the group would select with the member's new protocols differs from the current
    one: its metadata (a ConsumerProtocol subscription carries generationId and owned
    partitions, so it differs after any rebalance) is simply updated. The new member id's
    payload item inherits the old one's assignment (a sync in Stable answers it; an upgrade
    converts it), and the old payload goes with the old member item."""
    request = joiner.request
    group = facts.group
    member = replace(
        member_template(joiner, new_member_id, now),
        joined_generation=old.joined_generation,
        member_generation=old.member_generation,
        joined_at_ms=old.joined_at_ms,
        synced_generation=old.synced_generation,
        assignment=facts.inherited_assignment,
        assignment_generation=facts.inherited_assignment_generation,
    )
    if not supports_protocols(group, request.protocol_type, member.protocol_names, replacing=1):
        return Refuse(Errors.INCONSISTENT_GROUP_PROTOCOL, request.member_id)
    same_protocol = group.state == STABLE and _selects_same_protocol(facts, group, old, member)
    counts = with_member_protocols(
        group.protocol_counts, added=member.protocol_names, removed=old.protocol_names
    )
    leader = member.member_id if group.leader == old.member_id else group.leader
    group = replace(group, protocol_counts=counts, leader=leader)
    if same_protocol:
        next_check = min(
            t for t in (group.next_check_ms, member.session_deadline_ms) if t is not None
        )
        group = replace(group, next_check_ms=next_check)
        return WriteJoin(
            group=group,
            member=member,
            generation=group.generation,
            put_payloads=(member,),
            delete_members=(old,),
            put_instances={member.instance_id or "": member.member_id},
            respond_now=True,
            # A static leader that comes back in Stable must not reassign.
            skip_assignment=group.leader == member.member_id,
        )
    read = group
    if group.state != PREPARING_REBALANCE:
        group = start_rebalance(group, now)
    pending_generation = group.pending_generation
    # The new member id takes the old one's place, and its join counter (on its own shard).
    join_counts: list[tuple[str, int]] = []
    if read.awaiting_join(old):
        join_counts.append((old.member_id, -1))
    join_counts.append((member.member_id, 1))
    payload = member
    member = replace(member, joined_generation=pending_generation, joined_at_ms=now)
    candidates = [
        t
        for t in (group.next_check_ms, group.join_deadline_ms, member.session_deadline_ms)
        if t is not None
    ]
    group = replace(group, next_check_ms=min(candidates))
    return WriteJoin(
        group=group,
        member=member,
        generation=pending_generation,
        put_payloads=(payload,),
        delete_members=(old,),
        put_instances={member.instance_id or "": member.member_id},
        join_counts=tuple(join_counts),
        resumes_timers=_leaves_completing_rebalance(read, group),
        settle_after=_settles_after(read, group),
    )


def _selects_same_protocol(
    facts: JoinFacts, group: ClassicGroup, old: ClassicMember, new: ClassicMember
) -> bool:
    """Kafka's selectProtocol() with `new` in place of `old` still picks the group's protocol."""
    assert facts.voters is not None, "a static replacement in Stable reads the voters"
    voters = [new if m.member_id == old.member_id else m for m in facts.voters if not m.pending]
    try:
        return vote_protocol(voters) == group.protocol_name
    except ValueError:  # no protocol in common any more
        return False


def with_resumed_timers(
    plan: WriteJoin, members: Sequence[ClassicMember], now: int
) -> ClassicGroup:
    """The plan's group, its next check lowered for the `members` (as read): leaving
    CompletingRebalance restarts the session timers of the members that were waiting for the
    leader's sync (next_check_ms). The joining member and the one it replaces count as the
    plan has them, not as read."""
    skip = {plan.member_id, *(m.member_id for m in plan.delete_members)}
    resumed = next_check_ms(plan.group, [m for m in members if m.member_id not in skip], now)
    candidates = [t for t in (plan.group.next_check_ms, resumed) if t is not None]
    return replace(plan.group, next_check_ms=min(candidates) if candidates else None)
