"""The streams heartbeat's request checks (Kafka's throwIfStreamsGroupHeartbeatRequestIsInvalid
and throwIfStreamsGroupMemberEpochIsInvalid), and what a request reports, as core types.
Checked before anything is read: a malformed request is 42 (or 130) even for a missing group,
and creates nothing."""

from __future__ import annotations

from ...errors import Errors
from ...models.streams import StreamsGroupHeartbeatRequest, StreamsTaskIds, StreamsTaskOffset
from ..modern import members
from ..modern.refusal import Refusal
from .member import STATIC_LEAVE_EPOCH, StreamsGroupMember
from .reconciliation import is_lost_response
from .tasks import TaskId, Tasks, TasksTuple, normalize
from .topology import check_topology, from_message

TASK_LISTS = ("ActiveTasks", "StandbyTasks", "WarmupTasks")


def _invalid(message: str) -> Refusal:
    return Refusal(Errors.INVALID_REQUEST, message)


def _empty_strings(request: StreamsGroupHeartbeatRequest) -> Refusal | None:
    for value, name in (
        (request.member_id, "MemberId"),
        (request.group_id, "GroupId"),
        (request.instance_id, "InstanceId"),
        (request.rack_id, "RackId"),
        (request.process_id, "ProcessId"),
    ):
        if value == "":
            return _invalid(f"{name} can't be empty.")
    return None


def _join_checks(request: StreamsGroupHeartbeatRequest) -> Refusal | None:
    if request.rebalance_timeout_ms == -1:
        return _invalid("RebalanceTimeoutMs must be provided in first request.")
    lists = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    for tasks, name in zip(lists, TASK_LISTS, strict=True):
        if tasks is None or tasks:
            return _invalid(f"{name} must be empty when (re-)joining.")
    if request.topology is None:
        return _invalid("Topology must be non-null when (re-)joining.")
    return check_topology(from_message(request.topology))


def validate_heartbeat(request: StreamsGroupHeartbeatRequest) -> Refusal | None:
    """42 naming the field, or 130 for a topology that can never be valid."""
    refusal = _empty_strings(request)
    if refusal is not None:
        return refusal
    if request.rebalance_timeout_ms < -1:
        return _invalid("RebalanceTimeoutMs must be -1 (unchanged) or at least 0.")
    if request.member_epoch == 0:
        refusal = _join_checks(request)
        if refusal is not None:
            return refusal
    elif request.member_epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            return _invalid("InstanceId can't be null.")
    elif request.member_epoch < STATIC_LEAVE_EPOCH:
        return _invalid(
            f"MemberEpoch is {request.member_epoch}, but must be greater than or equal to -2."
        )
    lists = (request.active_tasks, request.standby_tasks, request.warmup_tasks)
    if any(t is not None for t in lists) and any(t is None for t in lists):
        return _invalid("If one task-type is non-null, all must be non-null.")
    if request.member_epoch != 0 and request.topology is not None:
        return _invalid("Topology can only be provided when (re-)joining.")
    for tasks, name in zip(lists, TASK_LISTS, strict=True):
        if tasks is not None and any(p < 0 for t in tasks for p in t.partitions):
            return _invalid(f"{name} has a negative partition.")
    return None


def check_member_epoch(
    member: StreamsGroupMember, received: int, owned: TasksTuple | None
) -> Refusal | None:
    """110 for an epoch ahead of the member's, or behind it unless it is the previous one
    with owned tasks among the assigned ones (a lost response)."""
    return members.check_member_epoch(
        "streams", member.epoch, received, lambda: is_lost_response(member.tasks, received, owned)
    )


def _tasks(entries: list[StreamsTaskIds]) -> Tasks:
    found: dict[str, set[int]] = {}
    for entry in entries:
        found.setdefault(entry.subtopology_id, set()).update(entry.partitions)
    return normalize(found)


def owned_tasks(request: StreamsGroupHeartbeatRequest) -> TasksTuple | None:
    """The tasks the member reports it owns (None: not reported, all three lists null)."""
    if request.active_tasks is None or request.standby_tasks is None:
        return None
    return TasksTuple(
        _tasks(request.active_tasks),
        _tasks(request.standby_tasks),
        _tasks(request.warmup_tasks or []),
    )


def task_offsets(entries: list[StreamsTaskOffset] | None) -> dict[TaskId, int] | None:
    if entries is None:
        return None
    return {(e.subtopology_id, e.partition): e.offset for e in entries}
