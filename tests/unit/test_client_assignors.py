"""The classic leader's assignors (client/assignors.py) with blocked partitions (a
Kinesis-backed topic's shards the group may not read yet, which the leader's metadata left
out): none of them is handed out, and what is left is spread as if it were all there is."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.client.assignors import ASSIGNORS, TopicPartition
from groupcoord.wire.consumer_protocol import Subscription


@settings(max_examples=100, deadline=None)
@given(
    name=st.sampled_from(sorted(ASSIGNORS)),
    members=st.integers(1, 4),
    count=st.integers(0, 12),
    blocked=st.sets(st.integers(0, 11)),
)
def test_blocked_partitions_go_to_no_one_and_the_rest_is_balanced(
    name: str, members: int, count: int, blocked: set[int]
) -> None:
    subscriptions = {f"m{i}": Subscription(["t"]) for i in range(members)}
    plan = ASSIGNORS[name](subscriptions, {"t": count}, {"t": frozenset(blocked)})
    given_out = [tp for parts in plan.values() for tp in parts]
    allowed = {TopicPartition("t", p) for p in range(count) if p not in blocked}
    assert sorted(given_out) == sorted(allowed)  # each once, none blocked
    sizes = [len(parts) for parts in plan.values()]
    assert max(sizes) - min(sizes) <= 1


def test_a_cooperative_member_keeps_no_blocked_partition_it_owned() -> None:
    subscriptions = {
        "a": Subscription(["t"], owned_partitions={"t": [0, 1]}, generation_id=3),
        "b": Subscription(["t"], generation_id=3),
    }
    plan = ASSIGNORS["cooperative-sticky"](subscriptions, {"t": 4}, {"t": frozenset({0})})
    assert TopicPartition("t", 1) in plan["a"]  # kept
    assert TopicPartition("t", 0) not in plan["a"] + plan["b"]  # given up, to no one


def test_every_assignor_takes_a_plain_call_with_nothing_blocked() -> None:
    """Topics with no Kinesis shards: callers (the TypeScript client's parity test among them)
    pass only subscriptions and counts, and every partition is handed out."""
    subscriptions = {"a": Subscription(["t"]), "b": Subscription(["t"])}
    for name, assign in ASSIGNORS.items():
        plan = assign(subscriptions, {"t": 4})
        assert sorted(tp for parts in plan.values() for tp in parts) == [
            TopicPartition("t", p) for p in range(4)
        ], name
