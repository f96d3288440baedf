"""What a member-based group's rules decide alike in each family, pure: the member epoch
check of a heartbeat, the group's listed state, and when a member's rebalance timeout runs
and lowers the group's next check."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, TypeVar

from ...errors import Errors
from .refusal import Refusal
from .static import STATIC_LEAVE_EPOCH

EMPTY = "Empty"
ASSIGNING = "Assigning"
RECONCILING = "Reconciling"
STABLE = "Stable"


class Member(Protocol):
    @property
    def epoch(self) -> int: ...


M = TypeVar("M", bound=Member)


def check_member_epoch(
    kind: str, member_epoch: int, received: int, lost_response: Callable[[], bool]
) -> Refusal | None:
    """110 for an epoch ahead of the member's, or behind it unless `lost_response()` (the
    previous epoch, with what it owns among what is assigned: an answer the member lost).
    `kind` names the group in the message ("consumer", "streams")."""
    if received > member_epoch:
        order = "greater"
    elif received < member_epoch and not lost_response():
        order = "smaller"
    else:
        return None
    return Refusal(
        Errors.FENCED_MEMBER_EPOCH,
        f"The {kind} group member has a {order} member epoch ({received}) than the one known "
        f"by the group coordinator ({member_epoch}). The member must abandon all its "
        "partitions and rejoin.",
    )


def listed_state(
    member_count: int,
    group_epoch: int,
    target_epoch: int,
    members: Iterable[M] | None,
    is_stable: Callable[[M], bool],
) -> str:
    """Empty, Assigning, Reconciling or Stable. Without the members, the best guess is
    Reconciling right after an install (the group's next check refines it)."""
    if member_count == 0:
        return EMPTY
    if group_epoch > target_epoch:
        return ASSIGNING
    if members is None:
        return RECONCILING
    for m in members:
        if m.epoch == STATIC_LEAVE_EPOCH:
            continue
        if m.epoch != target_epoch or not is_stable(m):
            return RECONCILING
    return STABLE


def rebalance_deadline(
    current: int | None,
    revoking_before: bool,
    revoking_after: bool,
    epoch_changed: bool,
    now: int,
    timeout_ms: int,
) -> int | None:
    """The rebalance timeout runs from when the member is asked to revoke (again, at a new
    epoch); it is over once nothing is left to revoke."""
    if not revoking_after:
        return None
    if not revoking_before or epoch_changed:
        return now + timeout_ms
    return current


class Step(Protocol):
    @property
    def epoch(self) -> int: ...
    @property
    def state(self) -> object: ...


class Timed(Protocol):
    @property
    def rebalance_deadline(self) -> int | None: ...
    @property
    def rebalance_timeout_ms(self) -> int: ...


def next_rebalance_deadline(
    updated: Timed, before: Step, after: Step, revoking: object, now: int
) -> int | None:
    """`rebalance_deadline` of a member (`updated`: it with the request applied) stepping
    from `before` to `after`; `revoking` is the family's state of a member asked to
    revoke."""
    return rebalance_deadline(
        updated.rebalance_deadline,
        before.state is revoking,
        after.state is revoking,
        before.epoch != after.epoch,
        now,
        updated.rebalance_timeout_ms,
    )


def lowers_deadline(deadline: int | None, group_deadline: int | None) -> int | None:
    """The group's next check moved earlier to a rebalance timeout `deadline`, when it is."""
    if deadline is not None and (group_deadline is None or deadline < group_deadline):
        return deadline
    return None


class Identified(Protocol):
    @property
    def instance_id(self) -> str | None: ...
    @property
    def rack_id(self) -> str | None: ...
    @property
    def rebalance_timeout_ms(self) -> int: ...


def applied_fields(
    member: Identified, request: Identified, client_id: str, client_host: str
) -> dict[str, Any]:
    """The fields every family's member takes from a heartbeat: the request's non-null
    instance id, rack and rebalance timeout (-1: unchanged), and the caller's client."""
    return {
        "instance_id": request.instance_id
        if request.instance_id is not None
        else member.instance_id,
        "rack_id": request.rack_id if request.rack_id is not None else member.rack_id,
        "rebalance_timeout_ms": (
            request.rebalance_timeout_ms
            if request.rebalance_timeout_ms != -1
            else member.rebalance_timeout_ms
        ),
        "client_id": client_id,
        "client_host": client_host,
    }


class Sessioned(Protocol):
    @property
    def session_deadline(self) -> int: ...
    @property
    def rebalance_deadline(self) -> int | None: ...
    @property
    def state(self) -> object: ...


def is_overdue(member: Sessioned, revoking: object, now_ms: int) -> bool:
    """Session over, or stuck asked to revoke (`revoking`, the family's state) past its
    rebalance timeout."""
    if member.session_deadline <= now_ms:
        return True
    deadline = member.rebalance_deadline
    return member.state is revoking and deadline is not None and deadline <= now_ms


def refuse_when_full(kind: str, member_count: int, max_size: int) -> Refusal | None:
    """81 for a new member of a group at its maximum size (`kind`: "consumer", "streams")."""
    if member_count < max_size:
        return None
    return Refusal(
        Errors.GROUP_MAX_SIZE_REACHED,
        f"The {kind} group has reached its maximum capacity of {max_size} members.",
    )
