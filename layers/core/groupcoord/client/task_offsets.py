"""When a streams member sends its task offsets (`taskOffsets` / `taskEndOffsets`): the
coordinator keeps each report in an item of its own, so every report is a write, and a member
that restores or processes state has new offsets all the time. As KIP-1071 has it, reports go
"according to the task offset interval" (`taskOffsetIntervalMs` of the answers: at most one
per interval, with the heartbeat after it has passed, carrying the latest values) and "when a
warm-up task has caught up" (at once: its promotion waits on that report). Besides, as Kafka
Streams' client does: the join carries both lists whole (empty before any report), and so does
the heartbeat that acknowledges a new assignment whatever the interval. A list the coordinator
already has is not sent again (null: unchanged)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

TaskId = tuple[str, int]  # (subtopology id, partition)
Offsets = dict[TaskId, int]


def _entries(offsets: Offsets) -> list[dict[str, Any]]:
    return [
        {"subtopologyId": s, "partition": p, "offset": o} for (s, p), o in sorted(offsets.items())
    ]


def _lag(offsets: Offsets | None, ends: Offsets | None, task: TaskId) -> int | None:
    """End offset less offset (None: not known, which counts as not caught up)."""
    if offsets is None or ends is None or task not in offsets or task not in ends:
        return None
    return ends[task] - offsets[task]


@dataclass(frozen=True)
class Report:
    """What one heartbeat carries: each list None when the coordinator has it already."""

    offsets: Offsets | None = None
    ends: Offsets | None = None

    def fields(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        if self.offsets is not None:
            found["taskOffsets"] = _entries(self.offsets)
        if self.ends is not None:
            found["taskEndOffsets"] = _entries(self.ends)
        return found


@dataclass
class TaskOffsetReports:
    """The latest values the application reported and what the coordinator has of them."""

    interval_ms: int = 60_000  # the coordinator's taskOffsetIntervalMs (from its answers)
    acceptable_lag: int | None = None  # its acceptableRecoveryLag (None: no answer yet)
    _offsets: Offsets | None = None
    _ends: Offsets | None = None
    _sent_offsets: Offsets | None = None  # what the coordinator has since the join
    _sent_ends: Offsets | None = None
    _sent_at: float | None = None  # when (monotonic s); None: nothing sent since the join

    def record(self, offsets: Mapping[TaskId, int], ends: Mapping[TaskId, int] | None) -> None:
        """The latest offsets (replacing the last), and end offsets (None: unchanged)."""
        self._offsets = dict(offsets)
        if ends is not None:
            self._ends = dict(ends)

    def caught_up(self, warmups: Iterable[TaskId]) -> bool:
        """Whether the latest values show a warm-up task within the acceptable lag that the
        coordinator's do not: news that promotes it, sent at once."""
        if self.acceptable_lag is None:
            return False
        bound = self.acceptable_lag

        def within(offsets: Offsets | None, ends: Offsets | None, task: TaskId) -> bool:
            lag = _lag(offsets, ends, task)
            return lag is not None and lag <= bound

        return any(
            within(self._offsets, self._ends, t)
            and not within(self._sent_offsets, self._sent_ends, t)
            for t in warmups
        )

    def whole(self) -> Report:
        """What a join carries: both lists, empty before the first report."""
        return Report(dict(self._offsets or {}), dict(self._ends or {}))

    def due(self, now_s: float, warmups: Iterable[TaskId], tasks_changed: bool = False) -> Report:
        """What the next heartbeat carries (an empty Report: nothing); `tasks_changed`: it
        reports a new set of owned tasks."""
        changed = Report(
            self._offsets if self._offsets != self._sent_offsets else None,
            self._ends if self._ends != self._sent_ends else None,
        )
        if changed == Report():
            return changed
        if (
            tasks_changed
            or self._sent_at is None
            or now_s - self._sent_at >= self.interval_ms / 1000
            or self.caught_up(warmups)
        ):
            return changed
        return Report()

    def sent(self, report: Report, now_s: float) -> None:
        """The coordinator took `report` (its heartbeat was answered without error)."""
        if report == Report():
            return
        if report.offsets is not None:
            self._sent_offsets = report.offsets
        if report.ends is not None:
            self._sent_ends = report.ends
        self._sent_at = now_s

    def rejoined(self) -> None:
        """A join starts over: the coordinator may have dropped what it had."""
        self._sent_offsets = self._sent_ends = None
        self._sent_at = None
