"""range and roundrobin held to Kafka's RangeAssignorTest and RoundRobinAssignorTest: valid,
Kafka's exact layouts, and static members (group.instance.id) ordered by instance id, ahead of
dynamic ones, so that a static member's restart under a new member id changes nobody's
assignment."""

from __future__ import annotations

import base64

import pytest

from groupcoord.client.assignors import TopicPartition, assign_range, assign_roundrobin
from groupcoord.client.classic import ClassicMembership
from groupcoord.client.transport import Transport
from groupcoord.wire.consumer_protocol import Subscription, decode_assignment, encode_subscription
from tests.support.classic_assignors import assert_valid, sub, tps

TOPICS = ["topic1", "topic2"]
COUNTS = {"topic1": 5, "topic2": 5}
EXPECTED = {
    # RangeAssignorTest.testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
    assign_range: {
        "instance1": [*tps("topic1", 0, 1), *tps("topic2", 0, 1)],
        "instance2": [*tps("topic1", 2, 3), *tps("topic2", 2, 3)],
        "instance3": [*tps("topic1", 4), *tps("topic2", 4)],
    },
    # RoundRobinAssignorTest.testStaticMemberRoundRobinAssignmentPersistentAfterMemberIdChanges
    assign_roundrobin: {
        "instance1": [*tps("topic1", 0, 3), *tps("topic2", 1, 4)],
        "instance2": [*tps("topic1", 1, 4), *tps("topic2", 2)],
        "instance3": [*tps("topic1", 2), *tps("topic2", 0, 3)],
    },
}


def by_instance(members: dict[str, str], plan: dict) -> dict:
    return {instance: sorted(plan[member]) for member, instance in members.items()}


@pytest.mark.parametrize("assign", [assign_range, assign_roundrobin], ids=["range", "roundrobin"])
def test_a_static_member_restarting_with_a_new_member_id_changes_no_assignment(assign) -> None:
    members = {"consumer1": "instance1", "consumer2": "instance2", "consumer3": "instance3"}
    subs = {m: sub(TOPICS, instance=i) for m, i in members.items()}
    plan = assign(subs, COUNTS)
    assert_valid(subs, COUNTS, plan)
    assert by_instance(members, plan) == EXPECTED[assign]
    # instance3 comes back as consumer4, instance2 as consumer5: ids now sort differently.
    restarted = {"consumer1": "instance1", "consumer5": "instance2", "consumer4": "instance3"}
    subs = {m: sub(TOPICS, instance=i) for m, i in restarted.items()}
    assert by_instance(restarted, assign(subs, COUNTS)) == EXPECTED[assign]


@pytest.mark.parametrize("assign", [assign_range, assign_roundrobin], ids=["range", "roundrobin"])
def test_static_members_go_by_instance_id_and_before_dynamic_ones(assign) -> None:
    """testTwoStaticConsumersTwoTopicsSixPartitions and
    testOneStaticConsumerAndOneDynamicConsumerTwoTopicsSixPartitions: consumer-b (instance1)
    comes first although its member id sorts after consumer-a's."""
    counts = {"topic1": 3, "topic2": 3}
    first = {"range": [*tps("topic1", 0, 1), *tps("topic2", 0, 1)]}
    first["roundrobin"] = [*tps("topic1", 0, 2), *tps("topic2", 1)]
    name = "range" if assign is assign_range else "roundrobin"
    for other in ("instance2", None):
        subs = {
            "consumer-b": sub(TOPICS, instance="instance1"),
            "consumer-a": sub(TOPICS, instance=other),
        }
        plan = assign(subs, counts)
        assert_valid(subs, counts, plan)
        assert sorted(plan["consumer-b"]) == first[name]


def test_the_leader_orders_by_the_instance_ids_of_the_join_response() -> None:
    """The classic leader passes each member's groupInstanceId (from the join response) to
    the assignor: member "b-..." (instance1) gets range's first share although its member id
    sorts after "a-..."'s."""
    classic = ClassicMembership(
        lambda: Transport("http://127.0.0.1:9"),  # never called: the leader only computes here
        "g",
        lambda: ["t"],
        lambda topics: (dict.fromkeys(topics, 4), {}),
        assignors=["range"],
        session_timeout_ms=6000,
        rebalance_timeout_ms=6000,
    )
    metadata = base64.b64encode(encode_subscription(Subscription(["t"], version=2))).decode()
    joined = {
        "protocolName": "range",
        "members": [
            {"memberId": "a-member", "groupInstanceId": "instance2", "metadata": metadata},
            {"memberId": "b-member", "groupInstanceId": "instance1", "metadata": metadata},
        ],
    }
    plans = {
        a["memberId"]: decode_assignment(base64.b64decode(a["assignment"])).partitions
        for a in classic._leader_assignments(joined)
    }
    assert plans == {"b-member": {"t": [0, 1]}, "a-member": {"t": [2, 3]}}


def layout(text: str) -> list[TopicPartition]:
    """'t1-0, t2-1' as topic partitions."""
    pairs = (tp.rsplit("-", 1) for tp in text.split(", "))
    return [TopicPartition(topic, int(p)) for topic, p in pairs]


T1, T2 = "topic1", "topic2"
# (Kafka's test, counts, members' topics, range's answer, roundrobin's answer), members in
# member-id order; Kafka's RangeAssignorTest and RoundRobinAssignorTest, without racks.
LAYOUTS = {
    "testOneConsumerNoTopic": ({}, {"c1": []}, {"c1": []}, {"c1": []}),
    "testOneConsumerNonexistentTopic": ({}, {"c1": [T1]}, {"c1": []}, {"c1": []}),
    "testOneConsumerOneTopic": (
        {T1: 3},
        {"c1": [T1]},
        {"c1": tps(T1, 0, 1, 2)},
        {"c1": tps(T1, 0, 1, 2)},
    ),
    "testOnlyAssignsPartitionsFromSubscribedTopics": (
        {T1: 3, "other": 3},
        {"c1": [T1]},
        {"c1": tps(T1, 0, 1, 2)},
        {"c1": tps(T1, 0, 1, 2)},
    ),
    "testOneConsumerMultipleTopics": (
        {T1: 1, T2: 2},
        {"c1": [T1, T2]},
        {"c1": [*tps(T1, 0), *tps(T2, 0, 1)]},
        {"c1": [*tps(T1, 0), *tps(T2, 0, 1)]},
    ),
    "testTwoConsumersOneTopicOnePartition": (
        {T1: 1},
        {"c1": [T1], "c2": [T1]},
        {"c1": tps(T1, 0), "c2": []},
        {"c1": tps(T1, 0), "c2": []},
    ),
    "testTwoConsumersOneTopicTwoPartitions": (
        {T1: 2},
        {"c1": [T1], "c2": [T1]},
        {"c1": tps(T1, 0), "c2": tps(T1, 1)},
        {"c1": tps(T1, 0), "c2": tps(T1, 1)},
    ),
    "testMultipleConsumersMixedTopics": (
        {T1: 3, T2: 2},
        {"c1": [T1], "c2": [T1, T2], "c3": [T1]},
        {"c1": tps(T1, 0), "c2": [*tps(T1, 1), *tps(T2, 0, 1)], "c3": tps(T1, 2)},
        {"c1": tps(T1, 0), "c2": [*tps(T1, 1), *tps(T2, 0, 1)], "c3": tps(T1, 2)},
    ),
    "testTwoConsumersTwoTopicsSixPartitions": (
        {T1: 3, T2: 3},
        {"c1": [T1, T2], "c2": [T1, T2]},
        {"c1": [*tps(T1, 0, 1), *tps(T2, 0, 1)], "c2": [*tps(T1, 2), *tps(T2, 2)]},
        {"c1": [*tps(T1, 0, 2), *tps(T2, 1)], "c2": [*tps(T1, 1), *tps(T2, 0, 2)]},
    ),
    "testCoPartitionedAssignmentWithSameSubscription (range only)": (
        {"t1": 6, "t2": 6, "t3": 2, "t4": 2, "t5": 4, "t6": 4},
        {m: [f"t{i}" for i in range(1, 10)] for m in ("c1", "c2", "c3")},
        {
            "c1": layout("t1-0, t1-1, t2-0, t2-1, t3-0, t4-0, t5-0, t5-1, t6-0, t6-1"),
            "c2": layout("t1-2, t1-3, t2-2, t2-3, t3-1, t4-1, t5-2, t6-2"),
            "c3": layout("t1-4, t1-5, t2-4, t2-5, t5-3, t6-3"),
        },
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(LAYOUTS))
@pytest.mark.parametrize("assign", [assign_range, assign_roundrobin], ids=["range", "roundrobin"])
def test_dynamic_members_get_kafkas_exact_layout(assign, case: str) -> None:
    counts, topics, by_range, by_roundrobin = LAYOUTS[case]
    expected = by_range if assign is assign_range else by_roundrobin
    subs = {m: sub(t) for m, t in topics.items()}
    plan = assign(subs, counts)
    assert_valid(subs, counts, plan)
    if expected is not None:  # else Kafka asserts a layout for the other assignor only
        assert {m: sorted(parts) for m, parts in plan.items()} == {
            m: sorted(parts) for m, parts in expected.items()
        }
