"""The shard registry's rules (core/kinesis/shards.py) and the binding's (binding.py): indexes
given once, in lineage order, whatever the listings return or omit; the configs refused."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.kinesis.binding import (
    INITIAL_POSITION,
    STREAM_ARN,
    BindingAsked,
    InitialPosition,
    StartingPoint,
    binding_asked,
)
from groupcoord.core.kinesis.shards import (
    RegistryPlan,
    Shard,
    ShardRow,
    blocked_partitions,
    heirs,
    lineage_order,
    plan_registry,
    sequence_key,
)
from groupcoord.core.topics import Refusal
from groupcoord.errors import Errors

ARN = "arn:aws:kinesis:us-east-1:000000000000:stream/orders"


def reshard_history(operations: list[tuple[bool, int]], first: int) -> list[Shard]:
    """The shards of a stream that starts with `first` open shards and then splits (True) or
    merges (False, with its neighbour) the open shard at each position: every shard it ever
    had, closed ones with an ending sequence number, in creation order."""
    sequence = 0

    def next_sequence() -> str:
        nonlocal sequence
        sequence += 1000
        return str(sequence * 10**40)  # beyond an int64, as Kinesis' are

    shards: dict[str, Shard] = {}
    open_ids: list[str] = []
    for i in range(first):
        shards[f"s{i}"] = Shard(f"s{i}", starting_sequence=next_sequence())
        open_ids.append(f"s{i}")
    for number, (split, position) in enumerate(operations):
        at = position % len(open_ids)
        if not split and len(open_ids) < 2:
            split = True
        parents = [open_ids[at]] if split else [open_ids[at], open_ids[(at + 1) % len(open_ids)]]
        for parent in parents:
            shards[parent] = Shard(
                parent,
                shards[parent].parents,
                starting_sequence=shards[parent].starting_sequence,
                ending_sequence=next_sequence(),
            )
            open_ids.remove(parent)
        children = [f"c{number}a", f"c{number}b"] if split else [f"c{number}"]
        for child in children:
            # A merge's child names its parents (parent, adjacent parent); a split's both.
            shards[child] = Shard(child, tuple(parents), starting_sequence=next_sequence())
            open_ids.append(child)
    return list(shards.values())


def apply(rows: list[ShardRow], plan: RegistryPlan) -> list[ShardRow]:
    by_index = {row.index: row for row in rows}
    for row in [*plan.closed, *plan.added, *plan.expired]:
        by_index[row.index] = row
    return [by_index[i] for i in sorted(by_index)]


@settings(max_examples=200, deadline=None)
@given(
    operations=st.lists(st.tuples(st.booleans(), st.integers(0, 50)), max_size=12),
    first=st.integers(1, 4),
    listings=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 40)), max_size=6),
    limit=st.integers(1, 60),
)
def test_indexes_are_given_once_in_lineage_order_whatever_the_listings(
    operations: list[tuple[bool, int]],
    first: int,
    listings: list[tuple[float, int]],
    limit: int,
) -> None:
    history = reshard_history(operations, first)
    rows: list[ShardRow] = []
    seen: dict[str, int] = {}
    # Listings as time goes on: the shards created by then, less the oldest closed ones once
    # they expired past the retention (never listed again).
    times = [*sorted(progress for progress, _ in listings), 1.0]
    expiries = [*sorted(expired for _, expired in listings), 0]
    for progress, expired in zip(times, [*expiries[:-1], max(expiries)], strict=True):
        upto = max(1, round(progress * len(history)))
        listed = [s for i, s in enumerate(history[:upto]) if i >= expired or not s.closed]
        plan = plan_registry(rows, listed, limit)
        rows = apply(rows, plan)
        assert [row.index for row in rows] == list(range(len(rows)))  # append-only, dense
        assert len(rows) <= limit
        ids = [row.shard.shard_id for row in rows]
        assert len(set(ids)) == len(ids)  # a shard has one index
        for row in rows:
            assert seen.setdefault(row.shard.shard_id, row.index) == row.index  # never moved
        index_of = {row.shard.shard_id: row.index for row in rows}
        for row in rows:
            for parent in row.shard.parents:
                if parent in index_of:
                    assert index_of[parent] < row.index  # parents first
            # Its parents' partitions, as far as the registry had them when it was added.
            assert set(row.parent_indexes) <= {
                index_of[p] for p in row.shard.parents if p in index_of
            }
            if max(expiries) == 0:
                assert set(row.parent_indexes) == {
                    index_of[p] for p in row.shard.parents if p in index_of
                }
        # A second sync of the same listing changes nothing.
        assert not plan_registry(rows, listed, limit).changed
    if len(history) <= limit and max(expiries) == 0:
        assert {row.shard.shard_id for row in rows} == {s.shard_id for s in history}
        closed = {s.shard_id for s in history if s.closed}
        assert {row.shard.shard_id for row in rows if row.shard.closed} == closed


def timed_history(
    operations: list[tuple[bool, int]], first: int
) -> list[tuple[Shard, int, int | None]]:
    """reshard_history with times: the `first` shards are created at 0 and operation i runs at
    i + 1 (its parents close then, its children are created then). Each shard as it is once
    closed, when it was created and when it closed (None: open to the end)."""
    history = reshard_history(operations, first)
    created = {s.shard_id: 0 for s in history[:first]}
    for number in range(len(operations)):
        for child in (f"c{number}a", f"c{number}b", f"c{number}"):
            created[child] = number + 1
    closed_at: dict[str, int] = {}
    for shard in history:
        for parent in shard.parents:
            closed_at.setdefault(parent, created[shard.shard_id])
    return [(s, created[s.shard_id], closed_at.get(s.shard_id)) for s in history]


def listing_at(history: list[tuple[Shard, int, int | None]], t: int, retention: int) -> list[Shard]:
    """What ListShards shows at `t`: the shards created by then, open ones without their end,
    less the closed ones past the retention."""
    return [
        shard if closed is not None and closed <= t else replace(shard, ending_sequence=None)
        for shard, created, closed in history
        if created <= t and (closed is None or closed + retention > t)
    ]


@settings(max_examples=200, deadline=None)
@given(
    operations=st.lists(st.tuples(st.booleans(), st.integers(0, 50)), max_size=12),
    first=st.integers(1, 4),
    retention=st.integers(1, 6),
    syncs=st.lists(st.integers(0, 24), min_size=1, max_size=6),
)
def test_every_shard_gone_from_a_complete_listing_is_expired_and_lets_its_children_go(
    operations: list[tuple[bool, int]], first: int, retention: int, syncs: list[int]
) -> None:
    """Syncs at any times, however far apart: a shard that closed and expired between two of
    them (never seen closed) is marked expired like one seen closed; an open shard never is;
    an expired parent holds no child back."""
    history = timed_history(operations, first)
    gone_by = {s.shard_id: c + retention for s, _, c in history if c is not None}
    rows: list[ShardRow] = []
    for t in sorted(syncs):
        listed = listing_at(history, t, retention)
        rows = apply(rows, plan_registry(rows, listed, 1000, t))
        for row in rows:
            gone = gone_by.get(row.shard.shard_id)
            if gone is not None and gone <= t:
                assert row.expired_at_ms is not None and row.expired_at_ms <= t
                assert row.closed_at_ms is not None
            if row.expired_at_ms is not None:
                assert gone is not None and gone <= row.expired_at_ms  # truly gone then
        done = {row.index for row in rows if row.expired_at_ms is not None}
        blocked = blocked_partitions(rows, done)
        for row in rows:
            if row.index not in done and set(row.parent_indexes) <= done:
                assert row.index not in blocked
        assert not plan_registry(rows, listed, 1000, t).changed


def test_a_shard_that_closed_and_expired_between_two_syncs_is_expired() -> None:
    rows = [ShardRow(0, Shard("s0")), ShardRow(1, Shard("s1"))]
    # s0 split into s2 and s3, and expired, all since the last sync.
    listed = [Shard("s1"), Shard("s2", ("s0",)), Shard("s3", ("s0",))]
    plan = plan_registry(rows, listed, 10, 7000)
    assert plan.expired == (ShardRow(0, Shard("s0"), closed_at_ms=7000, expired_at_ms=7000),)
    assert [row.parent_indexes for row in plan.added] == [(0,), (0,)]
    # A listing that may have been cut short by the limit marks nothing.
    assert plan_registry(rows, listed, 3, 7000).expired == ()


def test_lineage_order_parents_first_then_starting_sequence() -> None:
    parent = Shard("z", starting_sequence="5")
    other = Shard("a", starting_sequence="900")
    child = Shard("b", ("z",), starting_sequence="10")
    merged = Shard("c", ("b", "a"), starting_sequence="20000")
    order = lineage_order([merged, child, other, parent])
    assert [s.shard_id for s in order] == ["z", "b", "a", "c"]
    # A parent already in the registry holds nothing back; an unknown one neither.
    assert [s.shard_id for s in lineage_order([merged, other], known=["b"])] == ["a", "c"]
    assert [s.shard_id for s in lineage_order([Shard("x", ("gone",))])] == ["x"]


def test_a_cycle_is_broken_not_looped_on() -> None:
    looped = [Shard("a", ("b",), starting_sequence="2"), Shard("b", ("a",), starting_sequence="1")]
    assert [s.shard_id for s in lineage_order(looped)] == ["b", "a"]


@given(st.integers(0, 10**129 - 1), st.integers(0, 10**129 - 1))
def test_sequence_numbers_compare_as_integers(a: int, b: int) -> None:
    assert (sequence_key(str(a)) < sequence_key(str(b))) == (a < b)


def test_a_closed_shard_updates_its_row_and_keeps_its_index() -> None:
    rows = [ShardRow(0, Shard("s0")), ShardRow(1, Shard("s1"))]
    listed = [Shard("s0", ending_sequence="99"), Shard("s1"), Shard("s2", ("s0",))]
    plan = plan_registry(rows, listed, 10, 5000)
    assert plan.closed == (ShardRow(0, Shard("s0", ending_sequence="99"), closed_at_ms=5000),)
    assert plan.added == (ShardRow(2, Shard("s2", ("s0",)), (0,)),)
    # Past the limit: the rest waits, and is counted.
    assert plan_registry(rows, listed, 2).added == ()
    assert plan_registry(rows, listed, 2).left_out == 1


def asked(configs: dict[str, str], partitions: int = -1, allowed: frozenset[str] = frozenset()):
    return binding_asked(list(configs.items()), partitions, 0, allowed)


def test_binding_configs() -> None:
    assert asked({}) is None
    assert asked({"cleanup.policy": "delete"}) is None  # not a Kinesis topic
    assert asked({STREAM_ARN: ARN}) == BindingAsked(ARN, InitialPosition())
    assert asked({STREAM_ARN: ARN, INITIAL_POSITION: "LATEST"}) == BindingAsked(
        ARN, InitialPosition(StartingPoint.LATEST)
    )
    at = asked({STREAM_ARN: ARN, INITIAL_POSITION: "AT_TIMESTAMP:1700000000000"})
    assert at == BindingAsked(ARN, InitialPosition(StartingPoint.AT_TIMESTAMP, 1700000000000))
    assert isinstance(at, BindingAsked)
    assert InitialPosition.decode(at.initial_position.encode()) == at.initial_position


def refusal_of(found: object) -> Errors:
    assert isinstance(found, Refusal), found
    return found.error


def test_binding_refusals() -> None:
    assert refusal_of(asked({INITIAL_POSITION: "LATEST"})) == Errors.INVALID_CONFIG
    assert refusal_of(asked({STREAM_ARN: "orders"})) == Errors.INVALID_CONFIG
    assert refusal_of(asked({STREAM_ARN: ARN + "/x"})) == Errors.INVALID_CONFIG
    assert refusal_of(asked({STREAM_ARN: ARN, INITIAL_POSITION: "AT_TIMESTAMP:x"})) == (
        Errors.INVALID_CONFIG
    )
    assert refusal_of(asked({STREAM_ARN: ARN, "groupcoord.kinesis.x": "1"})) == (
        Errors.INVALID_CONFIG
    )
    assert refusal_of(asked({STREAM_ARN: ARN}, partitions=3)) == Errors.INVALID_PARTITIONS
    other = frozenset({ARN.replace("orders", "payments")})
    assert refusal_of(asked({STREAM_ARN: ARN}, allowed=other)) == Errors.INVALID_CONFIG
    assert isinstance(asked({STREAM_ARN: ARN}, allowed=other | {ARN}), BindingAsked)


def test_children_wait_for_every_parent_per_group() -> None:
    rows = [
        ShardRow(0, Shard("a", ending_sequence="9")),
        ShardRow(1, Shard("b", ending_sequence="9")),
        ShardRow(2, Shard("c", ("a", "b")), (0, 1)),  # a merge of a and b
        ShardRow(3, Shard("d", ("gone",))),  # its parent expired before it was seen
    ]
    assert blocked_partitions(rows, set()) == {2}
    assert blocked_partitions(rows, {0}) == {0, 2}  # one parent done is not enough
    assert blocked_partitions(rows, {0, 1}) == {0, 1}
    assert heirs(rows) == {0: (2,), 1: (2,)}
