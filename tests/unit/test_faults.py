"""Crash points (groupcoord/faults.py): the named ones, and `write.<n>.before|after` counted per
request scope by the store adapter's write calls."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

import pytest

from groupcoord import faults
from groupcoord.faults import InjectedCrash
from groupcoord.local.memory import memory_store
from groupcoord.settings import Settings
from groupcoord.store.dynamo import ConditionFailed, Put, Update
from groupcoord.store.store import Store


def settings(crash_at: str = "") -> Settings:
    return Settings.from_mapping({"groupcoord.fault.crash.at": crash_at})


def test_points_are_comma_separated_and_trimmed() -> None:
    assert faults.points(settings(" a.b , write.2.after,,")) == {"a.b", "write.2.after"}
    assert faults.points(settings()) == frozenset()


@pytest.mark.parametrize(
    ("point", "generic"),
    [
        ("write.1.before", True),
        ("write.12.after", True),
        ("write.0.before", False),
        ("write.01.before", False),
        ("write.1.during", False),
        ("write.1", False),
        ("conversion.staged", False),
    ],
)
def test_write_points_are_recognised(point: str, generic: bool) -> None:
    assert faults.is_write_point(point) is generic


def test_named_checkpoints_still_crash() -> None:
    reached = faults.checkpoint(settings("conversion.staged"))
    reached("conversion.flipped")
    with pytest.raises(InjectedCrash, match=re.escape("conversion.staged")):
        reached("conversion.staged")


@pytest.fixture
def store() -> Store:
    created = memory_store(Settings.from_mapping({"groupcoord.table.name": "faults-unit"}))
    created.ensure_table()
    return created


def key(n: int) -> dict[str, str]:
    return {"pk": f"faults#{n}", "sk": "x"}


# Every write entry point of the adapter, each one write call.
WRITES: list[Callable[[Store], None]] = [
    lambda s: s.dynamo.put({**key(1), "v": 1}),
    lambda s: s.dynamo.update(Update(key(2), "SET v = :v", values={":v": 2})),
    lambda s: s.dynamo.delete(key(3)),
    lambda s: s.dynamo.transact([Put({**key(4), "v": 4}), Put({**key(5), "v": 5})]),
    lambda s: s.dynamo.batch_write(puts=[{**key(n), "v": n} for n in range(10, 40)]),
]


def test_each_write_entry_point_is_one_write_call(store: Store) -> None:
    with faults.request_scope(settings()) as scope:
        for write in WRITES:
            write(store)
        store.dynamo.get(key(1))  # reads do not count
    assert scope.writes == len(WRITES)  # the 30 puts of the batch write are one call


@pytest.mark.parametrize("n", range(1, len(WRITES) + 1))
def test_before_crashes_before_the_write_is_sent(store: Store, n: int) -> None:
    with faults.request_scope(settings(f"write.{n}.before")) as scope:
        for write in WRITES[: n - 1]:
            write(store)
        with pytest.raises(InjectedCrash, match=re.escape(f"write.{n}.before")):
            WRITES[n - 1](store)
    assert scope.writes == n
    if n == 1:
        assert store.dynamo.get(key(1), consistent=True) is None


@pytest.mark.parametrize("n", range(1, len(WRITES) + 1))
def test_after_crashes_once_the_write_landed(store: Store, n: int) -> None:
    with faults.request_scope(settings(f"write.{n}.after")):
        for write in WRITES[: n - 1]:
            write(store)
        with pytest.raises(InjectedCrash, match=re.escape(f"write.{n}.after")):
            WRITES[n - 1](store)
    if n == 4:  # the transaction landed whole
        assert store.dynamo.get(key(5), consistent=True) is not None


def test_after_crashes_on_a_refused_condition_too(store: Store) -> None:
    # The condition's answer is what the request would act on: it dies before that.
    store.dynamo.put({**key(1), "v": 1})
    with (
        faults.request_scope(settings("write.1.after")),
        pytest.raises(InjectedCrash),
    ):
        store.dynamo.put({**key(1), "v": 2}, condition="attribute_not_exists(pk)")
    with faults.request_scope(settings()), pytest.raises(ConditionFailed):
        store.dynamo.put({**key(1), "v": 2}, condition="attribute_not_exists(pk)")


def test_no_counting_outside_a_request_scope(store: Store) -> None:
    # The sweeper runs outside any request: its writes neither count nor crash.
    for write in WRITES:
        write(store)
    assert store.dynamo.get(key(4), consistent=True) is not None
    assert faults.write_sent() == 0


def test_requests_on_concurrent_threads_count_their_own_writes(store: Store) -> None:
    counts: dict[int, int] = {}
    barrier = threading.Barrier(4)

    def request(thread: int) -> None:
        with faults.request_scope(settings()) as scope:
            for i in range(thread + 1):
                if i == 0:
                    barrier.wait()  # all four requests are under way at once
                store.dynamo.put({**key(100 + 10 * thread + i), "v": i})
        counts[thread] = scope.writes

    threads = [threading.Thread(target=request, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == {0: 1, 1: 2, 2: 3, 3: 4}


def test_observed_reports_each_request_scope_that_ends(store: Store) -> None:
    with faults.observed() as seen:
        with faults.request_scope(settings()):
            store.dynamo.put({**key(1), "v": 1})
        with faults.request_scope(settings()):
            pass
    with faults.request_scope(settings()):
        store.dynamo.put({**key(1), "v": 1})
    assert seen == [1, 0]
