"""The streams heartbeat's decisions (service/streams/heartbeat.py), pure: the group a
heartbeat acts on, what a join does with the topology, the member with the request applied,
the reconciliation step and the statuses of the answer.

No I/O, no clock: the caller passes `now` and the settings' values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from ...errors import Errors
from ...models.streams import StreamsGroupHeartbeatRequest
from ..modern import members, static
from ..modern.access import Conversion
from ..modern.refusal import Refusal
from ..session_renewal import renewed_deadline
from .configuration import StatusCode
from .group import StreamsGroup
from .member import STATIC_LEAVE_EPOCH, Endpoint, StreamsGroupMember
from .reconciliation import Holdings, MemberState, MemberTasks, reconcile, revocation_recorded
from .tasks import TasksTuple, minus
from .topology import Topology
from .validation import owned_tasks

GROUP_TYPE = "streams"

# --- the group a heartbeat acts on ---


# Kafka's getOrCreateStreamsGroup: a join replaces an empty classic group (the offline
# migration of a Kafka Streams application), a classic group with members is refused.
CONVERSION = Conversion(group_type=GROUP_TYPE, kind="streams group", upgrades_classic=False)


# --- the topology of a join ---


class TopologyStep(Enum):
    INITIALIZE = "initialize"  # the group has none: the joiner's becomes the group's
    SAME = "same"  # the group's, unchanged
    STALE = "stale"  # an older epoch: the member joins with it and hears status 0
    UPDATE = "update"  # a newer epoch: it replaces the group's (beyond Kafka 4.2)


def plan_topology(group: StreamsGroup, topology: Topology) -> TopologyStep | Refusal:
    """What a join's topology does to the group's (Kafka's maybeUpdateTopology): the same
    epoch with another topology is 131; a newer epoch replaces it in place (Kafka 4.2 answers
    42 "not supported yet": a rolling upgrade there needs a new group)."""
    if group.topology_epoch < 0:
        return TopologyStep.INITIALIZE
    if topology.epoch < group.topology_epoch:
        return TopologyStep.STALE
    if topology.epoch == group.topology_epoch:
        if topology.digest() != group.topology_digest:
            return Refusal(
                Errors.STREAMS_INVALID_TOPOLOGY_EPOCH,
                f"The topology of epoch {topology.epoch} differs from the group's topology of "
                "the same epoch; a changed topology needs a new epoch.",
            )
        return TopologyStep.SAME
    return TopologyStep.UPDATE


# --- the member with the request applied ---


def apply_request(
    member: StreamsGroupMember,
    request: StreamsGroupHeartbeatRequest,
    client_id: str,
    client_host: str,
) -> tuple[StreamsGroupMember, bool]:
    """The member with the request's non-null fields; True when what its target is computed
    from changed (process, rack, client tags, topology epoch: a new group epoch). A join
    sets the endpoint (null: none); a heartbeat's null leaves it."""
    endpoint = member.user_endpoint
    if request.user_endpoint is not None:
        endpoint = Endpoint(request.user_endpoint.host, request.user_endpoint.port)
    elif request.member_epoch == 0:
        endpoint = None
    tags = member.client_tags
    if request.client_tags is not None:
        tags = tuple(sorted((t.key, t.value) for t in request.client_tags))
    topology_epoch = member.topology_epoch
    if request.topology is not None:
        topology_epoch = request.topology.epoch
    updated = replace(
        member,
        **members.applied_fields(member, request, client_id, client_host),
        process_id=request.process_id if request.process_id is not None else member.process_id,
        user_endpoint=endpoint,
        client_tags=tags,
        topology_epoch=topology_epoch,
    )
    return updated, updated.metadata() != member.metadata()


# --- a new member ---


@dataclass(frozen=True)
class NewMember:
    member: StreamsGroupMember
    group: StreamsGroup


def plan_new_member(
    group: StreamsGroup,
    joiner: StreamsGroupMember,
    *,
    max_size: int,
    now: int,
    session_ms: int,
    initial_delay_ms: int,
) -> Refusal | NewMember:
    """A member the group does not know joins: a new group epoch. The first member of an
    empty group starts the initial rebalance delay (Kafka's streams.initial.rebalance.delay):
    targets wait until it passes, so that the members starting together share one."""
    full = members.refuse_when_full("streams", group.member_count, max_size)
    if full is not None:
        return full
    deadline = now + session_ms
    member = replace(joiner, session_deadline=deadline)
    joined = group.with_members(+1)
    # A joiner answered before its group's first target (in the initial delay, or while
    # another request installs it) takes epoch 1 (plan_reconcile): that target must come at
    # a later epoch, or the joiner would look reconciled to it already.
    joined = replace(joined, group_epoch=max(joined.group_epoch, 2))
    if group.member_count == 0 and initial_delay_ms > 0:
        joined = replace(joined, delay_until=now + initial_delay_ms)
    earliest = min(d for d in (deadline, joined.deadline, _delay(joined, now)) if d is not None)
    return NewMember(member=member, group=replace(joined, deadline=earliest))


def _delay(group: StreamsGroup, now: int) -> int | None:
    return group.delay_until if group.delay_until > now else None


def in_initial_delay(group: StreamsGroup, now: int) -> bool:
    return group.delay_until > now


# --- static members (beyond Kafka 4.2) ---


def plan_static_takeover(
    owner: StreamsGroupMember, new_member_id: str, instance_id: str, now: int, session_ms: int
) -> Refusal | StreamsGroupMember:
    """A static member rejoins under `new_member_id` while `owner` holds its `instance_id`
    (core/modern/static.py): the new member id takes over the owner's tasks and target at
    epoch 0 (its next step answers the epoch in force, the tasks keeping their assignment
    epochs). The owner's report goes with its member id: the new one has none yet."""
    return static.plan_static_takeover(
        owner, new_member_id, instance_id, now, session_ms, _handover
    )


def _handover(owner: StreamsGroupMember) -> dict[str, Any]:
    return {"tasks": replace(owner.tasks, epoch=0, previous_epoch=0), "report_digest": ""}


def static_leave(member: StreamsGroupMember) -> StreamsGroupMember:
    """The member after a static leave (-2): its tasks kept for the instance's return, those
    pending revocation released; the kept active tasks' assignment epochs reset to 0, so the
    instance's next member id may commit them whatever epoch it is at."""
    return static.static_leave(member, _kept)


def _kept(member: StreamsGroupMember) -> dict[str, Any]:
    tasks = member.tasks
    epochs = dict.fromkeys(tasks.active_epochs, 0)
    kept = {t: e for t, e in epochs.items() if t[1] in tasks.assigned.active.get(t[0], ())}
    left = replace(
        tasks,
        epoch=STATIC_LEAVE_EPOCH,
        state=MemberState.STABLE,
        revoking=TasksTuple(),
        active_epochs=kept,
    )
    return {"tasks": left}


# --- reconciliation ---


def needs_holdings_of_others(group: StreamsGroup, member: StreamsGroupMember) -> bool:
    """Whether reconciling `member` needs what other members hold: it follows the installed
    target and that target has tasks it does not hold yet."""
    if member.target_epoch > group.target_epoch or member.epoch == STATIC_LEAVE_EPOCH:
        return False
    held, target = member.tasks.holds, member.target
    return bool(
        minus(target.active, held.active)
        or minus(target.standby, held.standby)
        or minus(target.warmup, held.warmup)
    )


@dataclass(frozen=True)
class ReconcilePlan:
    """What a heartbeat that changes no membership does: write `member` when `writes`, then
    answer its epoch (and its tasks when `sends_tasks`)."""

    member: StreamsGroupMember
    before: MemberTasks
    after: MemberTasks
    sends_tasks: bool
    writes: bool
    lower_group_deadline_to: int | None = None


def plan_reconcile(
    group: StreamsGroup,
    member: StreamsGroupMember,
    updated: StreamsGroupMember,
    request: StreamsGroupHeartbeatRequest,
    others: Holdings,
    *,
    now: int,
    session_ms: int,
    renewal_slack_ms: int = 0,
) -> ReconcilePlan:
    """The next state of `member` (as read; `updated` is it with the request applied). During
    the initial delay a joiner gets the epoch in force (at least 1) and nothing yet."""
    before = member.tasks
    after = before
    if member.target_epoch <= group.target_epoch and group.target_epoch > 0:
        after = reconcile(
            before,
            updated.process_id,
            group.target_epoch,
            member.target,
            owned_tasks(request),
            others,
        )
    elif before.epoch == 0:
        after = replace(before, epoch=max(1, group.target_epoch), previous_epoch=0)
    elif member.epoch != STATIC_LEAVE_EPOCH:
        # Its next target is not in force yet: it waits, but a revocation it did is kept.
        after = revocation_recorded(before, owned_tasks(request))
    revoking = MemberState.UNREVOKED_TASKS
    rebalance_deadline = members.next_rebalance_deadline(updated, before, after, revoking, now)
    grew = not _is_within(after, before)
    new = replace(
        updated,
        tasks=after,
        rebalance_deadline=rebalance_deadline,
        acquired_version=member.acquired_version + (1 if grew else 0),
    )
    writes = new != member or (
        renewed_deadline(member.session_deadline, now, session_ms, renewal_slack_ms) is not None
    )
    if writes:
        new = replace(new, session_deadline=now + session_ms + renewal_slack_ms)
    return ReconcilePlan(
        member=new,
        before=before,
        after=after,
        sends_tasks=request.member_epoch == 0 or after.assigned != before.assigned,
        writes=writes,
        lower_group_deadline_to=members.lowers_deadline(rebalance_deadline, group.deadline),
    )


def _is_within(after: MemberTasks, before: MemberTasks) -> bool:
    a, b = after.holds, before.holds
    return not (
        minus(a.active, b.active) or minus(a.standby, b.standby) or minus(a.warmup, b.warmup)
    )


# --- the answer's statuses ---


def statuses(
    group: StreamsGroup,
    member: StreamsGroupMember,
    topology_status: tuple[StatusCode, str] | None,
    now: int,
) -> list[tuple[int, str]]:
    """Kafka's statuses of a successful answer, in its order."""
    found: list[tuple[int, str]] = []
    if group.topology_epoch >= 0 and member.topology_epoch < group.topology_epoch:
        found.append(
            (
                StatusCode.STALE_TOPOLOGY,
                f"The member's topology epoch {member.topology_epoch} is behind the group's "
                f"topology epoch {group.topology_epoch}.",
            )
        )
    if topology_status is not None:
        found.append((topology_status[0], topology_status[1]))
    if group.shutdown_requested_by is not None:
        found.append(
            (
                StatusCode.SHUTDOWN_APPLICATION,
                f"Streams group member {group.shutdown_requested_by} encountered a fatal error "
                "and requested a shutdown for the entire application.",
            )
        )
    if in_initial_delay(group, now):
        found.append(
            (
                StatusCode.ASSIGNMENT_DELAYED,
                "Assignment delayed due to the configured initial rebalance delay.",
            )
        )
    return found


def is_expired(member: StreamsGroupMember, now_ms: int) -> bool:
    """Session over, or stuck in UNREVOKED_TASKS past its rebalance timeout."""
    return members.is_overdue(member, MemberState.UNREVOKED_TASKS, now_ms)


def next_deadline(
    members: list[StreamsGroupMember], group: StreamsGroup, now_ms: int
) -> int | None:
    """When the group must next be looked at: the earliest session deadline or armed rebalance
    timeout, or the end of its initial delay."""
    deadlines = [m.session_deadline for m in members]
    deadlines += [
        m.rebalance_deadline
        for m in members
        if m.state is MemberState.UNREVOKED_TASKS and m.rebalance_deadline is not None
    ]
    if group.delay_until > now_ms:
        deadlines.append(group.delay_until)
    return min(deadlines) if deadlines else None
