"""What a member-based group and its members hold in every family (Kafka's ModernGroup and
ModernGroupMember): the group's epochs, size and state, a member's identity. Each family's
group and member (core/consumer/, core/streams/) extend them with their own fields, which come
after these."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Self

from .members import ASSIGNING, EMPTY


@dataclass(frozen=True)
class ModernGroup:
    group_id: str
    # Grows on every write of the group; every write is conditioned on the one read.
    version: int = 0
    member_count: int = 0
    member_shards: int = 8
    # The epoch of the membership (and what each family computes its target from), and the
    # epoch of the installed target.
    group_epoch: int = 0
    target_epoch: int = 0
    state: str = EMPTY

    def with_members(self, delta: int) -> Self:
        """The membership changed by `delta` members: a new group epoch (a new target due)."""
        count = self.member_count + delta
        return replace(
            self,
            group_epoch=self.group_epoch + 1,
            member_count=count,
            state=ASSIGNING if count else EMPTY,
        )


@dataclass(frozen=True)
class ModernGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    # The principal that created the member (None: unknown, a member older than the field);
    # with the authorizer on, only it may act as the member.
    principal: str | None = None
    rebalance_timeout_ms: int = 0
    # The member's live push connection as `$connect` marked it on the member item (its
    # `$disconnect` clears it): the connection's id, and until when it may be open at most
    # (API Gateway closes a connection after 2 h). "" and 0: none.
    push_connection: str = ""
    push_until_ms: int = 0

    def push_connected(self, now_ms: int) -> bool:
        """Whether the member has a live push connection at `now_ms` (core/session_renewal.py:
        its renewals may skip more)."""
        return bool(self.push_connection) and now_ms < self.push_until_ms
