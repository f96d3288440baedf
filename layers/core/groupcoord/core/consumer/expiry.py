"""The consumer protocol's part of the expiry of overdue members (core/modern/expiry.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .group import group_state, next_deadline
from .member import ConsumerGroupMember
from .model import EMPTY, STABLE, ConsumerGroup
from .reconciliation import MemberState


@dataclass(frozen=True)
class ConsumerExpiry:
    """`refresh_ms`: how soon a group that is not Stable is looked at again (its listed
    state refreshed); `chunk`: members removed in one transaction."""

    refresh_ms: int
    chunk: int
    revoking: object = MemberState.UNREVOKED_PARTITIONS

    def quiet(
        self, group: ConsumerGroup, members: Sequence[ConsumerGroupMember], now_ms: int
    ) -> ConsumerGroup:
        """Nobody overdue: the group's state and member count as the members read say, and
        its exact next deadline (the claim released)."""
        state = group_state(len(members), group.group_epoch, group.target_epoch, list(members))
        refresh = None if state in (STABLE, EMPTY) else self.refresh_ms
        deadline = next_deadline(members, now_ms, refresh)
        return replace(
            group, deadline=deadline, state=state, member_count=len(members), scan_id=None
        )

    def fenced(
        self,
        group: ConsumerGroup,
        expired: Sequence[ConsumerGroupMember],
        remaining: Sequence[ConsumerGroupMember],
        more: bool,
        now_ms: int,
    ) -> ConsumerGroup:
        """The expired members removed: a new group epoch, the count from the members read.
        Overdue members left for the next check (`more`) are among `remaining`, their past
        deadlines make the group due again at once."""
        deadline = next_deadline(remaining, now_ms, self.refresh_ms)
        removed = group.with_members(len(remaining) - group.member_count)
        return replace(removed, deadline=deadline, scan_id=None)
