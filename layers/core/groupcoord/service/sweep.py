"""The sweeper: finds items whose deadline passed, through the deadline index, and completes
what they stand for. Runs from EventBridge every minute in AWS and on a timer in `serve`.

COMPLETIONS names the completion of each kind of item the deadline index holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..observability import logger
from ..store import schema
from ..store.deadlines import Overdue
from ..store.retention import KIND as RETENTION_CHECK
from ..store.store import Store
from ..store.topics import KIND_TOPIC_CHANGE
from .group_timers import sweep_group
from .offset_retention import check_retention

Completion = Callable[[Store, Overdue, int], None]


def _renotify_topic_change(store: Store, due: Overdue, now_ms: int) -> None:
    store.topics.renotify(due)


COMPLETIONS: dict[str, Completion] = {
    # A group's timers (sessions, barriers, rebalance timeouts), run by its type.
    schema.KIND_GROUP: sweep_group,
    RETENTION_CHECK: check_retention,
    # A topic change whose groups were not all told at once.
    KIND_TOPIC_CHANGE: _renotify_topic_change,
}


@dataclass
class SweepReport:
    overdue: int = 0
    completed: dict[str, int] = field(default_factory=dict)
    failed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"overdue": self.overdue, "completed": self.completed, "failed": self.failed}


def sweep(store: Store, now_ms: int) -> SweepReport:
    report = SweepReport()
    for item in store.deadlines.overdue(now_ms):
        report.overdue += 1
        kind = item.kind
        completion = COMPLETIONS.get(kind)
        if completion is None:
            logger.warning("overdue item of unknown kind", extra={"kind": kind})
            continue
        try:
            completion(store, item, now_ms)
            report.completed[kind] = report.completed.get(kind, 0) + 1
        except Exception:
            # One bad item must not stop the sweep of the others; it is retried next sweep.
            report.failed += 1
            logger.exception("sweep completion failed", extra={"kind": kind})
    return report
