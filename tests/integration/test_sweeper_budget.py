"""The sweeper under a backlog (docs/architecture.md, "The sweeper's path"): it reads the
deadline index a page at a time, the shards taking turns; each sweep keeps to its budget and
leaves the rest to the next; an item whose completion keeps failing goes behind the others and
ends quarantined, where an operator finds it and puts it back.

The index and the failure bookkeeping are the store's (`dynamo`: both backends); the sweeps
run on the in-memory store (`service_store`), where 10,000 items take a few seconds."""

from __future__ import annotations

import functools
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord import clock
from groupcoord.core.sweeping import MAX_FAILURES, delay_ms, next_attempt
from groupcoord.http import handler as handlers
from groupcoord.http.handler import SWEEP_SAFETY_MS, make_sweeper_handler
from groupcoord.local.events import LambdaContext, scheduled_event
from groupcoord.service import sweep as sweeper
from groupcoord.service.sweep import DEFAULT_MARGIN_MS, Budget
from groupcoord.store import capacity, schema
from groupcoord.store.deadlines import FAILURES, HOME_SHARD, LAST_ERROR, DeadlineIndex, Overdue
from groupcoord.store.dynamo import Dynamo, Update
from groupcoord.store.store import Store
from groupcoord.store.topics import KIND_TOPIC_CHANGE, TOPIC_CHANGES_PK
from tests.support.clock import FakeClock

T0 = 1_800_000_000_000
BACKLOG = 10_000
BUDGET_MS = 300
MARGIN_MS = 20
# What completing one item takes on the sweeps' timer (FakeTimer): the sweeps run on a timer
# the test advances, so that what a sweep gets through, and when it stops, is the same on a
# fast machine and on a busy one.
ITEM_MS = 0.1


class FakeTimer:
    """A monotonic clock in seconds (Budget's timer) that moves only when told."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s

    def advance(self, ms: float) -> None:
        self.now_s += ms / 1000


def timed_completions(
    monkeypatch: pytest.MonkeyPatch, timer: FakeTimer | FakeClock, kind: str, ms: float
):
    """Each completion of `kind` takes `ms` on `timer` (and does its real work)."""
    real = sweeper.COMPLETIONS[kind]

    def completion(store: Store, due: Overdue, now_ms: int) -> None:
        real(store, due, now_ms)
        timer.advance(ms)

    monkeypatch.setitem(sweeper.COMPLETIONS, kind, completion)


def due_item(shard: int, due_ms: int, name: str, **attributes: Any) -> dict[str, Any]:
    return {
        schema.PK: "DUE",
        schema.SK: name,
        "kind": "test",
        schema.DEADLINE_SHARD: f"DL#{shard}",
        schema.DEADLINE: due_ms,
        **attributes,
    }


def topic_change(name: str, due_ms: int, shards: int) -> dict[str, Any]:
    """A pending topic-change item (store/topics.py) of a topic no group subscribes to: the
    cheapest completion there is (two queries and a delete)."""
    sk = f"{name}#{name}"
    return {
        schema.PK: TOPIC_CHANGES_PK,
        schema.SK: sk,
        "kind": KIND_TOPIC_CHANGE,
        "topic": name,
        schema.DEADLINE_SHARD: schema.deadline_shard_value(sk, shards),
        schema.DEADLINE: due_ms,
    }


def pending_topic_changes(store: Store) -> list[dict[str, Any]]:
    return list(store.dynamo.query("pk = :pk", {":pk": TOPIC_CHANGES_PK}, consistent=True))


def quarantined(dynamo: Dynamo) -> list[dict[str, Any]]:
    """The operator's query (docs/architecture.md): the index's quarantine partition."""
    return list(
        dynamo.query("dlShard = :q", {":q": schema.QUARANTINE_SHARD}, index=schema.DEADLINE_INDEX)
    )


def put_back(dynamo: Dynamo, key: dict[str, Any], now_ms: int) -> None:
    """The operator's retry (docs/architecture.md): due now, in its own shard again."""
    dynamo.update(
        Update(
            key,
            "SET dlShard = sweepShard, dl = :now",
            values={":now": now_ms, ":q": schema.QUARANTINE_SHARD},
            condition="dlShard = :q",
        )
    )


def fail(index: DeadlineIndex, due: Overdue, now_ms: int) -> Any:
    return index.record_failure(
        due, functools.partial(next_attempt, now_ms=now_ms), "RuntimeError: boom"
    )


# --- the index, a page at a time (both backends) ---


def test_the_shards_take_turns_a_page_at_a_time_soonest_first(dynamo: Dynamo) -> None:
    crowded = [due_item(0, 100 + i, f"a{i}") for i in range(10)]
    dynamo.batch_write(
        puts=[
            *reversed(crowded),
            due_item(1, 105, "b0"),
            due_item(1, 106, "b1"),
            due_item(2, 50, "c0"),
            due_item(2, 5_000, "c-later"),  # not due
        ]
    )
    index = DeadlineIndex(dynamo, shards=3)
    with capacity.metered() as usage:
        scan = index.overdue(1_000, page_size=3)
        taken = iter(scan)
        first = next(taken)
        # Lazy: one page of one shard so far.
        assert usage.by_operation == {"query": 1}
        assert scan.read_ahead == 2
        order = [first.item[schema.SK], *(due.item[schema.SK] for due in taken)]
    # A crowded shard takes its turn with the others; within a shard, soonest first.
    assert order == ["a0", "b0", "c0", "a1", "b1", *(f"a{i}" for i in range(2, 10))]
    assert scan.read_ahead == 0
    # Shard 0 in pages of 3, 3, 3 and 1 (each following the last one's LastEvaluatedKey);
    # shards 1 and 2 in one page each.
    assert usage.by_operation == {"query": 6}


# --- a failed item's bookkeeping (both backends) ---


def test_each_failure_puts_the_item_further_back_and_the_fifth_quarantines_it(
    dynamo: Dynamo,
) -> None:
    index = DeadlineIndex(dynamo, shards=2)
    dynamo.put(due_item(1, 100, "poison", payload="kept"))
    key = {schema.PK: "DUE", schema.SK: "poison"}
    now = 1_000
    for failures in range(1, MAX_FAILURES):
        (due,) = index.overdue(now)
        attempt = fail(index, due, now)
        assert attempt == next_attempt(failures, now)
        assert attempt.retry_at_ms == now + delay_ms(failures)
        # Behind: not due until its retry.
        assert list(index.overdue(attempt.retry_at_ms - 1)) == []
        now = attempt.retry_at_ms

    (due,) = index.overdue(now)
    attempt = fail(index, due, now)
    assert attempt is not None and attempt.quarantined
    assert list(index.overdue(2**62)) == []  # never due again by itself
    stored = dynamo.get(key, consistent=True)
    assert stored is not None
    assert stored["payload"] == "kept" and stored["kind"] == "test"
    assert stored[schema.DEADLINE] == due.due_ms  # as it was due last
    assert stored[schema.DEADLINE_SHARD] == schema.QUARANTINE_SHARD
    assert stored[HOME_SHARD] == "DL#1"
    assert stored[FAILURES] == MAX_FAILURES
    assert stored[LAST_ERROR] == "RuntimeError: boom"

    # The operator finds it and puts it back; its count of failures starts again.
    (listed,) = quarantined(dynamo)
    assert (listed[schema.PK], listed[schema.SK], listed["kind"]) == ("DUE", "poison", "test")
    put_back(dynamo, key, now)
    assert quarantined(dynamo) == []
    (due,) = index.overdue(now)
    assert due.item[schema.DEADLINE_SHARD] == "DL#1"
    assert fail(index, due, now) == next_attempt(1, now)


def test_a_failure_is_not_held_against_an_item_that_moved(dynamo: Dynamo) -> None:
    index = DeadlineIndex(dynamo, shards=1)
    dynamo.put(due_item(0, 100, "g"))
    (due,) = index.overdue(1_000)
    assert fail(index, due, 1_000) == next_attempt(1, 1_000)
    (due,) = index.overdue(1_000 + delay_ms(1))
    assert fail(index, due, 1_000 + delay_ms(1)) == next_attempt(2, 1_000 + delay_ms(1))

    # A request rescheduled it (or completed it) after the sweep read it: nothing recorded.
    (seen,) = index.overdue(2**40)
    dynamo.put(due_item(0, 200, "g"))
    assert fail(index, seen, 2**40) is None
    assert dynamo.get({schema.PK: "DUE", schema.SK: "g"}, consistent=True) == due_item(0, 200, "g")
    dynamo.delete({schema.PK: "DUE", schema.SK: "g"})
    assert fail(index, seen, 2**40) is None

    # Rewritten since its last failure: the failures in a row start again.
    dynamo.put(due_item(0, 300, "g", **{FAILURES: 4}))
    (due,) = index.overdue(1_000)
    assert fail(index, due, 1_000) == next_attempt(1, 1_000)


# --- sweeps on a budget (in-memory store) ---


def test_a_backlog_of_10000_items_drains_over_sweeps_each_within_its_budget(
    service_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = service_store
    timer = FakeTimer()
    timed_completions(monkeypatch, timer, KIND_TOPIC_CHANGE, ITEM_MS)
    shards = store.settings.deadline_shards
    items = [topic_change(f"backlog-{n}", T0 - BACKLOG + n, shards) for n in range(BACKLOG)]
    store.dynamo.batch_write(puts=items)
    per_shard = Counter(item[schema.DEADLINE_SHARD] for item in items)

    runs: list[tuple[float, int, int]] = []  # (ms taken, completed, deferred)
    while True:
        started = timer()
        budget = Budget.of_ms(BUDGET_MS, margin_ms=MARGIN_MS, timer=timer)
        report = sweeper.sweep(store, T0, budget=budget)
        took_ms = (timer() - started) * 1000
        completed = report.completed.get(KIND_TOPIC_CHANGE, 0)
        runs.append((took_ms, completed, report.deferred))
        assert took_ms <= BUDGET_MS - MARGIN_MS + ITEM_MS, runs
        assert completed > 0 and report.overdue == completed and report.failed == 0, runs
        if len(runs) == 1:
            # Every shard had its turns: each gave as many items as the others, give or take
            # the one in turn when the budget ran low.
            left = Counter(i[schema.DEADLINE_SHARD] for i in pending_topic_changes(store))
            done = {shard: per_shard[shard] - left[shard] for shard in per_shard}
            assert len(done) == shards and max(done.values()) - min(done.values()) <= 1, done
        if not report.remaining:
            assert report.deferred == 0
            break
        assert report.deferred >= 1
        assert len(runs) < 200, "no end to the backlog"

    print(f"\n{BACKLOG} items, budget {BUDGET_MS} ms: {len(runs)} sweeps (ms taken, completed)")
    print([(round(took), completed) for took, completed, _ in runs])
    assert len(runs) >= 3  # several sweeps, each stopped by its budget
    assert sum(completed for _, completed, _ in runs) == BACKLOG  # each once, none lost
    assert pending_topic_changes(store) == []
    assert list(store.deadlines.overdue(2**62)) == []


def test_a_sweep_stops_short_of_its_budget_before_an_item_as_slow_as_its_slowest(
    service_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """However small the margin, a sweep takes no item it has less time left for than its
    slowest one took."""
    store = service_store
    timer = FakeTimer()
    monkeypatch.setitem(
        sweeper.COMPLETIONS, "test", lambda store, due, now: timer.advance(200)
    )  # each item takes 200 ms
    store.dynamo.batch_write(puts=[due_item(0, 100 + n, f"slow-{n}") for n in range(10)])
    started = timer()
    report = sweeper.sweep(store, T0, budget=Budget.of_ms(500, margin_ms=1, timer=timer))
    took_ms = (timer() - started) * 1000
    # Two items fit 500 ms; with 100 ms left, a third (as slow as the slowest) is not taken.
    assert report.overdue == 2 and report.remaining, report
    assert took_ms == pytest.approx(400), took_ms


# --- the handler: its budget, a poison item, the metrics (in-memory store) ---


@pytest.fixture
def recorded_metrics(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, float]]]:
    """The sweeper handler's metrics, one dict per invocation, of this test's invocations: a
    coordinator another test file left running in this process (a session's shared one)
    sweeps on its own thread."""
    invocations: list[dict[str, float]] = []
    tests_thread = threading.current_thread()

    def add_metric(name: str, unit: Any, value: float) -> None:
        if threading.current_thread() is not tests_thread:
            return
        if name == "SweepOverdue":  # the first metric of an invocation
            invocations.append({})
        invocations[-1][name] = value

    monkeypatch.setattr(handlers.metrics, "add_metric", add_metric)
    # As deployed: metrics on (the tests turn Powertools' metrics off).
    monkeypatch.setattr(handlers, "is_metrics_disabled", lambda: False)
    yield invocations


def invoke(handler: Any, timeout_ms: int = 60_000) -> dict[str, Any]:
    return handler(scheduled_event(), LambdaContext("sweeper", timeout_ms=timeout_ms))


@pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")  # add_metric is recorded
def test_the_handler_sweeps_within_what_the_invocation_has_left(
    service_configured: Store,
    recorded_metrics: list[dict[str, float]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = service_configured
    shards = store.settings.deadline_shards
    timer = FakeClock(T0)
    monkeypatch.setattr(store, "clock", timer)  # the handler's budget runs on the store's clock
    timed_completions(monkeypatch, timer, KIND_TOPIC_CHANGE, ITEM_MS)
    # 600 ms of items: more than a sweep of BUDGET_MS gets through.
    store.dynamo.batch_write(puts=[topic_change(f"t{n}", T0, shards) for n in range(6_000)])
    handler = make_sweeper_handler()
    started = timer.monotonic_s()
    # The sweep's budget is what is left less the safety; it stops DEFAULT_MARGIN_MS short.
    report = invoke(handler, timeout_ms=SWEEP_SAFETY_MS + DEFAULT_MARGIN_MS + BUDGET_MS)
    took_ms = (timer.monotonic_s() - started) * 1000
    assert took_ms <= BUDGET_MS + ITEM_MS
    assert report["remaining"] and report["deferred"] >= 1 and report["overdue"] > 0, report
    assert recorded_metrics == [
        {
            "SweepOverdue": report["overdue"],
            "SweepFailed": 0,
            "SweepQuarantined": 0,
            "SweepDeferred": report["deferred"],
        }
    ]


@pytest.mark.filterwarnings("ignore:No application metrics:UserWarning")  # add_metric is recorded
def test_a_poison_item_holds_up_no_other_and_ends_quarantined(
    service_configured: Store,
    monkeypatch: pytest.MonkeyPatch,
    recorded_metrics: list[dict[str, float]],
) -> None:
    store = service_configured
    shards = store.settings.deadline_shards

    def poison(store: Store, due: Overdue, now_ms: int) -> None:
        raise RuntimeError("cannot complete this one")

    monkeypatch.setitem(sweeper.COMPLETIONS, "poison", poison)
    # The oldest item of its shard, so first in line there.
    poison_key = {schema.PK: "POISON", schema.SK: "1"}
    store.dynamo.put(
        {
            **poison_key,
            "kind": "poison",
            "payload": "kept",
            schema.DEADLINE_SHARD: "DL#0",
            schema.DEADLINE: T0 - 1,
        }
    )
    handler = make_sweeper_handler()
    now = T0
    reports = []
    with clock.use(lambda: now):
        for run in range(1, MAX_FAILURES + 2):
            fresh = [topic_change(f"run{run}-{n}", now, shards) for n in range(200)]
            store.dynamo.batch_write(puts=fresh)
            report = invoke(handler)
            reports.append(report)
            # The others are swept whatever the poison item does.
            assert report["completed"] == {KIND_TOPIC_CHANGE: 200}, report
            assert pending_topic_changes(store) == []
            stored = store.dynamo.get(poison_key, consistent=True)
            assert stored is not None and stored["payload"] == "kept"
            if run < MAX_FAILURES:
                # Tried again only after its delay, by a later sweep.
                assert (report["failed"], report["quarantined"]) == (1, 0), report
                assert stored[FAILURES] == run
                assert stored[schema.DEADLINE] == now + delay_ms(run)
                now = stored[schema.DEADLINE]
            elif run == MAX_FAILURES:
                assert (report["failed"], report["quarantined"]) == (1, 1), report
                assert stored[schema.DEADLINE_SHARD] == schema.QUARANTINE_SHARD
                now += 24 * 3_600_000
            else:
                # Quarantined: no sweep takes it again.
                assert (report["overdue"], report["failed"]) == (200, 0), report

    assert [m["SweepFailed"] for m in recorded_metrics] == [1, 1, 1, 1, 1, 0]
    assert [m["SweepQuarantined"] for m in recorded_metrics] == [0, 0, 0, 0, 1, 0]
    (listed,) = quarantined(store.dynamo)
    assert (listed[schema.PK], listed["kind"]) == ("POISON", "poison")
    assert store.dynamo.get(poison_key, consistent=True)[LAST_ERROR] == (
        "RuntimeError: cannot complete this one"
    )

    # Fixed, put back by the operator: the next sweep completes it.
    completed: list[Overdue] = []
    monkeypatch.setitem(sweeper.COMPLETIONS, "poison", lambda s, due, n: completed.append(due))
    put_back(store.dynamo, poison_key, now)
    with clock.use(lambda: now):
        report = invoke(handler)
    assert report["completed"] == {"poison": 1} and report["failed"] == 0
    assert [due.key for due in completed] == [poison_key]
