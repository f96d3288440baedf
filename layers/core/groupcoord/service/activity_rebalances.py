"""describe-group-activity's `recentRebalances`: a group's record of its epoch (classic:
generation) moves (core/rebalances.py), as every group type's answer carries it."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.rebalances import RebalanceRecord
from ..models.activity import ActivityRebalance


def recent_rebalances(log: Iterable[RebalanceRecord]) -> list[ActivityRebalance]:
    return [
        ActivityRebalance(epoch=r.epoch, at_ms=r.at_ms, cause=r.cause, member_count=r.members)
        for r in log
    ]
