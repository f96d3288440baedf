"""One expiry pass of a member-based group (session timeouts, rebalance timeouts), over the
pure plan (core/modern/expiry.py): claim a big group's check, read the members, write the
plan (the next deadline alone, or the overdue members' removal with a new group epoch in one
transaction), then install the next target at once, so an idle group settles without
traffic. Every write is on the version read: a pass that loses a race leaves the group to
its next look. A family supplies its rule and what it does around the writes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from ...core.modern.expiry import ExpiryPlan, ExpiryRule, lease_until, plan_expiry
from ...store.errors import Conflict
from ...store.member_groups import MemberGroupStore
from ...store.writes import joined

G = TypeVar("G")
M = TypeVar("M")


class ExpiryPass(Generic[G, M]):
    def __init__(
        self, store: MemberGroupStore[Any, Any], rule: ExpiryRule[Any, Any], now_ms: int
    ) -> None:
        self.store = store
        self.rule = rule
        self.now = now_ms

    # --- the hooks a family supplies ---

    def claim(self, group: G, lease_until_ms: int) -> G:
        """The group as a claim of its check writes it: its deadline moved to the lease's end
        (on the version read; the requests that lose go on without reading every member)."""
        raise NotImplementedError

    def kept_elsewhere(self, group: G, plan: ExpiryPlan[Any, Any], now_ms: int) -> None:
        """A check that removed nobody lost its write: the family may keep its result on the
        group as it is now (none by default)."""

    def settled(self, group: G) -> None:
        """After a check that removed nobody (none by default)."""

    def leaves_otherwise(self, group: G, expired: Sequence[M], members: Sequence[M]) -> bool:
        """True when the overdue members' removal was done another way (a downgrade)."""
        return False

    def after_removal(self, group: G, remaining: bool) -> None:
        """After overdue members were removed (`remaining`: some members are left): the
        next target, at once."""
        raise NotImplementedError

    # --- the pass ---

    def run(self, group: G) -> G | None:
        """The check of the due `group` (as read). Returns the group as written when the
        check removed nobody (a caller need not read it again); None when it must."""
        lease = lease_until(group, self.now)  # type: ignore[arg-type]
        if lease is not None:
            try:
                group = self.store.update_group(group, self.claim(group, lease))
            except Conflict:
                return None  # someone else checks, or the group moved: it is looked at again
        members = self.store.members(group)
        plan = plan_expiry(group, members, self.now, self.rule)
        if not plan.expired:
            try:
                written = self.store.update_group(group, plan.group)
            except Conflict:
                self.kept_elsewhere(group, plan, self.now)
                return None
            self.settled(written)
            return written  # type: ignore[no-any-return]
        try:
            if self.leaves_otherwise(group, plan.expired, members):
                return None
        except Conflict:
            return None  # the group or a member moved: it is looked at again
        removals = joined([self.store.remove_member(group, m) for m in plan.expired])
        try:
            fenced = self.store.update_group(group, plan.group, extra=removals)
        except Conflict:
            return None
        self.after_removal(fenced, bool(plan.remaining))
        return None
