"""The server-side assignors: every subscribed partition assigned exactly once, uniform balanced
within one and sticky, range as Kafka's RangeAssignor lays it out, the assignor vote."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.consumer.assignment import Assignment, pairs, size
from groupcoord.core.consumer.assignors import (
    AssignorMember,
    assign_range,
    assign_uniform,
    choose_assignor,
)

TOPICS = ["tA", "tB", "tC"]


def _owners(result: dict[str, Assignment]) -> dict[tuple[str, int], list[str]]:
    owners: dict[tuple[str, int], list[str]] = {}
    for member, assignment in result.items():
        for tp in pairs(assignment):
            owners.setdefault(tp, []).append(member)
    return owners


def _check_exactly_once(members, topics, result, blocked=None) -> None:
    owners = _owners(result)
    subscribed = {t for m in members for t in m.topics if t in topics}
    blocked = blocked or {}
    expected = {(t, p) for t in subscribed for p in range(topics[t]) if p not in blocked.get(t, ())}
    assert set(owners) == expected
    assert all(len(o) == 1 for o in owners.values())
    by_id = {m.member_id: m for m in members}
    for (topic, _), (owner,) in owners.items():
        assert topic in by_id[owner].topics


topic_counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 40), min_size=1)
member_ids = st.lists(st.uuids().map(str), min_size=1, max_size=12, unique=True)


@settings(max_examples=150, deadline=None)
@given(topic_counts, member_ids, st.data())
def test_every_subscribed_partition_is_assigned_exactly_once(topics, ids, data) -> None:
    members = [
        AssignorMember(m, frozenset(data.draw(st.sets(st.sampled_from(TOPICS), min_size=1))))
        for m in ids
    ]
    for assign in (assign_uniform, assign_range):
        _check_exactly_once(members, topics, assign(members, topics))


@settings(max_examples=150, deadline=None)
@given(topic_counts, member_ids, st.data())
def test_blocked_partitions_go_to_no_one_and_the_rest_exactly_once(topics, ids, data) -> None:
    """A Kinesis topic's shards that are done or wait for their parents are left out; the
    others are shared as any partitions, previous targets on blocked ones dropped."""
    blocked = {
        t: frozenset(data.draw(st.sets(st.integers(0, max(count - 1, 0)))))
        for t, count in topics.items()
    }
    members = [
        AssignorMember(
            m,
            frozenset(data.draw(st.sets(st.sampled_from(TOPICS), min_size=1))),
            {t: frozenset(range(topics[t])) for t in topics} if i == 0 else {},
        )
        for i, m in enumerate(ids)
    ]
    for assign in (assign_uniform, assign_range):
        _check_exactly_once(members, topics, assign(members, topics, blocked), blocked)
    homogeneous = [AssignorMember(m, frozenset(topics)) for m in ids]
    result = assign_uniform(homogeneous, topics, blocked)
    sizes = [size(result[m]) for m in ids]
    assert max(sizes) - min(sizes) <= 1  # balanced over what is assignable


@settings(max_examples=150, deadline=None)
@given(topic_counts, member_ids)
def test_uniform_balances_homogeneous_subscriptions_within_one(topics, ids) -> None:
    members = [AssignorMember(m, frozenset(topics)) for m in ids]
    result = assign_uniform(members, topics)
    sizes = [size(result[m]) for m in ids]
    assert max(sizes) - min(sizes) <= 1


def _moves(before: dict[str, Assignment], after: dict[str, Assignment]) -> int:
    old = {tp: m for m, a in before.items() for tp in pairs(a)}
    return sum(1 for m, a in after.items() for tp in pairs(a) if tp in old and old[tp] != m)


@settings(max_examples=150, deadline=None)
@given(topic_counts, member_ids, st.uuids().map(str))
def test_uniform_moves_only_what_balance_requires_when_a_member_joins(topics, ids, joiner) -> None:
    members = [AssignorMember(m, frozenset(topics)) for m in ids if m != joiner]
    if not members:
        return
    first = assign_uniform(members, topics)
    sticky = [AssignorMember(m.member_id, m.topics, first[m.member_id]) for m in members]
    second = assign_uniform([*sticky, AssignorMember(joiner, frozenset(topics))], topics)
    total = sum(topics.values())
    # The joiner gets floor or ceil of its share; only that many partitions move.
    assert _moves(first, second) <= -(-total // (len(members) + 1))
    assert _moves(first, second) == size(second[joiner])


@settings(max_examples=150, deadline=None)
@given(topic_counts, member_ids.filter(lambda ids: len(ids) >= 2))
def test_uniform_moves_only_the_leavers_partitions_when_a_member_leaves(topics, ids) -> None:
    members = [AssignorMember(m, frozenset(topics)) for m in ids]
    first = assign_uniform(members, topics)
    stay = [AssignorMember(m.member_id, m.topics, first[m.member_id]) for m in members[1:]]
    second = assign_uniform(stay, topics)
    for m in stay:  # nobody staying loses anything
        assert pairs(first[m.member_id]) <= pairs(second[m.member_id])
    sizes = [size(a) for a in second.values()]
    assert max(sizes) - min(sizes) <= 1


def test_uniform_is_sticky_when_nothing_changes() -> None:
    topics = {"tA": 10, "tB": 7}
    members = [AssignorMember(f"m{i}", frozenset(topics)) for i in range(3)]
    first = assign_uniform(members, topics)
    again = assign_uniform(
        [AssignorMember(m, frozenset(topics), a) for m, a in first.items()], topics
    )
    assert again == first


def test_uniform_heterogeneous_gives_topics_only_to_their_subscribers() -> None:
    topics = {"tA": 6, "tB": 6}
    members = [
        AssignorMember("a", frozenset({"tA"})),
        AssignorMember("b", frozenset({"tA", "tB"})),
        AssignorMember("c", frozenset({"tB"})),
    ]
    result = assign_uniform(members, topics)
    _check_exactly_once(members, topics, result)
    assert sorted(size(a) for a in result.values()) == [4, 4, 4]


def test_range_lays_out_contiguous_ranges_static_members_first() -> None:
    topics = {"tA": 7}
    members = [
        AssignorMember("m-b", frozenset(topics)),
        AssignorMember("m-a", frozenset(topics)),
        AssignorMember("m-z", frozenset(topics), instance_id="i-1"),
    ]
    result = assign_range(members, topics)
    assert result["m-z"] == {"tA": frozenset({0, 1, 2})}
    assert result["m-a"] == {"tA": frozenset({3, 4})}
    assert result["m-b"] == {"tA": frozenset({5, 6})}


def test_the_group_uses_the_assignor_most_members_ask_for() -> None:
    configured = ("uniform", "range")
    assert choose_assignor([None, None], configured) == "uniform"
    assert choose_assignor(["range", None, "range", "uniform"], configured) == "range"
    assert choose_assignor(["range", "uniform"], configured) == "uniform"  # tie: config order
    assert choose_assignor(["range"], ("range", "uniform")) == "range"
