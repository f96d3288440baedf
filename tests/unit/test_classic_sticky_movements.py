"""sticky and cooperative-sticky are sticky in the sense of Kafka's `isSticky()` check
(AbstractStickyAssignorTest, after every reassignment): over rounds of random joins, leaves and
subscription changes, no rebalance moves partitions of one topic both ways between two members
(one of them could have kept its own), and a rebalance in which nothing changed moves nothing.
Where every member subscribes to the same topics, a partition that moved from A to B never
moves back from B to A while both stay. With unequal subscriptions balance can force that (see
the last test), so there the check is Kafka's, per rebalance.

A rebalance is measured from what members owned before it to what they own once it settled:
for cooperative-sticky that is after the follow-up round that hands over what was revoked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.client.assignors import (
    Assignment,
    TopicPartition,
    assign_cooperative_sticky,
    assign_sticky,
)
from tests.support.classic_assignors import (
    assert_balanced,
    assert_no_swap_within_a_topic,
    assert_valid,
    moves_between,
    sub,
)

COUNTS = {"a": 3, "b": 4, "c": 2, "d": 5}
TOPICS = st.frozensets(st.sampled_from(sorted(COUNTS)), min_size=1)
# A step: ("join", topics) | ("leave", which) | ("change", which, topics) | ("again",), where
# `which` picks one of the members present (modulo their number).
STEPS = st.one_of(
    st.tuples(st.just("join"), TOPICS),
    st.tuples(st.just("leave"), st.integers(0, 7)),
    st.tuples(st.just("change"), st.integers(0, 7), TOPICS),
    st.tuples(st.just("again")),
)

# Everyone subscribes to every topic: members only come and go.
EQUAL_STEPS = st.one_of(
    st.tuples(st.just("join"), st.just(frozenset(COUNTS))),
    st.tuples(st.just("leave"), st.integers(0, 7)),
    st.tuples(st.just("again")),
)
STICKY = pytest.mark.parametrize("assign", [assign_sticky, assign_cooperative_sticky])

Assign = Callable[..., Assignment]
Owners = dict[TopicPartition, str]


@dataclass(frozen=True)
class Move:
    source: str
    target: str
    rebalance: int


class Group:
    """Members, what each subscribes to and owns, and when each last changed."""

    def __init__(self, assign: Assign) -> None:
        self.assign = assign
        self.topics: dict[str, frozenset[str]] = {}
        self.owned: dict[str, list[TopicPartition]] = {}
        self.changed: dict[str, int] = {}  # member -> the rebalance its subscription last changed
        self.generation = 0
        self.rebalances = 0
        self.joined = 0

    def apply(self, step: tuple) -> None:
        members = sorted(self.topics)
        if step[0] == "join" or not members:
            self.joined += 1
            name = f"m{self.joined}"
            self.topics[name] = next(
                (t for t in step if isinstance(t, frozenset)), frozenset(COUNTS)
            )
            self.owned[name] = []
            self.changed[name] = self.rebalances
        elif step[0] == "leave":
            name = members[step[1] % len(members)]
            del self.topics[name], self.owned[name]
        elif step[0] == "change":
            name = members[step[1] % len(members)]
            if self.topics[name] != step[2]:
                self.topics[name] = step[2]
                self.changed[name] = self.rebalances

    def owners(self) -> Owners:
        return {tp: m for m, parts in self.owned.items() for tp in parts}

    def rebalance(self) -> None:
        """One rebalance: a round, and for cooperative-sticky the follow-up round that hands
        over what the first one withheld (a member that revokes rejoins at once)."""
        self.rebalances += 1
        for _ in range(2):
            self.generation += 1
            subs = {m: sub(t, self.owned[m], self.generation - 1) for m, t in self.topics.items()}
            plan = self.assign(subs, COUNTS)
            revoked = any(set(self.owned[m]) - set(plan[m]) for m in subs)
            self.owned = {m: list(plan[m]) for m in subs}
            if not revoked or self.assign is assign_sticky:
                break
        subs = {m: sub(t, self.owned[m]) for m, t in self.topics.items()}
        assert_valid(subs, COUNTS, self.owned)
        assert_balanced(subs, self.owned)


def run_rounds(
    assign: Assign, first: list[frozenset[str]], steps: list[tuple], no_move_back: bool
) -> None:
    group = Group(assign)
    for topics in first:
        group.apply(("join", topics))
    group.rebalance()
    last_move: dict[TopicPartition, Move] = {}
    for step in steps:
        members = dict(group.topics)
        group.apply(step)
        before = group.owners()
        group.rebalance()
        moves = moves_between(before, group.owners())
        if group.topics == members:
            assert not moves, f"nothing changed, yet {moves} moved"
        assert_no_swap_within_a_topic(moves)
        for tp, (source, target) in moves.items():
            previous = last_move.get(tp)
            if no_move_back and previous and previous == Move(target, source, previous.rebalance):
                unchanged = all(group.changed[m] < previous.rebalance for m in (source, target))
                assert not unchanged, (
                    f"{tp} moved {source} -> {target} and back in rebalances "
                    f"{previous.rebalance} and {group.rebalances}, neither's subscription changed"
                )
            last_move[tp] = Move(source, target, group.rebalances)


@STICKY
@settings(max_examples=150, deadline=None)
@given(first=st.lists(TOPICS, min_size=1, max_size=5), steps=st.lists(STEPS, max_size=8))
def test_no_rebalance_trades_partitions_of_a_topic_between_two_members(
    assign: Assign, first: list[frozenset[str]], steps: list[tuple]
) -> None:
    run_rounds(assign, first, steps, no_move_back=False)


@STICKY
@settings(max_examples=150, deadline=None)
@given(members=st.integers(1, 5), steps=st.lists(EQUAL_STEPS, max_size=8))
def test_with_equal_subscriptions_no_partition_moves_back_and_forth(
    assign: Assign, members: int, steps: list[tuple]
) -> None:
    run_rounds(assign, [frozenset(COUNTS)] * members, steps, no_move_back=True)


def test_a_move_back_that_balance_forces_is_the_only_move_of_its_topic() -> None:
    """A reads a and b, B only b, 4 partitions each. B joins: A keeps a, B takes all of b.
    C joins reading a: whatever C takes from A, balance needs one b back from B to A (C takes
    two a's: A 2, B 4; C takes one: A 3 against C's 1). One b goes back, nothing else of b
    moves: the back move is the price of balance, not a trade."""
    counts = {"a": 4, "b": 4}
    first = assign_sticky({"A": sub("ab")}, counts)
    second = assign_sticky({"A": sub("ab", first["A"], 1), "B": sub("b")}, counts)
    assert sorted(tp.topic for tp in second["B"]) == ["b"] * 4
    subs = {"A": sub("ab", second["A"], 2), "B": sub("b", second["B"], 2), "C": sub("a")}
    third = assign_sticky(subs, counts)
    assert_valid(subs, counts, third)
    assert_balanced(subs, third)
    assert len(set(third["A"]) - set(second["A"])) == 1
    assert set(third["B"]) < set(second["B"]) and len(third["B"]) == 3
