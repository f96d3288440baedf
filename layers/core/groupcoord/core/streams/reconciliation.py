"""Reconciliation of one streams member towards its target (Kafka's streams
CurrentAssignmentBuilder), pure.

(the member's tasks and state, its process, the target epoch and tasks, what it reports it
owns, what the other members hold) -> its next tasks and state. Like the consumer protocol's:
a member keeps what stays, revokes what moves (UNREVOKED_TASKS: same epoch, only the kept
tasks in the answer) and gets a task only once its previous holder released it
(UNRELEASED_TASKS). Streams adds roles: an active task is also unreleased while another member
of the same process holds it as standby or warm-up (they share the state directory), a role
change that depends on nobody else (active to standby, standby to warm-up and back) happens at
once, and a promotion to active keeps the standby (or warm-up) until the active is granted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from .tasks import (
    EMPTY,
    TaskId,
    Tasks,
    TasksTuple,
    contains,
    from_task_ids,
    intersect,
    minus,
    task_ids,
    union,
)


class MemberState(StrEnum):
    STABLE = "STABLE"
    UNREVOKED_TASKS = "UNREVOKED_TASKS"
    UNRELEASED_TASKS = "UNRELEASED_TASKS"


@dataclass(frozen=True)
class MemberTasks:
    """Where a member stands: its epochs, its tasks and those it must still revoke."""

    epoch: int = 0
    previous_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: TasksTuple = EMPTY
    revoking: TasksTuple = EMPTY
    # The assignment epoch of every active task held (assigned or pending revocation): the
    # epoch at which it was first granted (what offset-commit's rule compares against).
    active_epochs: Mapping[TaskId, int] = field(default_factory=dict)

    @property
    def holds(self) -> TasksTuple:
        """Tasks no other member may be given while this member is in the group."""
        return self.assigned.merge(self.revoking)

    def assignment_epoch(self, task: TaskId) -> int | None:
        """When the member got this active task (assigned or pending revocation), else None."""
        if not contains(self.holds.active, task):
            return None
        return self.active_epochs.get(task, self.epoch)


@dataclass(frozen=True)
class Holdings:
    """What the other members of the group hold (assigned or pending revocation), by task:
    the process of its active holder, the processes of its standby and warm-up holders."""

    active: Mapping[TaskId, str] = field(default_factory=dict)
    standby: Mapping[TaskId, frozenset[str]] = field(default_factory=dict)
    warmup: Mapping[TaskId, frozenset[str]] = field(default_factory=dict)


def holdings_of(others: Iterable[tuple[str, TasksTuple]]) -> Holdings:
    """The Holdings of (process id, held tasks) of every other member."""
    active: dict[TaskId, str] = {}
    standby: dict[TaskId, set[str]] = {}
    warmup: dict[TaskId, set[str]] = {}
    for process, held in others:
        for task in task_ids(held.active):
            active[task] = process
        for task in task_ids(held.standby):
            standby.setdefault(task, set()).add(process)
        for task in task_ids(held.warmup):
            warmup.setdefault(task, set()).add(process)
    return Holdings(
        active,
        {t: frozenset(p) for t, p in standby.items()},
        {t: frozenset(p) for t, p in warmup.items()},
    )


def released(owned: TasksTuple | None, revoking: TasksTuple) -> bool:
    """Whether the member reported it no longer owns any task it must revoke; a heartbeat
    without its owned tasks (null) proves nothing."""
    return owned is not None and not owned.contains_any(revoking)


def revocation_recorded(member: MemberTasks, owned: TasksTuple | None) -> MemberTasks:
    """A member whose next target is not in force yet (an install wrote it, the flip is still
    to come) does not move on, but a revocation it reports done is recorded: the client
    reports its tasks once, so a revocation not recorded now would leave the member waiting
    on itself. Its revoked tasks are released (whoever waits on them may take them) and it
    stays at its epoch with its assigned tasks, from where it reconciles once the target is
    in force."""
    if member.state is not MemberState.UNREVOKED_TASKS or not released(owned, member.revoking):
        return member
    kept = member.assigned.active
    epochs = {t: e for t, e in member.active_epochs.items() if contains(kept, t)}
    return replace(member, state=MemberState.STABLE, revoking=EMPTY, active_epochs=epochs)


def reconcile(
    member: MemberTasks,
    process_id: str,
    target_epoch: int,
    target: TasksTuple,
    owned: TasksTuple | None,
    others: Holdings,
) -> MemberTasks:
    """The member's next state (Kafka's CurrentAssignmentBuilder.build)."""
    if member.state is MemberState.STABLE and member.epoch == target_epoch:
        return member
    if member.state is MemberState.UNREVOKED_TASKS and not released(owned, member.revoking):
        return member
    step = _Step(member, process_id, target, others)
    return step.next(target_epoch, owned)


def _split(wanted: Tasks, unreleased: Callable[[TaskId], bool]) -> tuple[Tasks, bool]:
    """`wanted` without its unreleased tasks, and whether there were any."""
    free = [t for t in task_ids(wanted) if not unreleased(t)]
    pending = from_task_ids(free)
    return pending, pending != wanted


class _Step:
    """One computeNextAssignment: the difference between what the member holds and its
    target, role by role, and the role changes that need nobody else."""

    def __init__(
        self, member: MemberTasks, process_id: str, target: TasksTuple, others: Holdings
    ) -> None:
        self.member = member
        self.process = process_id
        self.target = target
        self.others = others

    # --- who holds a task the member wants (Kafka's isUnreleased*Task) ---

    def _beside(self, holders: Mapping[TaskId, frozenset[str]], task: TaskId) -> bool:
        """Another member of this process holds it in that role."""
        return self.process in holders.get(task, frozenset())

    def _active_unreleased(self, task: TaskId) -> bool:
        return (
            task in self.others.active
            or self._beside(self.others.standby, task)
            or self._beside(self.others.warmup, task)
        )

    def _standby_unreleased(self, task: TaskId) -> bool:
        return (
            self.others.active.get(task) == self.process
            or self._beside(self.others.standby, task)
            or self._beside(self.others.warmup, task)
        )

    def _warmup_unreleased(self, task: TaskId) -> bool:
        # Its own active copy too: a demoted active must be closed before a warm-up restores.
        return (
            self.others.active.get(task) == self.process
            or contains(self.member.assigned.active, task)
            or self._beside(self.others.standby, task)
            or self._beside(self.others.warmup, task)
        )

    # --- the step ---

    def next(self, target_epoch: int, owned: TasksTuple | None) -> MemberTasks:
        held, target = self.member.assigned, self.target
        kept = TasksTuple(
            intersect(held.active, target.active),
            intersect(held.standby, target.standby),
            intersect(held.warmup, target.warmup),
        )
        revoking = TasksTuple(
            minus(held.active, kept.active),
            minus(held.standby, kept.standby),
            minus(held.warmup, kept.warmup),
        )
        pend_active, wait_a = _split(minus(target.active, kept.active), self._active_unreleased)
        pend_standby, wait_s = _split(minus(target.standby, kept.standby), self._standby_unreleased)
        pend_warmup, wait_w = _split(minus(target.warmup, kept.warmup), self._warmup_unreleased)
        # Role changes that depend on nobody else take effect at once: a demoted active
        # becomes a standby (the active itself is still revoked), a standby becomes a warm-up
        # and back; a standby or warm-up promoted to active needs no revocation of its own.
        standby = union(kept.standby, intersect(pend_standby, union(held.active, held.warmup)))
        pend_standby = minus(pend_standby, union(held.active, held.warmup))
        warmup = union(kept.warmup, intersect(pend_warmup, held.standby))
        pend_warmup = minus(pend_warmup, held.standby)
        revoking = TasksTuple(
            revoking.active,
            minus(minus(revoking.standby, warmup), target.active),
            minus(minus(revoking.warmup, standby), target.active),
        )
        must_revoke = not revoking.is_empty() and not released(owned, revoking)
        # A promoted standby or warm-up stays until its active is granted in this step.
        granted = {} if must_revoke else pend_active
        standby = union(standby, minus(intersect(held.standby, target.active), granted))
        warmup = union(warmup, minus(intersect(held.warmup, target.active), granted))
        assigned = TasksTuple(kept.active, standby, warmup)
        if must_revoke:
            return self._moved(
                self.member.epoch, MemberState.UNREVOKED_TASKS, assigned, revoking, {}
            )
        pending = TasksTuple(pend_active, pend_standby, pend_warmup)
        waiting = wait_a or wait_s or wait_w
        state = MemberState.UNRELEASED_TASKS if waiting else MemberState.STABLE
        return self._moved(target_epoch, state, assigned.merge(pending), EMPTY, pend_active)

    def _moved(
        self,
        epoch: int,
        state: MemberState,
        assigned: TasksTuple,
        revoking: TasksTuple,
        granted: Tasks,
    ) -> MemberTasks:
        """The member at `epoch`: kept active tasks keep their assignment epoch, the ones
        granted now get `epoch`."""
        old = self.member.active_epochs
        held = union(assigned.active, revoking.active)
        epochs = {t: old.get(t, self.member.epoch) for t in task_ids(held)}
        for task in task_ids(granted):
            epochs[task] = epoch
        return replace(
            self.member,
            epoch=epoch,
            previous_epoch=self.member.epoch,
            state=state,
            assigned=assigned,
            revoking=revoking,
            active_epochs=epochs,
        )


def is_lost_response(member: MemberTasks, received_epoch: int, owned: TasksTuple | None) -> bool:
    """Kafka accepts the previous epoch when the owned tasks are among the assigned ones: the
    response that moved the member on may have been lost."""
    if received_epoch != member.previous_epoch or owned is None:
        return False
    assigned = member.assigned
    return (
        not minus(owned.active, assigned.active)
        and not minus(owned.standby, assigned.standby)
        and not minus(owned.warmup, assigned.warmup)
    )
