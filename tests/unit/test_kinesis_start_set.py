"""The binding's start set (core/kinesis/start_set.py): on a stream resharded before the topic
was bound, the shards the binding dates closed before the start are exactly the ancestors of
the shards open at the start, for every start (an AT_TIMESTAMP before the binding, told by
ListShards' AT_TIMESTAMP filter; a LATEST group or an AT_TIMESTAMP at or after the binding);
so a group skips none of the shards open at its start, closed since or not."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.kinesis.binding import InitialPosition, StartingPoint
from groupcoord.core.kinesis.done import done_partitions
from groupcoord.core.kinesis.shards import Shard, plan_registry
from groupcoord.core.kinesis.start_set import closed_before_start, start_listing_ms
from tests.unit.test_kinesis_done import Lived, ancestors_of_roots, history, roots, steps_strategy


def _ids(lived: list[Lived], indexes: set[int]) -> set[str]:
    return {lived[i].row.shard.shard_id for i in indexes}


def _bound(lived: list[Lived], bound_ms: int, start_ms: int) -> set[str]:
    """The ids a group starting at `start_ms` finds done on a topic bound at `bound_ms`
    (after every reshard of the history), as the binding dates them."""
    # The shards as ListShards tells them: lineage by ids, the closed ones with an end.
    listed = [
        replace(s.row.shard, parents=tuple(_ids(lived, set(s.row.parent_indexes)))) for s in lived
    ]
    at_ms = start_listing_ms(InitialPosition(StartingPoint.AT_TIMESTAMP, start_ms), bound_ms)
    # ListShards' ShardFilter AT_TIMESTAMP: the shards open at the time.
    open_then = _ids(lived, roots(lived, at_ms)) if at_ms is not None else set()
    plan = plan_registry((), listed, 1000, bound_ms, closed_before_start(listed, open_then))
    rows = list(plan.added)
    done = done_partitions(rows, set(), start_ms)
    return {row.shard.shard_id for row in rows if row.index in done}


@settings(max_examples=150, deadline=None)
@given(steps=steps_strategy, first=st.integers(1, 4), start=st.integers(0, 20))
def test_a_binding_after_reshards_dates_exactly_the_ancestors_of_the_start_set(
    steps, first, start
) -> None:
    exact = [(split, pick, 0) for split, pick, _ in steps]
    lived = history(exact, first)
    bound_ms = len(steps) + 1  # after every reshard
    # The start before the binding (AT_TIMESTAMP) or at or after it (AT_TIMESTAMP, LATEST).
    assert _bound(lived, bound_ms, start) == _ids(lived, ancestors_of_roots(lived, start))


def test_the_issue_s_skip_shard_0_split_after_the_timestamp_is_read() -> None:
    """Records put into shard 0 after T, shard 0 split, then the topic bound AT_TIMESTAMP T:
    shard 0 was open at T, so it is not done (it was, closed before any group)."""
    listed = [Shard("0", ending_sequence="9"), Shard("1", ("0",)), Shard("2", ("0",))]
    assert closed_before_start(listed, {"0"}) == frozenset()
    rows = plan_registry((), listed, 10, 5000, closed_before_start(listed, {"0"})).added
    assert done_partitions(rows, set(), 4000) == set()
    # Bound after a second split of 1, at a T after the first: 0 is done, 1 is not.
    listed += [Shard("1", ("0",), ending_sequence="20"), Shard("3", ("1",)), Shard("4", ("1",))]
    del listed[1]
    assert closed_before_start(listed, {"1", "2"}) == frozenset({"0"})


def test_a_parent_listed_open_at_the_start_with_its_children_is_not_done() -> None:
    """A split at the very millisecond of the start: Kinesis lists the parent (closed at T)
    and its children (opened at T) open at T; the parent may hold a record of that
    millisecond."""
    listed = [Shard("0", ending_sequence="9"), Shard("1", ("0",)), Shard("2", ("0",))]
    assert closed_before_start(listed, {"0", "1", "2"}) == frozenset()
    # Open shards and shards the listing does not hold are never "closed before".
    assert closed_before_start([Shard("1", ("0",))], {"1"}) == frozenset()


def test_only_an_at_timestamp_before_the_binding_asks_kinesis() -> None:
    at = InitialPosition(StartingPoint.AT_TIMESTAMP, 1000)
    assert start_listing_ms(at, 2000) == 1000
    assert start_listing_ms(at, 1000) is None  # every close so far is at or before it
    assert start_listing_ms(InitialPosition(StartingPoint.LATEST), 2000) is None
    assert start_listing_ms(InitialPosition(StartingPoint.TRIM_HORIZON), 2000) is None
