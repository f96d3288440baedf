"""Streams' part of the expiry of overdue members (core/modern/expiry.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .group import StreamsGroup
from .heartbeat_rules import next_deadline
from .member import StreamsGroupMember
from .reconciliation import MemberState


@dataclass(frozen=True)
class StreamsExpiry:
    """`chunk`: members removed in one transaction."""

    chunk: int
    revoking: object = MemberState.UNREVOKED_TASKS

    def quiet(
        self, group: StreamsGroup, members: Sequence[StreamsGroupMember], now_ms: int
    ) -> StreamsGroup:
        """Nobody overdue: the group's next deadline (a member's, or the initial delay's
        end)."""
        return replace(group, deadline=next_deadline(list(members), group, now_ms))

    def fenced(
        self,
        group: StreamsGroup,
        expired: Sequence[StreamsGroupMember],
        remaining: Sequence[StreamsGroupMember],
        more: bool,
        now_ms: int,
    ) -> StreamsGroup:
        """The expired members removed: a new group epoch, and a new endpoint epoch if one of
        them had an endpoint; due again at once when overdue members were left (`more`)."""
        deadline = now_ms if more else next_deadline(list(remaining), group, now_ms)
        removed = replace(group.with_members(-len(expired)), deadline=deadline)
        return removed.with_endpoints_changed(any(m.user_endpoint is not None for m in expired))
