"""When the push channel tells members to heartbeat (docs/sessions.md, "Push"): the pure
decisions; service/push.py posts the notices."""

from __future__ import annotations

from .classic.model import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE, ClassicGroup
from .consumer.model import ConsumerGroup

# A deferred install's notice asks for a heartbeat no sooner than this (never a tight loop).
DEFERRED_NOTICE_MIN_MS = 100


def classic_notice_due(before: ClassicGroup, after: ClassicGroup) -> bool:
    """Whether a committed classic transition needs every member told: a rebalance that
    starts (each must rejoin), or a sync that completes (those waiting for their
    assignment)."""
    starts = after.state == PREPARING_REBALANCE and (
        before.state != PREPARING_REBALANCE or before.generation != after.generation
    )
    synced = before.state == COMPLETING_REBALANCE and after.state == STABLE
    return starts or synced


def deferred_install_wait_ms(
    group: ConsumerGroup, now_ms: int, interval_ms: int, *, first_change: bool
) -> int | None:
    """After a request left the group's install to a later one (batched in time), how long
    members should wait before the heartbeat that installs it; None when no notice is due:
    the target is installed, or (`first_change`: the notice of a membership change to every
    member) the group was behind already before this change, and so told already."""
    if group.group_epoch <= group.target_epoch:
        return None
    if first_change and group.group_epoch != group.target_epoch + 1:
        return None
    if group.install_id is not None and group.install_until > now_ms:
        # A running install covers the bumps before its lease only: look again once it is
        # done (it tells the members it retargets itself).
        return max(DEFERRED_NOTICE_MIN_MS, interval_ms)
    return max(DEFERRED_NOTICE_MIN_MS, group.assigned_at + interval_ms - now_ms)
