"""Who a classic request says it is, and whether it is: the identity rule every classic API
shares (join-group, sync-group, heartbeat, leave-group, offset-commit), pure.

Kafka's order, with groupcoord's ownership rule (core/ownership.py) between: a member id the
group does not know (or knows only as pending) is 25 UNKNOWN_MEMBER_ID, or 82
FENCED_INSTANCE_ID when the request's instance id belongs to another member id; then, beyond
Kafka, a member another principal created is 30 GROUP_AUTHORIZATION_FAILED; then a member that
names an instance id other than its own is 82."""

from __future__ import annotations

from collections.abc import Callable

from ...errors import Errors
from .model import ClassicMember


def needs_instance_owner(member: ClassicMember | None, *, pending_is_member: bool = False) -> bool:
    """Whether the rule looks at who owns the request's instance id (a read): only for a
    member id the group does not know."""
    return member is None or (member.pending and not pending_is_member)


def identity_error(
    member: ClassicMember | None,
    member_id: str,
    instance_id: str | None,
    instance_owner: str | None,
    *,
    may_act_as: Callable[[ClassicMember], bool] | None = None,
    pending_is_member: bool = False,
) -> Errors | None:
    """Why the request is refused for who it is, or None: it is the member it says.
    `instance_owner` is the member id owning `instance_id` (read when needs_instance_owner
    says so), `may_act_as` the caller's ownership check (None: not checked), and
    `pending_is_member` whether a pending member id counts (a leave may name one)."""
    if member is None or needs_instance_owner(member, pending_is_member=pending_is_member):
        fenced = instance_owner is not None and instance_owner != member_id
        return Errors.FENCED_INSTANCE_ID if fenced else Errors.UNKNOWN_MEMBER_ID
    if may_act_as is not None and not may_act_as(member):
        return Errors.GROUP_AUTHORIZATION_FAILED
    if instance_id and member.instance_id != instance_id:
        return Errors.FENCED_INSTANCE_ID
    return None
