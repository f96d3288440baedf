"""Who owned which partition when, from the members' own reports (bench/push_member.py's events,
stamped with the machine's monotonic clock): the intervals each member held each partition,
the overlaps between two members (a partition owned by two live members at once: a failure of
the run), and the times the benchmark reports (when a set of partitions was owned again, when
a member reached its share). Pure functions over the events; bench/push_cluster.py collects
them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# Event names (bench/push_member.py), and the parent's own mark of a SIGKILL it sent.
ASSIGNED, REVOKED, LOST, KILLED = "assigned", "revoked", "lost", "killed"


@dataclass(frozen=True)
class Event:
    t: float  # time.monotonic() of the process that saw it
    name: str
    partitions: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Held:
    """`member` held `partition` from `start` until `end` (inf: still holds it)."""

    member: str
    partition: int
    start: float
    end: float


@dataclass(frozen=True)
class Overlap:
    partition: int
    first: str
    second: str
    at: float
    seconds: float

    def __str__(self) -> str:
        return (
            f"partition {self.partition} owned by {self.first} and {self.second} at once for "
            f"{self.seconds * 1000:.0f} ms"
        )


def held(member: str, events: Sequence[Event], since: float) -> list[Held]:
    """The intervals `member` held each partition from `since` on. Nothing counts after a
    SIGKILL (the process is dead: what its pipe still delivers was said before)."""
    start: dict[int, float] = {}
    out: list[Held] = []
    for event in sorted(events, key=lambda e: e.t):
        if event.t < since:
            continue
        if event.name == ASSIGNED:
            for p in event.partitions:
                start.setdefault(p, event.t)
        elif event.name in (REVOKED, LOST):
            for p in event.partitions & start.keys():
                out.append(Held(member, p, start.pop(p), event.t))
        elif event.name == KILLED:
            break
    end = next((e.t for e in events if e.name == KILLED and e.t >= since), float("inf"))
    out += [Held(member, p, t, end) for p, t in start.items()]
    return out


def overlaps(intervals: Iterable[Held]) -> list[Overlap]:
    """Every time two members held one partition at once."""
    by_partition: dict[int, list[Held]] = {}
    for h in intervals:
        by_partition.setdefault(h.partition, []).append(h)
    found: list[Overlap] = []
    for partition, spans in sorted(by_partition.items()):
        spans.sort(key=lambda h: h.start)
        for i, first in enumerate(spans):
            for second in spans[i + 1 :]:
                if second.start >= first.end:
                    break
                if second.member != first.member:
                    seconds = min(first.end, second.end) - second.start
                    found.append(Overlap(partition, first.member, second.member, second.start,
                                         seconds))  # fmt: skip
    return found


def owned_again(
    partitions: Iterable[int], others: Mapping[str, Sequence[Event]], since: float
) -> float | None:
    """When the last of `partitions` was assigned to one of `others` after `since` (None: not
    all yet)."""
    last = since
    for p in partitions:
        taken = [
            e.t
            for events in others.values()
            for e in events
            if e.name == ASSIGNED and e.t >= since and p in e.partitions
        ]
        if not taken:
            return None
        last = max(last, min(taken))
    return last


def owned_at(events: Sequence[Event], at: float) -> set[int]:
    """What a member owned just before `at`."""
    owned: set[int] = set()
    for event in sorted(events, key=lambda e: e.t):
        if event.t >= at:
            break
        if event.name == ASSIGNED:
            owned |= event.partitions
        elif event.name in (REVOKED, LOST):
            owned -= event.partitions
    return owned


def reached(events: Sequence[Event], count: int, since: float) -> float | None:
    """When a member whose events these are first owned `count` partitions after `since`."""
    owned: set[int] = set()
    for event in sorted(events, key=lambda e: e.t):
        if event.t < since:
            continue
        if event.name == ASSIGNED:
            owned |= event.partitions
        elif event.name in (REVOKED, LOST):
            owned -= event.partitions
        if len(owned) >= count:
            return event.t
    return None


def paused(events: Sequence[Event], since: float, now_owned: set[int]) -> int:
    """Partitions a member gave up after `since` and owns again now: work paused for nothing
    (ZooKeeper's recipe releases every member's set on every change)."""
    given_up: set[int] = set()
    for event in events:
        if event.t >= since and event.name in (REVOKED, LOST):
            given_up |= event.partitions
    return len(given_up & now_owned)
