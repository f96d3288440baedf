"""The rest of Kafka's AbstractStickyAssignorTest and StickyAssignorTest one-round cases, for
sticky and cooperative-sticky: each answer is valid, balanced as Kafka's verifyValidityAndBalance
defines it, and at least as balanced and as sticky (keeps at least as many owned partitions) as
the answer Kafka's test asserts, where it asserts one. Cooperative: nothing goes to a member
while another still holds it, and the follow-up round (everyone owning what this one gave) is
judged the same way. The cases test_classic_sticky_assignors.py holds are not repeated here."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping

import pytest

from groupcoord.client.assignors import (
    Assignment,
    TopicPartition,
    assign_cooperative_sticky,
    assign_sticky,
    encode_sticky_user_data,
    with_sticky_memory,
)
from groupcoord.wire.consumer_protocol import Subscription
from tests.support.classic_assignors import (
    assert_a_leaver_moves_only_its_own,
    assert_balanced,
    assert_no_swap_within_a_topic,
    assert_nothing_moves_directly,
    assert_valid,
    moves_between,
    next_round,
    sub,
    tps,
)

# A member: (topics, owned, generation); owned as tps() lists.
Member = tuple[list[str], list[TopicPartition], int]
T12 = ["topic1", "topic2"]


def parts(*pairs: tuple[str, int]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in pairs]


# (Kafka's test, partition counts, members, Kafka's answer or None where it asserts none)
CASES: dict[str, tuple[dict[str, int], dict[str, Member], dict[str, list] | None]] = {
    "testOneConsumerNoTopic": ({}, {"c": ([], [], -1)}, {"c": []}),
    "testOneConsumerNonexistentTopic": ({"topic": 0}, {"c": (["topic"], [], -1)}, {"c": []}),
    "testOneConsumerOneTopic": (
        {"topic": 3},
        {"c": (["topic"], [], -1)},
        {"c": tps("topic", 0, 1, 2)},
    ),
    "testOnlyAssignsPartitionsFromSubscribedTopics": (
        {"topic": 2, "other": 2},
        {"c": (["topic"], [*tps("topic", 0, 1), *tps("other", 0, 1)], 1)},
        {"c": tps("topic", 0, 1)},
    ),
    "testOneConsumerMultipleTopics": (
        {"topic1": 1, "topic2": 2},
        {"c": (T12, [], -1)},
        {"c": [*tps("topic1", 0), *tps("topic2", 0, 1)]},
    ),
    "testTwoConsumersOneTopicOnePartition": (
        {"topic": 1},
        {"c1": (["topic"], [], -1), "c2": (["topic"], [], -1)},
        None,
    ),
    "testTwoConsumersOneTopicTwoPartitions": (
        {"topic": 2},
        {"c1": (["topic"], [], -1), "c2": (["topic"], [], -1)},
        {"c1": tps("topic", 0), "c2": tps("topic", 1)},
    ),
    "testMultipleConsumersMixedTopicSubscriptions": (
        {"topic1": 3, "topic2": 2},
        {"c1": (["topic1"], [], -1), "c2": (T12, [], -1), "c3": (["topic1"], [], -1)},
        {"c1": tps("topic1", 0, 2), "c2": tps("topic2", 0, 1), "c3": tps("topic1", 1)},
    ),
    "testTwoConsumersTwoTopicsSixPartitions": (
        {"topic1": 3, "topic2": 3},
        {"c1": (T12, [], -1), "c2": (T12, [], -1)},
        {
            "c1": parts(("topic1", 0), ("topic1", 2), ("topic2", 1)),
            "c2": parts(("topic1", 1), ("topic2", 0), ("topic2", 2)),
        },
    ),
    "testConsumerOwningMinQuotaExpectedMaxQuota": (
        {"topic1": 2, "topic2": 3},
        {
            "c1": (T12, parts(("topic1", 0), ("topic2", 1)), 1),
            "c2": (T12, parts(("topic1", 1), ("topic2", 2)), 1),
        },
        {
            "c1": parts(("topic1", 0), ("topic2", 1), ("topic2", 0)),
            "c2": parts(("topic1", 1), ("topic2", 2)),
        },
    ),
    "testMaxQuotaConsumerMoreThanNumExpectedMaxCapacityMembers": (
        {"topic1": 2, "topic2": 2},
        {
            "c1": (T12, parts(("topic1", 0), ("topic2", 0)), 1),
            "c2": (T12, parts(("topic1", 1), ("topic2", 1)), 1),
            "c3": (T12, [], 1),
        },
        {
            "c1": tps("topic1", 0),
            "c2": parts(("topic1", 1), ("topic2", 1)),
            "c3": tps("topic2", 0),
        },
    ),
    "testAllConsumersAreUnderMinQuota": (
        {"topic1": 2, "topic2": 3},
        {"c1": (T12, tps("topic1", 0), 1), "c2": (T12, tps("topic1", 1), 1), "c3": (T12, [], 1)},
        {
            "c1": parts(("topic1", 0), ("topic2", 1)),
            "c2": parts(("topic1", 1), ("topic2", 2)),
            "c3": tps("topic2", 0),
        },
    ),
    "testAddRemoveTwoConsumersTwoTopics (two join)": (
        {"topic1": 3, "topic2": 4},
        {
            "c1": (T12, parts(("topic1", 0), ("topic1", 2), ("topic2", 1), ("topic2", 3)), 1),
            "c2": (T12, parts(("topic1", 1), ("topic2", 0), ("topic2", 2)), 1),
            "c3": (T12, [], 1),
            "c4": (T12, [], 1),
        },
        {
            "c1": parts(("topic1", 0), ("topic2", 1)),
            "c2": parts(("topic2", 0), ("topic1", 1)),
            "c3": parts(("topic1", 2), ("topic2", 3)),
            "c4": tps("topic2", 2),
        },
    ),
    "testAddRemoveTwoConsumersTwoTopics (two leave)": (
        {"topic1": 3, "topic2": 4},
        {
            "c3": (T12, parts(("topic1", 2), ("topic2", 3)), 2),
            "c4": (T12, tps("topic2", 2), 2),
        },
        {
            "c3": parts(("topic1", 2), ("topic2", 3), ("topic1", 0), ("topic2", 1)),
            "c4": parts(("topic2", 2), ("topic1", 1), ("topic2", 0)),
        },
    ),
    "testPoorRoundRobinAssignmentScenario": (
        {"topic1": 2, "topic2": 1, "topic3": 2, "topic4": 1, "topic5": 2},
        {
            "c1": (["topic1", "topic2", "topic3", "topic4", "topic5"], [], -1),
            "c2": (["topic1", "topic3", "topic5"], [], -1),
            "c3": (["topic1", "topic3", "topic5"], [], -1),
            "c4": (["topic1", "topic2", "topic3", "topic4", "topic5"], [], -1),
        },
        {
            "c1": parts(("topic2", 0), ("topic3", 0)),
            "c2": parts(("topic1", 0), ("topic3", 1)),
            "c3": parts(("topic1", 1), ("topic5", 0)),
            "c4": parts(("topic4", 0), ("topic5", 1)),
        },
    ),
    "testNoReassignmentOnCurrentMembers": (
        dict.fromkeys(["topic", "topic1", "topic2", "topic3"], 3),
        {
            "c1": (["topic", "topic1", "topic2", "topic3"], [], -1),
            "c2": (
                ["topic", "topic1", "topic2", "topic3"],
                parts(("topic", 0), ("topic2", 0), ("topic1", 0)),
                9,
            ),
            "c3": (
                ["topic", "topic1", "topic2", "topic3"],
                parts(("topic3", 2), ("topic2", 2), ("topic1", 1)),
                8,
            ),
            "c4": (
                ["topic", "topic1", "topic2", "topic3"],
                parts(("topic3", 1), ("topic", 1), ("topic", 2)),
                7,
            ),
        },
        {
            "c1": parts(("topic1", 2), ("topic2", 1), ("topic3", 0)),
            "c2": parts(("topic", 0), ("topic2", 0), ("topic1", 0)),
            "c3": parts(("topic3", 2), ("topic2", 2), ("topic1", 1)),
            "c4": parts(("topic3", 1), ("topic", 1), ("topic", 2)),
        },
    ),
    "testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration": (
        {"topic": 3, "topic2": 3},
        {
            "c1": (["topic", "topic2"], parts(("topic", 0), ("topic2", 1), ("topic", 1)), 10),
            "c2": (["topic", "topic2"], parts(("topic", 0), ("topic2", 1), ("topic2", 2)), 8),
        },
        {
            "c1": parts(("topic", 0), ("topic2", 1), ("topic", 1)),
            "c2": parts(("topic", 2), ("topic2", 2), ("topic2", 0)),
        },
    ),
    "testPartitionsTransferringOwnershipIncludeThePartitionClaimedByMultipleConsumers": (
        {"topic": 3},
        {
            "c1": (["topic"], tps("topic", 0, 1), 1),
            "c2": (["topic"], tps("topic", 0, 2), 1),
            "c3": (["topic"], [], 1),
        },
        {"c1": tps("topic", 1), "c2": tps("topic", 2), "c3": tps("topic", 0)},
    ),
}

# Kafka's testSubscriptionNotEqualAndAssignSamePartitionWith3Generation: three members claim
# topic-2 in three different generations, in every order; a fourth reads topic1 alone.
for order in ((1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)):
    CASES[f"testSubscriptionNotEqualAndAssignSamePartitionWith3Generation {order}"] = (
        {"topic": 6, "topic1": 1},
        {
            "c1": (["topic"], tps("topic", 0, 2), order[0]),
            "c2": (["topic"], tps("topic", 1, 2, 3), order[1]),
            "c3": (["topic"], tps("topic", 2, 4, 5), order[2]),
            "c4": (["topic1"], tps("topic1", 0), 2),
        },
        None,
    )


def subscriptions_of(members: Mapping[str, Member]) -> dict[str, Subscription]:
    return {m: sub(topics, owned, gen) for m, (topics, owned, gen) in members.items()}


def kept(subscriptions: Mapping[str, Subscription], plan: Assignment) -> int:
    """How many partitions members still have that they said they owned."""
    return sum(
        1
        for member, s in subscriptions.items()
        for topic, partitions in s.owned_partitions.items()
        for p in partitions
        if TopicPartition(topic, p) in set(plan.get(member, ()))
    )


def spread(plan: Mapping[str, Iterable[TopicPartition]]) -> int:
    sizes = [len(list(parts)) for parts in plan.values()]
    return max(sizes) - min(sizes)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("cooperative", [False, True], ids=["sticky", "cooperative-sticky"])
def test_as_balanced_and_as_sticky_as_kafkas_answer(case: str, cooperative: bool) -> None:
    counts, members, kafka = CASES[case]
    subs = subscriptions_of(members)
    if cooperative:
        plan = assign_cooperative_sticky(subs, counts)
        assert_nothing_moves_directly(subs, plan)
        plan = assign_cooperative_sticky(next_round(subs, plan, 99), counts)
    else:
        plan = assign_sticky(subs, counts)
    assert_valid(subs, counts, plan)
    assert_balanced(subs, plan)
    if kafka is not None:
        assert_valid(subs, counts, kafka)  # the table is Kafka's answer, rightly copied
        assert spread(plan) <= spread(kafka)
        assert kept(subs, plan) >= kept(subs, kafka)


def test_three_generations_claiming_one_partition_leave_one_or_two_each() -> None:
    """testSubscriptionNotEqualAndAssignSamePartitionWith3Generation's own assertion."""
    for name, (counts, members, _) in CASES.items():
        if "3Generation" in name:
            plan = assign_sticky(subscriptions_of(members), counts)
            assert all(1 <= len(parts) <= 2 for parts in plan.values()), name


@pytest.mark.parametrize("assign", [assign_sticky, assign_cooperative_sticky])
def test_a_topic_added_then_the_first_removed_keeps_everyone_where_they_were(assign) -> None:
    """testAddRemoveTopicTwoConsumers: two members on one topic of 3 (1 and 2 each), a second
    topic of 3 added (3 each, each keeping what it had), the first topic removed (what each
    keeps of the second topic, 1 and 2 again)."""
    counts = {"topic": 3}
    subs = {"c1": sub(["topic"]), "c2": sub(["topic"])}
    first = assign(subs, counts)
    assert sorted(map(len, first.values())) == [1, 2]
    counts = {"topic": 3, "topic2": 3}
    subs = {m: sub(["topic", "topic2"], first[m], 1) for m in subs}
    second = assign(subs, counts)
    assert_nothing_moves_directly(subs, second)
    for member in subs:
        assert len(second[member]) == 3 and set(first[member]) <= set(second[member])
    counts = {"topic2": 3}
    subs = {m: sub(["topic2"], second[m], 2) for m in subs}
    third = assign(subs, counts)
    assert_valid(subs, counts, third)
    assert sorted(map(len, third.values())) == [1, 2]
    for member in subs:
        assert set(third[member]) <= set(second[member])


def test_same_subscriptions_a_leaver_moves_only_its_own_partitions() -> None:
    """testSameSubscriptions: topics of 1 to 14 partitions, 8 members on all; one leaves."""
    counts = {f"topic{i:02d}": i for i in range(1, 15)}
    subs = {f"c{i}": sub(counts) for i in range(1, 9)}
    for assign in (assign_sticky, assign_cooperative_sticky):
        assert_a_leaver_moves_only_its_own(assign, subs, counts, "c5")


@pytest.mark.parametrize("equal", [True, False], ids=["equal", "c2-on-one-topic"])
def test_members_leaving_and_one_coming_back_with_an_older_generation(equal: bool) -> None:
    """StickyAssignorTest.testAssignmentWithMultipleGenerations1: 4/4/4; c3 leaves: 6/6, c2
    keeping all it had and taking some of c3's; c1 leaves and c3 comes back claiming round
    1's partitions in generation 1 against c2's generation 2: 6/6, nothing held twice."""
    counts = {"topic": 6, "topic2": 6}
    every = ["topic", "topic2"]
    topics = {"c1": every, "c2": every if equal else ["topic"], "c3": every}
    round1 = assign_sticky({m: sub(t) for m, t in topics.items()}, counts)
    assert sorted(map(len, round1.values())) == [4, 4, 4]
    subs = {m: sub(topics[m], round1[m], 1) for m in ("c1", "c2")}
    round2 = assign_sticky(subs, counts)
    assert_valid(subs, counts, round2)
    assert sorted(map(len, round2.values())) == [6, 6]
    assert set(round1["c2"]) <= set(round2["c2"])
    if equal:
        assert set(round1["c1"]) <= set(round2["c1"])
    assert set(round2["c2"]) & set(round1["c3"])
    subs = {"c2": sub(topics["c2"], round2["c2"], 2), "c3": sub(every, round1["c3"], 1)}
    round3 = assign_sticky(subs, counts)
    assert_valid(subs, counts, round3)
    assert sorted(map(len, round3.values())) == [6, 6]


def test_an_eager_sticky_members_claim_is_its_user_data_alone() -> None:
    """StickyAssignorTest.testMemberDataWithInconsistentData and testMemberDataWillHonorUserData:
    an eager member revoked everything before joining, so the leader takes what it owned, and
    its generation, from its userData, whatever the subscription's ownedPartitions and
    generationId say. c1's subscription fields still name t-0 and t-1 at generation 5, but its
    userData says t-2 and t-3 at 3; c2's userData says t-0 and t-1 at 3: each keeps its own."""
    c1 = Subscription(
        ["t"], encode_sticky_user_data({"t": [2, 3]}, 3), {"t": [0, 1]}, generation_id=5
    )
    c2 = Subscription(["t"], encode_sticky_user_data({"t": [0, 1]}, 3), generation_id=5)
    subs = {"c1": with_sticky_memory(c1), "c2": with_sticky_memory(c2)}
    assert (subs["c1"].owned_partitions, subs["c1"].generation_id) == ({"t": [2, 3]}, 3)
    assert assign_sticky(subs, {"t": 4}) == {"c1": tps("t", 2, 3), "c2": tps("t", 0, 1)}
    for user_data in (None, b"", b"\x00\x00"):  # none, empty, unreadable: no claim at all
        bare = with_sticky_memory(Subscription(["t"], user_data, {"t": [0]}, generation_id=5))
        assert (bare.owned_partitions, bare.generation_id) == ({}, -1)


def test_a_version_0_user_data_without_a_generation_still_claims() -> None:
    """StickyAssignorTest.testSchemaBackwardCompatibility: c2's userData is in the old layout
    (no generation); c1 owned t-0 and t-2, c2 t-1, c3 is new: one each, c1 and c2 keeping
    theirs."""
    old_layout = encode_sticky_user_data({"t": [1]}, 1)[:-4]
    subs = {
        "c1": with_sticky_memory(Subscription(["t"], encode_sticky_user_data({"t": [0, 2]}, 1))),
        "c2": with_sticky_memory(Subscription(["t"], old_layout)),
        "c3": with_sticky_memory(Subscription(["t"])),
    }
    assert subs["c2"].owned_partitions == {"t": [1]}
    plan = assign_sticky(subs, {"t": 3})
    assert sorted(map(len, plan.values())) == [1, 1, 1]
    assert set(plan["c1"]) <= set(tps("t", 0, 2)) and plan["c2"] == tps("t", 1)


def owners(plan: Assignment) -> dict[TopicPartition, str]:
    return {tp: m for m, parts in plan.items() for tp in parts}


def settled(
    assign: Callable[..., Assignment], subs: dict[str, Subscription], counts: dict[str, int]
) -> Assignment:
    """One rebalance: for cooperative-sticky, with the follow-up round that hands over what
    the first withheld."""
    plan = assign(subs, counts)
    if assign is assign_cooperative_sticky:
        assert_nothing_moves_directly(subs, plan)
        plan = assign(next_round(subs, plan, 99), counts)
    assert_valid(subs, counts, plan)
    assert_balanced(subs, plan)
    return plan


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("assign", [assign_sticky, assign_cooperative_sticky])
def test_fifty_of_two_hundred_random_members_leave(assign, seed: int) -> None:
    """testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription: 40 topics of 1 to
    10 partitions, 200 members on up to 20 random topics each; every member but the first
    comes back owning what it got, 50 random ones are gone: valid, balanced, and sticky in
    Kafka's isSticky sense (no two members traded partitions of one topic)."""
    rng = random.Random(seed)
    counts = {f"topic{i:02d}": rng.randint(1, 10) for i in range(40)}
    topics = {f"c{i:03d}": rng.sample(sorted(counts), rng.randint(0, 19)) for i in range(200)}
    plan = settled(assign, {m: sub(t) for m, t in topics.items()}, counts)
    subs = {m: sub(t, plan[m] if m != "c000" else (), 1) for m, t in topics.items()}
    for gone in rng.sample(sorted(subs), 50):
        del subs[gone]
    again = settled(assign, subs, counts)
    assert_no_swap_within_a_topic(moves_between(owners(plan), owners(again)))


@pytest.mark.parametrize("assign", [assign_sticky, assign_cooperative_sticky])
def test_a_member_subscribing_to_one_more_topic(assign) -> None:
    """testNewSubscription: four one-partition topics; c0 reads nothing, c1 topic1, c2 topic2
    to topic4; then c0 subscribes to topic1 too."""
    counts = {f"topic{i}": 1 for i in range(1, 5)}
    topics = {"c0": [], "c1": ["topic1"], "c2": ["topic2", "topic3", "topic4"]}
    plan = settled(assign, {m: sub(t) for m, t in topics.items()}, counts)
    topics["c0"] = ["topic1"]
    again = settled(assign, {m: sub(t, plan[m], 1) for m, t in topics.items()}, counts)
    assert_no_swap_within_a_topic(moves_between(owners(plan), owners(again)))


@pytest.mark.parametrize("assign", [assign_sticky, assign_cooperative_sticky])
def test_a_leaver_of_three_splits_between_the_others(assign) -> None:
    """kafka-python's test_sticky_assignor1: four topics of two partitions, three members on
    all; C1 leaves: C0 and C2 keep what they had and share C1's three: 4 and 4."""
    counts = dict.fromkeys(["t0", "t1", "t2", "t3"], 2)
    subs = {m: sub(counts) for m in ("C0", "C1", "C2")}
    plan = settled(assign, subs, counts)
    assert sorted(map(len, plan.values())) == [2, 3, 3]
    rest = {m: sub(counts, plan[m], 1) for m in ("C0", "C2")}
    again = settled(assign, rest, counts)
    assert [len(again[m]) for m in rest] == [4, 4]
    assert all(set(plan[m]) <= set(again[m]) for m in rest)
