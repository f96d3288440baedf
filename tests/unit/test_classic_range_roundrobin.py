"""range and roundrobin held to Kafka's RangeAssignorTest and RoundRobinAssignorTest: valid,
and static members (group.instance.id) ordered by instance id, ahead of dynamic ones, so that a
static member's restart under a new member id changes nobody's assignment."""

from __future__ import annotations

import base64

import pytest

from groupcoord.client.assignors import assign_range, assign_roundrobin
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
