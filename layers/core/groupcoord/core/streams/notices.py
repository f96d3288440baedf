"""Whom a streams member's committed heartbeat tells over the push channel (docs/streams.md,
"Push"), pure: every other member when it first requested the application's shutdown, and,
when it released tasks, only the members whose target waits on one of them (as
core/push.release_notice_members does for the consumer protocol). A notice is a hint: a member
not told heartbeats at its interval and finds the tasks free then.

Who waits on a released task follows reconciliation's unreleased rules
(core/streams/reconciliation._Step): a task wanted as active waits on its active holder on any
process, and on its standby and warm-up holders of the member's own process; a task wanted as
standby or warm-up waits only on holders of the member's own process (they share its state
directory). So a released active tells its new active owner and the standby or warm-up of
the releaser's process that waited on it, and a released standby or warm-up tells only
members of the releaser's process.
"""

from __future__ import annotations

from collections.abc import Iterable

from .member import StreamsGroupMember
from .tasks import TasksTuple, minus, overlaps


def shutdown_first_requested(before: str | None, after: str | None) -> bool:
    """Whether this heartbeat made the first shutdown request: every other member hears
    SHUTDOWN_APPLICATION in its next heartbeat's status, so all are told."""
    return before is None and after is not None


def released_tasks(held_before: TasksTuple, held_after: TasksTuple) -> TasksTuple:
    """What the member held before its heartbeat and no longer does, role by role (a demoted
    active kept as standby released its active)."""
    return TasksTuple(
        minus(held_before.active, held_after.active),
        minus(held_before.standby, held_after.standby),
        minus(held_before.warmup, held_after.warmup),
    )


def waits_on(member: StreamsGroupMember, released: TasksTuple, releaser_process: str) -> bool:
    """Whether `member`'s target has a task it does not hold yet in that role and that the
    release may free for it."""
    held, target = member.tasks.holds, member.target
    pending = TasksTuple(
        minus(target.active, held.active),
        minus(target.standby, held.standby),
        minus(target.warmup, held.warmup),
    )
    if overlaps(pending.active, released.active):
        return True
    same_process = member.process_id == releaser_process
    return same_process and overlaps(pending.all_tasks(), released.all_tasks())


def release_notice_members(
    released: TasksTuple, members: Iterable[StreamsGroupMember], releaser: StreamsGroupMember
) -> list[str]:
    """The other members whose target waits on a task `releaser` released (waits_on). Not the
    whole group: each release then made every member heartbeat at once (and again at its
    second look), queueing the waiter's own heartbeat behind theirs."""
    if released.is_empty():
        return []
    process = releaser.process_id
    return sorted(
        m.member_id
        for m in members
        if m.member_id != releaser.member_id and waits_on(m, released, process)
    )
