"""Who a member-based heartbeat is about, and static members' leave and takeover (Kafka's
static membership, KIP-345, as the consumer protocol and streams keep it): one identity rule
(25 unknown, 82 fenced, 111 unreleased) and generic planners over each family's member."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Protocol, TypeVar

from ...errors import Errors
from .refusal import Refusal

STATIC_LEAVE_EPOCH = -2


class Member(Protocol):
    @property
    def member_id(self) -> str: ...
    @property
    def instance_id(self) -> str | None: ...
    @property
    def epoch(self) -> int: ...


M = TypeVar("M", bound=Member)


def unknown_member(member_id: str, group_id: str) -> Refusal:
    return Refusal(
        Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
    )


def needs_instance_owner(instance_id: str | None, member: Member | None) -> bool:
    """Whether the identity check of a request (epoch != 0) must read who holds its
    instance id: it names one, and the member it names is not the one holding it."""
    return instance_id is not None and (member is None or member.instance_id != instance_id)


def check_identity(
    group_id: str,
    member_id: str,
    instance_id: str | None,
    member: Member | None,
    instance_owner: str | None,
) -> Refusal | None:
    """Kafka's member checks for epochs != 0: `member` is the member `member_id` names (None:
    none), `instance_owner` who holds `instance_id` (read when `needs_instance_owner`). An
    unknown instance is 25, one another member id holds 82, an unknown member 25."""
    if needs_instance_owner(instance_id, member):
        if instance_owner is None:
            return Refusal(Errors.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if instance_owner != member_id:
            return Refusal(
                Errors.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {instance_owner}.",
            )
    if member is None:
        return unknown_member(member_id, group_id)
    return None


class JoinRoute(Enum):
    """Whom an epoch-0 join is about."""

    TAKEOVER = "takeover"  # a static member rejoining under a new member id
    NEW = "new"  # a member the group does not know
    EXISTING = "existing"  # a member rejoining under its own id


def plan_join_route(
    member_id: str, member_known: bool, instance_owner: str | None, owner_known: bool
) -> JoinRoute:
    """`instance_owner` is the member id the request's instance id is claimed by (None: no
    instance id, or unclaimed), `owner_known` whether that member still exists (a claim a
    removed member left behind is no takeover)."""
    if instance_owner is not None and instance_owner != member_id and owner_known:
        return JoinRoute.TAKEOVER
    return JoinRoute.EXISTING if member_known else JoinRoute.NEW


@dataclass(frozen=True)
class InstanceClaim:
    """A joiner's claim on its instance id: a new claim, or, when `from_member_id` is set,
    the claim a removed member left behind, moved over to the joiner."""

    instance_id: str
    from_member_id: str | None = None


def instance_claim(
    member_id: str, instance_id: str | None, claimed_by: str | None
) -> InstanceClaim | None:
    """The claim a new member's join writes: none without an instance id or when the joiner
    already holds it; `claimed_by` is the member id the instance is claimed by (None:
    unclaimed; a claimed instance whose owner still exists is a takeover, not a new member)."""
    if instance_id is None or claimed_by == member_id:
        return None
    return InstanceClaim(instance_id, from_member_id=claimed_by)


def plan_static_takeover(
    owner: M,
    new_member_id: str,
    instance_id: str,
    now: int,
    session_ms: int,
    handover: Callable[[M], dict[str, Any]],
) -> Refusal | M:
    """A static member rejoins under `new_member_id` while `owner` holds its `instance_id`:
    refused (111) unless the owner left with the static leave epoch; then the new member id
    takes over what the owner held at epoch 0 (`handover`: the family's fields to reset)."""
    if owner.epoch != STATIC_LEAVE_EPOCH:
        return Refusal(
            Errors.UNRELEASED_INSTANCE_ID,
            f"Static member {new_member_id} with instance id {instance_id} cannot join the "
            f"group because the instance id is owned by {owner.member_id} member.",
        )
    return replace(  # type: ignore[type-var]
        owner,
        member_id=new_member_id,
        session_deadline=now + session_ms,
        version=0,
        **handover(owner),
    )


def static_leave(member: M, kept: Callable[[M], dict[str, Any]]) -> M:
    """The member after a static leave (-2): what it holds kept for its instance's return
    (`kept`: the family's held fields at the static leave epoch), its rebalance timeout
    disarmed."""
    return replace(member, rebalance_deadline=None, **kept(member))  # type: ignore[type-var]
