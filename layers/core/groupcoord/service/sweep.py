"""The sweeper: finds items whose deadline passed, through the deadline index, and completes
what they stand for. Runs from EventBridge every minute in AWS and on a timer in `serve`.

COMPLETIONS names the completion of each kind of item the deadline index holds. A sweep reads
the index a page at a time and, given a Budget, stops taking items when the budget runs low:
what is left is the next sweep's. An item whose completion raises is put back later, behind
the others, and quarantined after repeated failures (core/sweeping.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import faults
from ..clock import SYSTEM
from ..core.sweeping import Attempt, next_attempt
from ..observability import logger
from ..store import schema
from ..store.deadlines import Overdue
from ..store.group_cleanup import KIND as GROUP_CLEANUP
from ..store.retention import KIND as RETENTION_CHECK
from ..store.store import Store
from ..store.topics import KIND_TOPIC_CHANGE
from .group_admin import finish_cleanup
from .group_timers import sweep_group
from .kinesis.sync import sync_due_topic
from .offset_retention import check_retention
from .push import notify_topic_change

Completion = Callable[[Store, Overdue, int], None]


def _renotify_topic_change(store: Store, due: Overdue, now_ms: int) -> None:
    notify_topic_change(store, store.topics.renotify(due))


COMPLETIONS: dict[str, Completion] = {
    # A group's timers (sessions, barriers, rebalance timeouts), run by its type.
    schema.KIND_GROUP: sweep_group,
    RETENTION_CHECK: check_retention,
    # A delete-groups that died before it cleaned up after the group.
    GROUP_CLEANUP: finish_cleanup,
    # A topic change whose groups were not all told at once.
    KIND_TOPIC_CHANGE: _renotify_topic_change,
    # A Kinesis-backed topic whose scheduled shard sync is due (the topic item itself).
    schema.KIND_TOPIC: sync_due_topic,
}


DEFAULT_MARGIN_MS = 1_000


@dataclass(frozen=True)
class Budget:
    """The wall time a sweep may take, ending at `ends_at` on `timer` (the system's monotonic
    clock, in seconds): a Lambda times out in real time, whatever the store's clock reads (a
    test's controlled clock may stand still); a test passes a timer of its own, so that what a
    sweep gets through does not depend on the machine's speed. A sweep takes no new item once
    less than `margin_ms` is left, or less than its slowest item so far took (timed on `timer`
    too)."""

    ends_at: float
    margin_ms: float = DEFAULT_MARGIN_MS
    timer: Callable[[], float] = SYSTEM.monotonic_s

    @classmethod
    def of_ms(
        cls,
        budget_ms: float,
        margin_ms: float = DEFAULT_MARGIN_MS,
        timer: Callable[[], float] | None = None,
    ) -> Budget:
        timer = SYSTEM.monotonic_s if timer is None else timer
        return cls(timer() + budget_ms / 1000, margin_ms, timer)

    def left_ms(self) -> float:
        return (self.ends_at - self.timer()) * 1000


@dataclass
class SweepReport:
    overdue: int = 0  # items taken
    completed: dict[str, int] = field(default_factory=dict)
    failed: int = 0  # completions that raised; each item is put back later or quarantined
    quarantined: int = 0
    remaining: bool = False  # the budget ran low with overdue items left
    deferred: int = 0  # items read from the index and left to the next sweep (at least)

    def as_dict(self) -> dict[str, Any]:
        return {
            "overdue": self.overdue,
            "completed": self.completed,
            "failed": self.failed,
            "quarantined": self.quarantined,
            "remaining": self.remaining,
            "deferred": self.deferred,
        }


def sweep(store: Store, now_ms: int, *, budget: Budget | None = None) -> SweepReport:
    """Complete the items due at `now_ms`, the deadline shards taking turns; with a `budget`,
    stop taking items when it runs low and leave the rest to the next sweep. Its write calls
    are one sweep's crash points (faults.sweep_scope)."""
    with faults.sweep_scope(store.settings):
        return _sweep(store, now_ms, budget)


def _sweep(store: Store, now_ms: int, budget: Budget | None) -> SweepReport:
    report = SweepReport()
    scan = store.deadlines.overdue(now_ms)
    slowest_ms = 0.0
    timer = budget.timer if budget is not None else store.clock.monotonic_s
    for item in scan:
        if budget is not None and budget.left_ms() < max(budget.margin_ms, slowest_ms):
            report.remaining = True
            report.deferred = 1 + scan.read_ahead
            break
        report.overdue += 1
        kind = item.kind
        completion = COMPLETIONS.get(kind)
        if completion is None:
            logger.warning("overdue item of unknown kind", extra={"kind": kind, **item.key})
            continue
        started = timer()
        try:
            completion(store, item, now_ms)
            report.completed[kind] = report.completed.get(kind, 0) + 1
        except faults.InjectedCrash:
            raise  # the sweep died: nothing after it runs, as after a timeout
        except Exception as error:
            # One bad item must not stop the sweep of the others, nor be first in line again
            # at every sweep: it goes back behind them, or into quarantine.
            report.failed += 1
            attempt = _put_back(store, item, now_ms, error)
            logger.exception(
                "sweep completion failed",
                extra={
                    "kind": kind,
                    **item.key,
                    "failures": attempt.failures if attempt else None,
                    "retryAtMs": attempt.retry_at_ms if attempt else None,
                },
            )
            if attempt is not None and attempt.quarantined:
                report.quarantined += 1
                logger.error(
                    "sweep item quarantined",
                    extra={"kind": kind, **item.key, "failures": attempt.failures},
                )
        slowest_ms = max(slowest_ms, (timer() - started) * 1000)
    return report


def _put_back(store: Store, item: Overdue, now_ms: int, error: Exception) -> Attempt | None:
    """Record the failure on the item and move it as core/sweeping.py says. None: nothing
    recorded (the item moved since it was read, or the store failed too: then it stays due
    and the next sweep tries it again)."""
    try:
        return store.deadlines.record_failure(
            item,
            lambda failures: next_attempt(failures, now_ms),
            f"{type(error).__name__}: {error}",
        )
    except faults.InjectedCrash:
        raise
    except Exception:
        logger.exception("sweep failure not recorded", extra={"kind": item.kind, **item.key})
        return None
