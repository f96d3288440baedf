"""The server assignors held to what Kafka's group coordinator tests assert of its own
(UniformHomogeneousAssignmentBuilderTest, UniformHeterogeneousAssignmentBuilderTest,
CommonAssignorTests, RangeAssignorTest).

Uniform: every assignable partition of a subscribed topic goes to exactly one of its
subscribers; balanced (homogeneous: any two members within one partition; heterogeneous, as
Kafka defines it: no partition of a topic could move to another subscriber of that topic with
two or more fewer partitions in all); sticky (a member keeps what it had where balance allows).
Where Kafka asserts one exact answer, an answer as balanced and moving no more partitions is
accepted. Range: Kafka's exact layout, co-partitioned when every member subscribes to the same
topics of one partition count, static members ordered by instance id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.consumer.assignment import Assignment, pairs, size
from groupcoord.core.consumer.assignors import AssignorMember, assign_range, assign_uniform

Spec = tuple[str, set[str], Mapping[str, Sequence[int]]]  # member id, subscription, previous
Result = Mapping[str, Assignment]


def _members(specs: Sequence[Spec]) -> list[AssignorMember]:
    return [
        AssignorMember(m, frozenset(subs), {t: frozenset(ps) for t, ps in prev.items() if ps})
        for m, subs, prev in specs
    ]


def _load(result: Result, member_id: str) -> int:
    return size(result.get(member_id, {}))


def check_valid(members: Sequence[AssignorMember], topics: Mapping[str, int], result: Result):
    """Every partition of a subscribed topic to exactly one of its subscribers; nothing else."""
    by_id = {m.member_id: m for m in members}
    assert set(result) <= set(by_id)
    owners: dict[tuple[str, int], list[str]] = {}
    for member_id, assignment in result.items():
        for tp in pairs(assignment):
            owners.setdefault(tp, []).append(member_id)
    subscribed = {t for m in members for t in m.topics if t in topics}
    assert set(owners) == {(t, p) for t in subscribed for p in range(topics[t])}
    for (topic, partition), holders in owners.items():
        assert len(holders) == 1, f"{topic}-{partition} has owners {holders}"
        assert topic in by_id[holders[0]].topics


def check_balanced(members: Sequence[AssignorMember], topics: Mapping[str, int], result: Result):
    """Kafka's balance: homogeneous, within one; heterogeneous, no partition of a topic can move
    from its owner to a subscriber of that topic with two or more fewer partitions."""
    loads = {m.member_id: _load(result, m.member_id) for m in members}
    if len({frozenset(m.topics & topics.keys()) for m in members}) == 1:
        assert max(loads.values()) - min(loads.values()) <= 1, loads
        return
    for topic in topics:
        subscribers = [m.member_id for m in members if topic in m.topics]
        holders = [m for m in subscribers if result.get(m, {}).get(topic)]
        if holders:
            lightest = min(loads[m] for m in subscribers)
            heaviest = max(loads[m] for m in holders)
            assert heaviest - lightest <= 1, (topic, loads)


def _kept_claims(members: Sequence[AssignorMember], topics: Mapping[str, int]) -> dict:
    """Each member's previous partitions it may keep: still subscribed, still existing, and
    not claimed by a member earlier in member-id order."""
    taken: set[tuple[str, int]] = set()
    claims: dict[str, set[tuple[str, int]]] = {}
    for m in sorted(members, key=lambda m: m.member_id):
        mine = {
            (t, p)
            for t, p in pairs(m.previous)
            if t in m.topics and p < topics.get(t, 0) and (t, p) not in taken
        }
        taken |= mine
        claims[m.member_id] = mine
    return claims


def moved(members: Sequence[AssignorMember], topics: Mapping[str, int], result: Result) -> int:
    """How many partitions a member could have kept went elsewhere."""
    claims = _kept_claims(members, topics)
    return sum(len(c - pairs(result.get(m, {}))) for m, c in claims.items())


def _sticky_within_topics(members, topics, result) -> None:
    """No member gives up a partition of a topic while taking a new one of the same topic:
    keeping the old one instead is as balanced and moves one partition fewer."""
    claims = _kept_claims(members, topics)
    for m in members:
        now = pairs(result.get(m.member_id, {}))
        lost = {t for t, _ in claims[m.member_id] - now}
        gained = {t for t, _ in now - pairs(m.previous)}
        assert not lost & gained, (m.member_id, lost & gained)


def _as_good_as_kafka(specs, topics, expected) -> None:
    members = _members(specs)
    result = assign_uniform(members, topics)
    check_valid(members, topics, result)
    check_balanced(members, topics, result)
    kafka = {m: {t: frozenset(ps) for t, ps in a.items()} for m, a in expected.items()}
    assert moved(members, topics, result) <= moved(members, topics, kafka)
    spread = [_load(result, m.member_id) for m in members]
    kafka_spread = [_load(kafka, m.member_id) for m in members]
    assert max(spread) - min(spread) <= max(kafka_spread) - min(kafka_spread)


AB = {"t1", "t2"}
# (test, topics, members, Kafka's answer) from the Uniform*AssignmentBuilderTest files.
UNIFORM_CASES = {
    "homogeneous first assignment, two members, two topics": (
        {"t1": 3, "t3": 2},
        [("A", {"t1", "t3"}, {}), ("B", {"t1", "t3"}, {})],
        {"A": {"t3": [0, 1]}, "B": {"t1": [0, 1, 2]}},
    ),
    "homogeneous, more members than partitions": (
        {"t3": 2},
        [("A", {"t3"}, {}), ("B", {"t3"}, {}), ("C", {"t3"}, {})],
        {"A": {}, "B": {"t3": [0]}, "C": {"t3": [1]}},
    ),
    "homogeneous, unbalanced previous assignment": (
        {"t1": 3, "t2": 3},
        [("A", AB, {"t1": [0, 1], "t2": [0, 1]}), ("B", AB, {"t1": [2], "t2": [2]})],
        {"A": {"t1": [0, 1], "t2": [0]}, "B": {"t1": [2], "t2": [1, 2]}},
    ),
    "homogeneous, partitions added": (
        {"t1": 6, "t2": 5},
        [("A", AB, {"t1": [0, 2], "t2": [0]}), ("B", AB, {"t1": [1], "t2": [1, 2]})],
        {"A": {"t1": [0, 2], "t2": [0, 3, 4]}, "B": {"t1": [1, 3, 4, 5], "t2": [1, 2]}},
    ),
    "homogeneous, a member added": (
        {"t1": 3, "t2": 3},
        [
            ("A", AB, {"t1": [0, 2], "t2": [0]}),
            ("B", AB, {"t1": [1], "t2": [1, 2]}),
            ("C", AB, {}),
        ],
        {"A": {"t1": [0, 2]}, "B": {"t1": [1], "t2": [1]}, "C": {"t2": [0, 2]}},
    ),
    "homogeneous, a member removed": (
        {"t1": 3, "t2": 3},
        [("A", AB, {"t1": [0], "t2": [0]}), ("B", AB, {"t1": [1], "t2": [1]})],
        {"A": {"t1": [0], "t2": [0, 2]}, "B": {"t1": [1, 2], "t2": [1]}},
    ),
    "homogeneous, a subscription removed": (
        {"t1": 2, "t2": 2},
        [("A", {"t2"}, {"t1": [0], "t2": [0]}), ("B", {"t2"}, {"t1": [1], "t2": [1]})],
        {"A": {"t2": [0]}, "B": {"t2": [1]}},
    ),
    "heterogeneous first assignment, two members, two topics": (
        {"t1": 3, "t3": 6},
        [("A", {"t1", "t3"}, {}), ("B", {"t3"}, {})],
        {"A": {"t1": [0, 1, 2], "t3": [4]}, "B": {"t3": [0, 1, 2, 3, 5]}},
    ),
    "heterogeneous, more members than partitions": (
        {"t1": 2, "t3": 1},
        [("A", {"t3"}, {}), ("B", {"t3"}, {}), ("C", {"t1"}, {})],
        {"A": {"t3": [0]}, "B": {}, "C": {"t1": [0, 1]}},
    ),
    "heterogeneous, unbalanced previous assignment": (
        {"t1": 6, "t2": 4, "t3": 4},
        [
            ("A", {"t1"}, {"t1": [0, 1, 2]}),
            ("B", AB, {"t1": [3], "t2": [0]}),
            ("C", {"t1", "t2", "t3"}, {"t1": [4, 5], "t2": [1, 2, 3], "t3": [0, 1, 2, 3]}),
        ],
        {
            "A": {"t1": [0, 1, 2, 5]},
            "B": {"t1": [3], "t2": [0, 1, 2, 3]},
            "C": {"t1": [4], "t3": [0, 1, 2, 3]},
        },
    ),
    "heterogeneous, partitions added": (
        {"t1": 6, "t2": 5, "t3": 3, "t4": 3},
        [
            ("A", {"t1", "t3"}, {"t1": [0, 1, 2, 3], "t3": [0, 1]}),
            ("B", {"t1", "t2", "t3", "t4"}, {"t2": [0, 1, 2], "t4": [0, 1, 2]}),
        ],
        {
            "A": {"t1": [0, 1, 2, 3, 4, 5], "t3": [0, 1, 2]},
            "B": {"t2": [0, 1, 2, 3, 4], "t4": [0, 1, 2]},
        },
    ),
    "heterogeneous, a member and partitions added": (
        {"t1": 6, "t2": 7},
        [
            ("A", {"t1"}, {"t1": [0, 2], "t2": [0]}),
            ("B", AB, {"t1": [1], "t2": [1, 2]}),
            ("C", AB, {}),
        ],
        {
            "A": {"t1": [0, 2, 3, 4, 5]},
            "B": {"t1": [1], "t2": [1, 2, 6]},
            "C": {"t2": [0, 3, 4, 5]},
        },
    ),
    "heterogeneous, a member removed": (
        {"t1": 3, "t2": 8, "t3": 3},
        [("A", {"t1", "t3"}, {"t1": [0, 1, 2], "t3": [0, 1]}), ("B", {"t2"}, {"t2": [3, 4, 5, 6]})],
        {"A": {"t1": [0, 1, 2], "t3": [0, 1, 2]}, "B": {"t2": list(range(8))}},
    ),
    "heterogeneous, a subscription removed": (
        {"t1": 3, "t2": 5},
        [("A", {"t1"}, {"t1": [0, 2], "t2": [1, 3]}), ("B", AB, {"t1": [1], "t2": [0, 2, 4]})],
        {"A": {"t1": [0, 1, 2]}, "B": {"t2": [0, 1, 2, 3, 4]}},
    ),
    "heterogeneous, a topic's partitions run out before its subscribers balance": (
        {"t1": 2, "t2": 2, "t3": 2},
        [
            ("A", {"t1", "t2", "t3"}, {"t1": [0, 1], "t2": [0, 1], "t3": [0, 1]}),
            ("B", {"t1", "t2", "t3"}, {}),
        ],
        {"A": {"t2": [0], "t3": [0, 1]}, "B": {"t1": [0, 1], "t2": [1]}},
    ),
    "heterogeneous, one member without subscriptions": (
        {"t1": 3},
        [("A", {"t1"}, {}), ("B", set(), {})],
        {"A": {"t1": [0, 1, 2]}, "B": {}},
    ),
}


@pytest.mark.parametrize("case", UNIFORM_CASES)
def test_uniform_is_as_balanced_and_as_sticky_as_kafkas_answer(case: str) -> None:
    topics, specs, expected = UNIFORM_CASES[case]
    _as_good_as_kafka(specs, topics, expected)


@pytest.mark.parametrize("subscriptions", [[set(), set()], [{"t2"}], [{"t3"}, {"t2"}]])
def test_uniform_gives_nothing_without_an_existing_subscribed_topic(subscriptions) -> None:
    """Kafka: no subscriptions, no assignment; a topic missing from the metadata is an
    assignor error there, here a topic nobody can be given (its id never resolved)."""
    members = _members([(f"m{i}", s, {}) for i, s in enumerate(subscriptions)])
    result = assign_uniform(members, {"t1": 3})
    assert all(not a for a in result.values())


@pytest.mark.parametrize("shared", [True, False])
def test_uniform_reassigning_its_own_answer_changes_nothing_in_any_member_order(shared) -> None:
    """CommonAssignorTests.testReassignmentStickiness, both subscription shapes."""
    topics = {"t1": 2, "t2": 5, "t3": 7}
    subs = [set(topics)] * 3 if shared else [set(topics), {"t2", "t3"}, {"t3"}]
    members = _members([(m, s, {}) for m, s in zip("ABC", subs, strict=True)])
    first = assign_uniform(members, topics)
    for order in permutations(members):
        again = [AssignorMember(m.member_id, m.topics, first[m.member_id]) for m in order]
        assert assign_uniform(again, topics) == first


def test_uniform_balances_kafkas_large_sample() -> None:
    """testValidityAndBalanceForLargeSampleSet: 100 topics of 3 partitions, 49 members."""
    topics = {f"topic-{i}": 3 for i in range(1, 101)}
    members = _members([(f"member{i}", set(topics), {}) for i in range(1, 50)])
    result = assign_uniform(members, topics)
    check_valid(members, topics, result)
    check_balanced(members, topics, result)


TOPIC_NAMES = ["t1", "t2", "t3", "t4"]
topic_counts = st.dictionaries(st.sampled_from(TOPIC_NAMES), st.integers(0, 12), min_size=1)


@st.composite
def groups(draw, homogeneous: bool | None = None) -> tuple[dict[str, int], list[AssignorMember]]:
    """Random topics and members whose previous targets are stale: partitions since deleted,
    topics since unsubscribed, partitions another member claims too."""
    topics = draw(topic_counts)
    count = draw(st.integers(1, 7))
    shared = frozenset(draw(st.sets(st.sampled_from(TOPIC_NAMES), min_size=1)))
    same = draw(st.booleans()) if homogeneous is None else homogeneous
    members = []
    for i in range(count):
        subs = shared if same else frozenset(draw(st.sets(st.sampled_from(TOPIC_NAMES))))
        previous = draw(
            st.dictionaries(
                st.sampled_from(TOPIC_NAMES),
                st.frozensets(st.integers(0, 14), min_size=1),
                max_size=3,
            )
        )
        members.append(AssignorMember(f"m{i}", subs, previous))
    return topics, members


@settings(max_examples=200, deadline=None)
@given(groups())
def test_uniform_is_valid_balanced_and_sticky_within_topics(group) -> None:
    topics, members = group
    result = assign_uniform(members, topics)
    check_valid(members, topics, result)
    check_balanced(members, topics, result)
    _sticky_within_topics(members, topics, result)


def test_uniform_keeps_a_claimed_partition_rather_than_swap_it_for_a_free_one() -> None:
    """m3 keeps t1-8 (it had it and still subscribes) while free t1 partitions fill it up;
    it used to hand t1-8 to m4 while taking t1-1..7."""
    topics = {"t1": 9, "t4": 2}
    members = _members(
        [
            ("m0", {"t2", "t4"}, {}),
            ("m3", {"t1"}, {"t1": [8]}),
            ("m4", {"t1", "t2", "t3", "t4"}, {"t1": [0], "t2": [0], "t4": [0, 1]}),
        ]
    )
    result = assign_uniform(members, topics)
    check_valid(members, topics, result)
    check_balanced(members, topics, result)
    assert 8 in result["m3"]["t1"]
    assert moved(members, topics, result) == 2  # t4-0 and t4-1 to m0, nothing else


def _least_moves_homogeneous(members, topics) -> int:
    """The fewest moves a within-one balance allows: the members that can keep the most take
    the one-more shares."""
    claims = _kept_claims(members, topics)
    subscribed = {t for t in members[0].topics if t in topics}
    base, extra = divmod(sum(topics[t] for t in subscribed), len(members))
    keepable = sorted((len(c) for c in claims.values()), reverse=True)
    kept = sum(min(k, base + (1 if i < extra else 0)) for i, k in enumerate(keepable))
    return sum(keepable) - kept


@settings(max_examples=200, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_moves_the_fewest_partitions_balance_allows(group) -> None:
    topics, members = group
    result = assign_uniform(members, topics)
    check_valid(members, topics, result)
    assert moved(members, topics, result) == _least_moves_homogeneous(members, topics)


@settings(max_examples=100, deadline=None)
@given(groups())
def test_uniform_is_a_fixed_point_of_its_own_answer(group) -> None:
    topics, members = group
    first = assign_uniform(members, topics)
    again = [AssignorMember(m.member_id, m.topics, first[m.member_id]) for m in members]
    assert assign_uniform(list(reversed(again)), topics) == first


# RangeAssignorTest: (topics, members (id, subscription, instance id), Kafka's answer).
RANGE_CASES = {
    "two members, two topics, same subscriptions": (
        {"t1": 3, "t3": 2},
        [("A", {"t1", "t3"}, None), ("B", {"t1", "t3"}, None)],
        {"A": {"t1": [0, 1], "t3": [0]}, "B": {"t1": [2], "t3": [1]}},
    ),
    "three members, three topics, different subscriptions": (
        {"t1": 3, "t2": 3, "t3": 2},
        [("A", {"t1", "t2"}, None), ("B", {"t3"}, None), ("C", {"t2", "t3"}, None)],
        {"A": {"t1": [0, 1, 2], "t2": [0, 1]}, "B": {"t3": [0]}, "C": {"t2": [2], "t3": [1]}},
    ),
    "more members than partitions": (
        {"t1": 3, "t3": 2},
        [("A", {"t1", "t3"}, None), ("B", {"t1", "t3"}, None), ("C", {"t1", "t3"}, None)],
        {"A": {"t1": [0], "t3": [0]}, "B": {"t1": [1], "t3": [1]}, "C": {"t1": [2]}},
    ),
    "a partition added": (
        {"t1": 4, "t2": 4},
        [("A", AB, None), ("B", AB, None)],
        {"A": {"t1": [0, 1], "t2": [0, 1]}, "B": {"t1": [2, 3], "t2": [2, 3]}},
    ),
    "a member added": (
        {"t1": 3, "t2": 3},
        [("A", AB, None), ("B", AB, None), ("C", AB, None)],
        {"A": {"t1": [0], "t2": [0]}, "B": {"t1": [1], "t2": [1]}, "C": {"t1": [2], "t2": [2]}},
    ),
    "a member and a partition added, heterogeneous": (
        {"t1": 4, "t2": 3},
        [("A", AB, None), ("B", AB, None), ("C", {"t1"}, None)],
        {"A": {"t1": [0, 1], "t2": [0, 1]}, "B": {"t1": [2], "t2": [2]}, "C": {"t1": [3]}},
    ),
    "subscriptions changed": (
        {"t1": 3, "t2": 3, "t3": 2},
        [("A", {"t1"}, None), ("B", {"t1", "t2", "t3"}, None), ("C", {"t2"}, None)],
        {"A": {"t1": [0, 1]}, "B": {"t1": [2], "t2": [0, 1], "t3": [0, 1]}, "C": {"t2": [2]}},
    ),
    "static members first, by instance id": (
        {"t1": 5},
        [("A", {"t1"}, "instanceC"), ("B", {"t1"}, None), ("C", {"t1"}, "instanceA")],
        {"C": {"t1": [0, 1]}, "A": {"t1": [2, 3]}, "B": {"t1": [4]}},
    ),
}


@pytest.mark.parametrize("case", RANGE_CASES)
def test_range_lays_out_what_kafka_does(case: str) -> None:
    topics, specs, expected = RANGE_CASES[case]
    members = [AssignorMember(m, frozenset(s), instance_id=i) for m, s, i in specs]
    result = assign_range(members, topics)
    assert {m: a for m, a in result.items() if a} == {
        m: {t: frozenset(ps) for t, ps in a.items()} for m, a in expected.items() if a
    }


def test_range_keeps_a_static_members_partitions_across_a_new_member_id() -> None:
    """testMixedStaticMembership: instance A rejoins as a new member id; nobody moves."""
    topics = {"t1": 5}
    before = [
        AssignorMember("A", frozenset(topics), instance_id="instanceA"),
        AssignorMember("C", frozenset(topics), instance_id="instanceC"),
        AssignorMember("B", frozenset(topics)),
    ]
    first = assign_range(before, topics)
    after = [AssignorMember("memberA1", frozenset(topics), instance_id="instanceA"), *before[1:]]
    second = assign_range(after, topics)
    assert second["memberA1"] == first["A"]
    assert second["B"] == first["B"] and second["C"] == first["C"]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 30), st.integers(1, 4), st.integers(1, 9))
def test_range_co_partitions_topics_of_equal_size(partitions, topic_count, member_count) -> None:
    """Every member subscribes to every topic, all of one size: each member gets the same
    partition numbers in every topic, contiguous, the first members one more."""
    topics = {f"t{i}": partitions for i in range(topic_count)}
    members = [AssignorMember(f"m{i}", frozenset(topics)) for i in range(member_count)]
    result = assign_range(members, topics)
    check_valid(members, topics, result)
    for m in members:
        numbers = {ps for ps in result[m.member_id].values()}
        assert len(numbers) <= 1
        if numbers:
            (ps,) = numbers
            assert sorted(ps) == list(range(min(ps), max(ps) + 1))
    sizes = [len(result[m.member_id].get("t0", ())) for m in members]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] - sizes[-1] <= 1


@settings(max_examples=150, deadline=None)
@given(groups())
def test_range_is_valid_and_balanced_per_topic(group) -> None:
    topics, members = group
    result = assign_range(members, topics)
    check_valid(members, topics, result)
    for topic in topics:
        counts = [len(result[m.member_id].get(topic, ())) for m in members if topic in m.topics]
        assert not counts or max(counts) - min(counts) <= 1
