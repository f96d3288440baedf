"""The expiry of a member-based group's overdue members, pure: who is removed at this check
(session timeouts, rebalance timeouts), and the group to write, with its next deadline.

A heartbeat renews only the member's own item, so the group item's deadline is a lower bound
of every member's deadlines: when it passes, one request (or the sweeper) reads the members
and writes this plan. A big group's check is claimed first (core/timer_checks.py): its
deadline moves a little ahead, and the requests that lose go on without reading every
member. Each family passes its `ExpiryRule`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from ..timer_checks import check_is_claimed
from .members import is_overdue

# How long a claimed check keeps other requests from reading the same group's members: long
# enough to read every member (a claim that runs out mid-check lets the next request read
# too), short enough that a claimant that died delays little.
SCAN_LEASE_MS = 2_000
SCAN_LEASE_PER_MEMBER_MS = 4


class Group(Protocol):
    @property
    def member_count(self) -> int: ...
    @property
    def deadline(self) -> int | None: ...


class Member(Protocol):
    @property
    def member_id(self) -> str: ...


G = TypeVar("G", bound=Group)
M = TypeVar("M", bound=Member)


class ExpiryRule(Protocol[G, M]):
    """A family's part of the expiry: the group written after a check that removes nobody
    (`quiet`) or the `expired` members (`fenced`; `more`: overdue members were left for the
    next check, one transaction's worth at a time). A member is overdue when its session is
    over, or it is stuck asked to revoke (`revoking`: the family's state) past its rebalance
    timeout."""

    # Members removed in one transaction at most (each takes a few of its items).
    @property
    def chunk(self) -> int: ...
    @property
    def revoking(self) -> object: ...

    def quiet(self, group: G, members: Sequence[M], now_ms: int) -> G: ...

    def fenced(
        self, group: G, expired: Sequence[M], remaining: Sequence[M], more: bool, now_ms: int
    ) -> G: ...


@dataclass(frozen=True)
class ExpiryPlan(Generic[G, M]):
    """The group to write (on the version read) and the members whose items go with it."""

    group: G
    expired: tuple[M, ...]
    remaining: tuple[M, ...]


def is_due(group: Group, now_ms: int) -> bool:
    return group.deadline is not None and group.deadline <= now_ms


def lease_until(group: Group, now_ms: int) -> int | None:
    """The deadline a claim of the group's due check writes, or None: the check is not
    claimed (a small group's)."""
    if not check_is_claimed(group.member_count):
        return None
    return now_ms + SCAN_LEASE_MS + SCAN_LEASE_PER_MEMBER_MS * group.member_count


def plan_expiry(
    group: G, members: Sequence[M], now_ms: int, rule: ExpiryRule[G, M]
) -> ExpiryPlan[G, M]:
    """The check of a due group whose members are `members` (all of them, as read)."""
    overdue = [m for m in members if is_overdue(m, rule.revoking, now_ms)]  # type: ignore[arg-type]
    expired = overdue[: rule.chunk]
    if not expired:
        return ExpiryPlan(rule.quiet(group, members, now_ms), (), tuple(members))
    gone = {m.member_id for m in expired}
    remaining = [m for m in members if m.member_id not in gone]
    after = rule.fenced(group, expired, remaining, len(overdue) > len(expired), now_ms)
    if not remaining:
        after = replace(after, target_epoch=after.group_epoch)  # type: ignore[type-var]
    return ExpiryPlan(after, tuple(expired), tuple(remaining))
