"""A group's recent rebalances as the coordinator records them (pure): each move of the group
epoch (consumer, streams) or generation (classic), with when and why, kept on the group item
and written in the same conditional write as the move itself, so that a monitor that starts
watching now still sees what happened before (describe-group-activity's `recentRebalances`).

Bounded: the last REBALANCES_KEPT moves, a few hundred bytes on the group item. The cause is
told from the membership the entry before recorded: more members is a join, fewer a leave (a
LeaveGroup or an expired session alike), the same members with a changed subscription or
topic a topic change, else a member update (a member's subscription, protocols or rejoin).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from ..models.limits import REBALANCES_KEPT

JOIN = "join"
LEAVE = "leave"
TOPIC_CHANGE = "topic change"
MEMBER_UPDATE = "member update"


@dataclass(frozen=True)
class RebalanceRecord:
    """The group moved to `epoch` at `at_ms` (the coordinator's clock) with `members` members."""

    epoch: int
    at_ms: int
    cause: str
    members: int


def recorded(
    log: Sequence[RebalanceRecord],
    *,
    epoch_before: int,
    epoch_after: int,
    at_ms: int,
    members: int,
    topics_changed: bool,
) -> tuple[RebalanceRecord, ...]:
    """`log` with the move from `epoch_before` to `epoch_after` added (unchanged when the
    epoch did not move), the oldest dropped past REBALANCES_KEPT."""
    log = tuple(log)
    if epoch_after == epoch_before:
        return log
    before = log[-1].members if log else 0
    if members > before:
        cause = JOIN
    elif members < before:
        cause = LEAVE
    elif topics_changed:
        cause = TOPIC_CHANGE
    else:
        cause = MEMBER_UPDATE
    entry = RebalanceRecord(epoch=epoch_after, at_ms=at_ms, cause=cause, members=members)
    return (*log, entry)[-REBALANCES_KEPT:]


class EpochGroup(Protocol):
    """A consumer or streams group as the record needs it."""

    @property
    def group_epoch(self) -> int: ...
    @property
    def member_count(self) -> int: ...
    @property
    def topic_changes_seen(self) -> int: ...
    @property
    def rebalances(self) -> tuple[RebalanceRecord, ...]: ...


G = TypeVar("G", bound=EpochGroup)


def with_epoch_move(old: EpochGroup, new: G, at_ms: int) -> G:
    """`new` as written over `old`: its group epoch move, if any, recorded (the store calls
    this on every write of a consumer or streams group item, so no bump goes unrecorded)."""
    log = recorded(
        old.rebalances,
        epoch_before=old.group_epoch,
        epoch_after=new.group_epoch,
        at_ms=at_ms,
        members=new.member_count,
        topics_changed=new.topic_changes_seen != old.topic_changes_seen,
    )
    return new if log == new.rebalances else replace(new, rebalances=log)  # type: ignore[type-var]


def to_item(log: Sequence[RebalanceRecord]) -> list[dict[str, Any]] | None:
    """As the group item holds it (None: no attribute)."""
    if not log:
        return None
    return [{"e": r.epoch, "t": r.at_ms, "c": r.cause, "m": r.members} for r in log]


def from_item(raw: Sequence[Mapping[str, Any]] | None) -> tuple[RebalanceRecord, ...]:
    return tuple(
        RebalanceRecord(int(r["e"]), int(r["t"]), str(r["c"]), int(r["m"])) for r in raw or ()
    )
