"""The sweeper: finds items whose deadline passed, through the deadline index, and completes
what they stand for. Runs from EventBridge every minute in AWS and on a timer in `serve`.

Each item kind names its own completion; the group protocols register theirs (member expiry,
rebalance timeouts, offset retention) next to their code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .plugins import Registry
from .store.store import Store

Completion = Callable[[Store, dict[str, Any], int], None]

_COMPLETIONS: Registry[Completion] = Registry("completion of overdue items of a kind")
completes = _COMPLETIONS.register


@completes("topic-change")
def _renotify_topic_change(store: Store, item: dict[str, Any], now_ms: int) -> None:
    store.topics.notify(store.topics.pending_change(item))


@dataclass
class SweepReport:
    overdue: int = 0
    completed: dict[str, int] = field(default_factory=dict)
    failed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"overdue": self.overdue, "completed": self.completed, "failed": self.failed}


def overdue_items(store: Store, now_ms: int) -> list[dict[str, Any]]:
    return store.deadlines.overdue(now_ms)


def sweep(store: Store, now_ms: int) -> SweepReport:
    from .observability import logger

    report = SweepReport()
    for item in overdue_items(store, now_ms):
        report.overdue += 1
        kind = item.get("kind", "")
        completion = _COMPLETIONS.get(kind)
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
