"""Which shards are done for a group (core/kinesis/done.py) and what a sync dates (closed,
expired) in the registry (shards.plan_registry): a LATEST or AT_TIMESTAMP group's done shards
are exactly the ancestors of the shards open at its start when closes are dated at once, never
more when the registry learns a close late; an expired shard is done for everyone and leaves
metadata after the grace period."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.kinesis.binding import InitialPosition, StartingPoint
from groupcoord.core.kinesis.done import done_partitions, row_done, start_ms
from groupcoord.core.kinesis.shards import (
    Shard,
    ShardRow,
    blocked_partitions,
    listed_in_metadata,
    plan_registry,
)


@dataclass
class Lived:
    """A shard of a simulated stream: when it was created and closed (true times)."""

    row: ShardRow
    created: int
    closed: int | None = None


def history(steps: list[tuple[bool, int, int]], first: int) -> list[Lived]:
    """A stream with `first` shards at time 0, then at times 1, 2, ... a split (True) or a
    merge (of two open shards) picked by position; each close dated by the registry `delay`
    later (0: at once). Rows in creation order, parents before children."""
    lived = [Lived(ShardRow(i, Shard(f"s{i}")), 0) for i in range(first)]
    for when, (split, pick, delay) in enumerate(steps, start=1):
        open_ = [shard for shard in lived if shard.closed is None]
        parents = [open_[pick % len(open_)]]
        if not split and len(open_) > 1:
            parents.append(open_[(pick + 1) % len(open_)])
        for parent in parents:
            parent.closed = when
            parent.row = ShardRow(
                parent.row.index,
                Shard(parent.row.shard.shard_id, ending_sequence="1"),
                parent.row.parent_indexes,
                closed_at_ms=when + delay,
            )
        indexes = tuple(p.row.index for p in parents)
        for _ in range(2 if split else 1):
            index = len(lived)
            shard = Shard(f"s{index}", tuple(p.row.shard.shard_id for p in parents))
            lived.append(Lived(ShardRow(index, shard, indexes), when))
    return lived


def roots(lived: list[Lived], start: int) -> set[int]:
    """The shards open when the group started."""
    return {
        s.row.index for s in lived if s.created <= start and (s.closed is None or s.closed > start)
    }


def ancestors_of_roots(lived: list[Lived], start: int) -> set[int]:
    """The contract's definition: the shards open at the start are the roots; their parents,
    grandparents... are done."""
    parents = {shard.row.index: shard.row.parent_indexes for shard in lived}
    found: set[int] = set()
    stack = [p for root in roots(lived, start) for p in parents[root]]
    while stack:
        index = stack.pop()
        if index not in found:
            found.add(index)
            stack.extend(parents[index])
    return found


steps_strategy = st.lists(
    st.tuples(st.booleans(), st.integers(0, 50), st.integers(0, 3)), max_size=12
)


@settings(max_examples=120, deadline=None)
@given(steps=steps_strategy, first=st.integers(1, 4), start=st.integers(0, 14))
def test_done_at_start_is_the_ancestors_of_the_roots(steps, first, start) -> None:
    exact = [(split, pick, 0) for split, pick, _ in steps]
    lived = history(exact, first)
    rows = [s.row for s in lived]
    done = done_partitions(rows, set(), start)
    assert done == ancestors_of_roots(lived, start)
    # Every root is assignable at once: not done, and its parents all are.
    assert not roots(lived, start) & blocked_partitions(rows, done)


@settings(max_examples=120, deadline=None)
@given(steps=steps_strategy, first=st.integers(1, 4), start=st.integers(0, 14))
def test_a_close_learned_late_never_skips_a_shard_the_group_should_read(
    steps, first, start
) -> None:
    lived = history(steps, first)
    rows = [s.row for s in lived]
    assert done_partitions(rows, set(), start) <= ancestors_of_roots(lived, start)


@settings(max_examples=60, deadline=None)
@given(steps=steps_strategy, first=st.integers(1, 4), ended=st.sets(st.integers(0, 40)))
def test_trim_horizon_counts_only_ends_and_expiry(steps, first, ended) -> None:
    rows = [s.row for s in history(steps, first)]
    started = start_ms(InitialPosition(), 5)
    assert started is None
    assert done_partitions(rows, ended, started) == ended & {r.index for r in rows}
    gone = ShardRow(0, Shard("s0", ending_sequence="1"), closed_at_ms=3, expired_at_ms=9)
    assert row_done(gone, False, started)


def test_the_start_of_each_initial_position() -> None:
    assert start_ms(InitialPosition(StartingPoint.LATEST), 1234) == 1234
    assert start_ms(InitialPosition(StartingPoint.AT_TIMESTAMP, 77), 1234) == 77
    assert start_ms(InitialPosition(StartingPoint.TRIM_HORIZON), 1234) is None


def test_a_sync_dates_closes_and_expiries() -> None:
    # The binding's first listing dates what is closed already at the binding, but for the
    # shards known closed before its groups' start (core/kinesis/start_set.py): 0.
    bound = [Shard("a", ending_sequence="9"), Shard("b", ("a",)), Shard("c", ("a",))]
    assert [r.closed_at_ms for r in plan_registry((), bound, 10, 500).added] == [500, None, None]
    first = plan_registry((), bound, 10, 500, frozenset({"a"}))
    assert [r.closed_at_ms for r in first.added] == [0, None, None]
    rows = list(first.added)
    # b closes (split into d, e); a is no longer listed: it expired, dated now.
    listed = [
        Shard("b", ("a",), ending_sequence="20"),
        Shard("c", ("a",)),
        Shard("d", ("b",)),
        Shard("e", ("b",)),
    ]
    plan = plan_registry(rows, listed, 10, 7000)
    assert [(r.index, r.closed_at_ms) for r in plan.closed] == [(1, 7000)]
    assert [(r.index, r.expired_at_ms) for r in plan.expired] == [(0, 7000)]
    assert plan.changed
    # A shard the registry has open that a listing no longer shows closed and expired since
    # the last sync: expired too, its close dated now; nothing when the listing may have been
    # cut short by the partition limit.
    assert plan_registry(rows, [Shard("b", ("a",))], 10, 8000).expired == (
        ShardRow(0, rows[0].shard, (), 0, 8000),
        ShardRow(2, rows[2].shard, (0,), 8000, 8000),
    )
    assert plan_registry(rows, listed[:3], 3, 8000).expired == ()
    # Expired once, dated once.
    again = [*plan.added, plan.closed[0], plan.expired[0], rows[2]]
    assert plan_registry(again, listed, 10, 9000).expired == ()
    assert not plan_registry(again, listed, 10, 9000).changed


def test_an_expired_shard_leaves_metadata_after_the_grace_period() -> None:
    row = ShardRow(0, Shard("a", ending_sequence="9"), closed_at_ms=0, expired_at_ms=1000)
    assert listed_in_metadata(row, 1999, 1000)
    assert not listed_in_metadata(row, 2000, 1000)
    assert not listed_in_metadata(row, 1000, 0)
    assert listed_in_metadata(ShardRow(1, Shard("b")), 10**12, 0)
