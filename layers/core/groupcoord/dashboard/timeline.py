"""A group's rebalances as the dashboard sees them: pure, no I/O, no clock.

The coordinator records each group's last epoch and generation moves with a cause told from
the member count (describe-group-activity's recentRebalances, which the page shows); the
members each move concerned the dashboard infers itself: each detailed
snapshot of a watched group is compared with the previous one, and an epoch (consumer) or
generation (classic) that moved is one entry, its cause read off the difference: members that
appeared joined, members that vanished before their session deadline left, after it expired,
and a subscription or partition count that changed is a topic change. Bumps between two
snapshots are one entry (`from_epoch` to `to_epoch`); nothing before the dashboard first
looked is known here (the record covers it). docs/dashboard.md says what that means.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

JOIN = "join"
LEAVE = "leave"
EXPIRY = "expiry"
TOPIC_CHANGE = "topic change"
OTHER = "other"  # e.g. a member's subscription, or a reconciliation step we cannot tell apart

# Entries kept per group: the window the timeline shows.
DEFAULT_WINDOW = 50


@dataclass(frozen=True)
class MemberSeen:
    member_id: str
    client_id: str
    session_deadline_ms: int


@dataclass(frozen=True)
class Snapshot:
    """What one detailed read of a group tells the timeline."""

    at_ms: int
    group_type: str
    epoch: int
    members: Mapping[str, MemberSeen]
    # (topic, partition count) of the group's partition grid, and the subscription.
    topics: frozenset[tuple[str, int]]
    subscription: frozenset[str]

    @classmethod
    def of(cls, group: Mapping[str, Any], now_ms: int) -> Snapshot:
        """From a describe-group-activity group (JSON, includeMembers)."""
        counts: dict[str, int] = {}
        for cell in group.get("partitions") or ():
            name = cell.get("topicName") or cell.get("topicId") or ""
            counts[name] = max(counts.get(name, 0), int(cell["partitionIndex"]) + 1)
        return cls(
            at_ms=now_ms,
            group_type=group.get("groupType", ""),
            epoch=int(group.get("epoch", 0)),
            members={
                m["memberId"]: MemberSeen(
                    m["memberId"], m.get("clientId", ""), int(m.get("sessionDeadlineMs", -1))
                )
                for m in group.get("members") or ()
            },
            topics=frozenset(counts.items()),
            subscription=frozenset(group.get("subscribedTopics") or ()),
        )


@dataclass(frozen=True)
class Rebalance:
    at_ms: int
    from_epoch: int
    to_epoch: int
    causes: tuple[str, ...]
    joined: tuple[MemberSeen, ...] = ()
    left: tuple[MemberSeen, ...] = ()
    expired: tuple[MemberSeen, ...] = ()


def causes_between(before: Snapshot, after: Snapshot) -> Rebalance:
    """The rebalance that took `before` to `after` (whose epochs differ)."""
    joined = tuple(after.members[m] for m in sorted(after.members.keys() - before.members))
    gone = [before.members[m] for m in sorted(before.members.keys() - after.members)]
    # A member vanishes at its leave, or once overdue when a request or the sweeper expires
    # it: past its last known deadline at the time we notice, it expired.
    expired = tuple(m for m in gone if 0 <= m.session_deadline_ms <= after.at_ms)
    left = tuple(m for m in gone if m not in expired)
    causes: list[str] = []
    if joined:
        causes.append(JOIN)
    if left:
        causes.append(LEAVE)
    if expired:
        causes.append(EXPIRY)
    if before.topics != after.topics or before.subscription != after.subscription:
        causes.append(TOPIC_CHANGE)
    return Rebalance(
        at_ms=after.at_ms,
        from_epoch=before.epoch,
        to_epoch=after.epoch,
        causes=tuple(causes) or (OTHER,),
        joined=joined,
        left=left,
        expired=expired,
    )


@dataclass
class Timeline:
    """One group's rebalances since the dashboard first looked, newest last, bounded."""

    window: int = DEFAULT_WINDOW
    entries: deque[Rebalance] = field(default_factory=deque)
    # The snapshot at the last epoch change: a classic member joins (or leaves) one poll and
    # the generation moves a few polls later, so a bump is compared with the last bump.
    base: Snapshot | None = None
    # The latest of every member of `base` (its deadline renewed by each heartbeat since).
    latest: dict[str, MemberSeen] = field(default_factory=dict)
    watching_since_ms: int | None = None
    # Each member's label (M1, M2...), given when it is first seen and kept for its life: a
    # member joining never renumbers the others, and a label is never given twice.
    labels: dict[str, str] = field(default_factory=dict)
    labelled: int = 0

    def observe(self, snapshot: Snapshot) -> Rebalance | None:
        """Take a new snapshot in; the rebalance it shows, if any."""
        self._label(snapshot.members)
        entry = self._rebalance(snapshot)
        self._forget_labels(snapshot.members)
        return entry

    def _rebalance(self, snapshot: Snapshot) -> Rebalance | None:
        if self.base is None:
            self.watching_since_ms = snapshot.at_ms
            self._rebase(snapshot)
            return None
        for member_id, seen in snapshot.members.items():
            if member_id in self.latest:
                self.latest[member_id] = seen
        if snapshot.epoch == self.base.epoch and snapshot.group_type == self.base.group_type:
            return None
        before = replace(self.base, members=dict(self.latest))
        entry = causes_between(before, snapshot)
        self.entries.append(entry)
        while len(self.entries) > self.window:
            self.entries.popleft()
        self._rebase(snapshot)
        return entry

    def _label(self, members: Iterable[str]) -> None:
        for member_id in sorted(set(members) - self.labels.keys()):  # joined together: by id
            self.labelled += 1
            self.labels[member_id] = f"M{self.labelled}"

    def _forget_labels(self, members: Iterable[str]) -> None:
        """Labels are kept while the member is in the group or in a timeline entry."""
        named = {m.member_id for e in self.entries for m in (*e.joined, *e.left, *e.expired)}
        for member_id in self.labels.keys() - set(members) - named:
            del self.labels[member_id]

    def labels_for(self, members: Iterable[str]) -> dict[str, str]:
        """The labels of `members` and of the timeline's; one not seen yet (a page shaped
        from a read the timeline did not observe) is labelled after the others, for now."""
        labels, next_number = dict(self.labels), self.labelled
        for member_id in sorted(set(members) - labels.keys()):
            next_number += 1
            labels[member_id] = f"M{next_number}"
        return labels

    def _rebase(self, snapshot: Snapshot) -> None:
        self.base = snapshot
        self.latest = dict(snapshot.members)

    def newest_first(self) -> Iterable[Rebalance]:
        return reversed(self.entries)
