"""Reconciliation of one member towards its target (Kafka's CurrentAssignmentBuilder), pure.

(member's current assignment state, target epoch and partitions, what the member reports it
owns, what other members still hold) -> the member's next assignment state. No I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from .assignment import Assignment, intersect, is_subset, minus, overlaps, union


class MemberState(StrEnum):
    STABLE = "STABLE"
    UNREVOKED_PARTITIONS = "UNREVOKED_PARTITIONS"
    UNRELEASED_PARTITIONS = "UNRELEASED_PARTITIONS"


@dataclass(frozen=True)
class MemberAssignment:
    """Where a member stands: its epochs and what it holds (assigned + pending revocation)."""

    epoch: int = 0
    previous_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    revoking: Assignment = field(default_factory=dict)
    # KIP-1251 assignment epochs: epoch -> the held partitions assigned at that epoch. A held
    # partition missing here (a record written before they were kept) counts as assigned at
    # the member epoch, as Kafka reads legacy records.
    assigned_at: dict[int, Assignment] = field(default_factory=dict)

    @property
    def holds(self) -> Assignment:
        """Partitions no other member may be given while this member is in the group."""
        return union(self.assigned, self.revoking)

    def epochs_of(self, kept: Assignment) -> dict[int, Assignment]:
        """The assignment epochs of the `kept` partitions (legacy ones: the member epoch)."""
        result: dict[int, Assignment] = {}
        covered: Assignment = {}
        for epoch, partitions in self.assigned_at.items():
            part = intersect(partitions, kept)
            if part:
                result[epoch] = union(result.get(epoch, {}), part)
                covered = union(covered, part)
        legacy = minus(kept, covered)
        if legacy:
            result[self.epoch] = union(result.get(self.epoch, {}), legacy)
        return result

    def assignment_epoch(self, topic_id: str, partition: int) -> int | None:
        """When the member got this partition (assigned or pending revocation), else None."""
        if partition not in self.holds.get(topic_id, frozenset()):
            return None
        for epoch, partitions in self.assigned_at.items():
            if partition in partitions.get(topic_id, frozenset()):
                return epoch
        return self.epoch


def owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether the member may still own some of `partitions` (null owned = unchanged)."""
    if not partitions:
        return False
    return owned is None or overlaps(partitions, owned)


def reconcile(
    member: MemberAssignment,
    target_epoch: int,
    target: Assignment,
    owned: Assignment | None,
    held_by_others: Assignment,
) -> MemberAssignment:
    """The member's next state. `held_by_others` must contain every partition of `target`
    that another member still holds (assigned or pending revocation)."""
    if member.state is MemberState.STABLE:
        if member.epoch == target_epoch:
            return member
        return _next(member, member.epoch, target_epoch, target, owned, held_by_others)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.revoking):
            return member
        # Revoked: it moves on against the latest target.
        return _next(member, member.epoch, target_epoch, target, owned, held_by_others)
    return _next(member, member.epoch, target_epoch, target, owned, held_by_others)


def revocation_recorded(member: MemberAssignment, owned: Assignment | None) -> MemberAssignment:
    """A member whose next target is not in force yet (an install wrote it, the flip is still
    to come) does not move on, but a revocation it reports done is recorded: the client
    reports what it owns once, so a revocation not recorded now would leave the member
    waiting on itself. Its revoked partitions are released (whoever waits on them may take
    them) and it stays at its epoch with what it is assigned, from where it reconciles once
    the target is in force."""
    if member.state is MemberState.UNREVOKED_PARTITIONS and not owns_any(owned, member.revoking):
        return replace(member, state=MemberState.STABLE, revoking={})
    return member


def _with_epoch(member: MemberAssignment, epoch: int, **changes: object) -> MemberAssignment:
    return replace(member, epoch=epoch, previous_epoch=member.epoch, **changes)  # type: ignore[arg-type]


def _next(
    member: MemberAssignment,
    epoch: int,
    target_epoch: int,
    target: Assignment,
    owned: Assignment | None,
    held_by_others: Assignment,
) -> MemberAssignment:
    assigned = intersect(member.assigned, target)
    revoking = minus(member.assigned, assigned)
    wanted = minus(target, assigned)
    pending = minus(wanted, held_by_others)
    unreleased = bool(intersect(wanted, held_by_others))
    if revoking and owns_any(owned, revoking):
        # Keep the epoch and ask for the revocation first; nothing new is handed out yet.
        return _with_epoch(
            member,
            epoch,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=assigned,
            revoking=revoking,
        )
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    # Kept partitions keep their assignment epoch; new ones get the epoch the member moves to.
    epochs = member.epochs_of(assigned)
    if pending:
        epochs[target_epoch] = union(epochs.get(target_epoch, {}), pending)
    return _with_epoch(
        member,
        target_epoch,
        state=state,
        assigned=union(assigned, pending),
        revoking={},
        assigned_at=epochs,
    )


def is_lost_response(
    member: MemberAssignment, received_epoch: int, owned: Assignment | None
) -> bool:
    """Kafka accepts the previous epoch when the owned partitions are a subset of the
    assigned ones: the response that moved the member on may have been lost."""
    return (
        received_epoch == member.previous_epoch
        and owned is not None
        and is_subset(owned, member.assigned)
    )
