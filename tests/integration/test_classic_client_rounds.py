"""The Python client's classic rounds against the coordinator (KIP-429 as Kafka's consumer and
kafka-python do it): a cooperative member revokes a dropped topic's partitions before it joins,
refuses an assignment naming a topic it does not subscribe to, and a mixed assignor list is
eager unless every assignor is cooperative."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from groupcoord.client import GroupMember
from groupcoord.client.assignors import TopicPartition
from groupcoord.client.classic import ClassicMembership, JoinResult
from groupcoord.client.transport import Transport
from groupcoord.wire.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    REBALANCE_IN_PROGRESS,
    ClassicClient,
    unique,
    wait_until,
)

pytestmark = pytest.mark.coordinator(FAST_SETTINGS, shared=True)

PARTITIONS = 2


def create_topics(api: Api, count: int) -> list[str]:
    names = [unique(f"t{i}") for i in range(count)]
    body = api.ok(
        "create-topics",
        {"topics": [{"name": n, "numPartitions": PARTITIONS} for n in names]},
    )
    assert [t["errorCode"] for t in body["topics"]] == [0] * count
    return names


def member(url: str, group: str, subscribed: list[str], assignors: list[str]) -> ClassicMembership:
    """A member whose subscription is whatever `subscribed` holds when it joins."""
    return ClassicMembership(
        lambda: Transport(url),
        group,
        lambda: list(subscribed),
        lambda topics: (dict.fromkeys(topics, PARTITIONS), {}),
        assignors=assignors,
        session_timeout_ms=6000,
        rebalance_timeout_ms=10000,
    )


def partitions_of(*topics: str) -> set[TopicPartition]:
    return {TopicPartition(t, p) for t in topics for p in range(PARTITIONS)}


def test_a_cooperative_member_revokes_a_dropped_topic_before_it_joins(url: str, api: Api) -> None:
    """kafka-python's test_cooperative_revokes_unsubscribed_topic_partitions_early: only the
    dropped topic's partitions are revoked, before the join; the rest stay owned."""
    kept, dropped = create_topics(api, 2)
    subscribed = [kept, dropped]
    classic = member(url, unique("g"), subscribed, ["cooperative-sticky"])
    before_join: list[set[TopicPartition]] = []
    classic.rejoin(before_join.append)
    assert classic.owned == partitions_of(kept, dropped)
    subscribed.remove(dropped)
    result = classic.rejoin(before_join.append)
    assert before_join == [partitions_of(dropped)]
    assert result.revoked == set() and not result.rejoin
    assert classic.owned == partitions_of(kept)


def test_an_assignor_list_with_an_eager_entry_rebalances_eagerly(url: str, api: Api) -> None:
    """Kafka's ConsumerCoordinator: COOPERATIVE only if every assignor supports it. With
    ["cooperative-sticky", "range"] (the documented upgrade path) everything is revoked before
    each join, even though the group picks cooperative-sticky."""
    (topic,) = create_topics(api, 1)
    classic = member(url, unique("g"), [topic], ["cooperative-sticky", "range"])
    assert not classic.cooperative
    before_join: list[set[TopicPartition]] = []
    classic.rejoin(before_join.append)
    classic.rejoin(before_join.append)
    assert before_join == [partitions_of(topic)]
    assert classic.owned == partitions_of(topic)


def test_an_assignment_naming_an_unsubscribed_topic_is_refused(url: str, api: Api) -> None:
    """kafka-python's test_cooperative_assignment_for_unsubscribed_topic_bails (Kafka's
    ConsumerCoordinator: the assignment does not match the subscription): the member takes
    nothing of it, revokes nothing, keeps what it had and asks to rejoin."""
    mine, other = create_topics(api, 2)
    group = unique("g")
    metadata = encode_subscription(Subscription([mine, other], version=2))
    leader = ClassicClient(url, group, protocols=[("cooperative-sticky", metadata)])
    leader.join()
    leader.sync({leader.member_id: encode_assignment(Assignment({}))})
    classic = member(url, group, [mine], ["cooperative-sticky"])
    outcome: list[JoinResult] = []

    def member_rejoins() -> threading.Thread:
        return in_background(lambda: outcome.append(classic.rejoin(lambda _: None)))

    def leader_gives(joined: dict, assignment: Assignment) -> None:
        follower = next(
            m["memberId"] for m in joined["members"] if m["memberId"] != leader.member_id
        )
        leader.sync(
            {
                leader.member_id: encode_assignment(Assignment({})),
                follower: encode_assignment(assignment),
            }
        )

    joining = member_rejoins()  # round 1: the member gets `mine`
    wait_until(lambda: leader.heartbeat() == REBALANCE_IN_PROGRESS, 30, "the member's join")
    leader_gives(leader.join(), Assignment({mine: [0, 1]}))
    joining.join(timeout=30)
    assert classic.owned == partitions_of(mine)
    answers: list[dict] = []
    leading = in_background(lambda: answers.append(leader.join()))  # round 2, the leader's
    wait_until(lambda: describe_state(api, group) == "PreparingRebalance", 30, "round 2")
    joining = member_rejoins()
    leading.join(timeout=30)
    leader_gives(answers[0], Assignment({other: [0]}))
    joining.join(timeout=30)
    assert len(outcome) == 2, "the member's rounds did not finish"
    refused = outcome[1]
    assert refused.rejoin and not refused.assigned and not refused.revoked
    assert classic.owned == partitions_of(mine)


def describe_state(api: Api, group: str) -> str:
    return api.ok("describe-groups", {"groups": [group]})["groups"][0]["groupState"]


def in_background(work: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread


class Recorder:
    def __init__(self) -> None:
        self.lost: list[set[TopicPartition]] = []

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        pass

    def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        self.lost.append(partitions)


def test_a_member_whose_rejoin_is_cut_short_does_not_heartbeat_its_old_generation(
    url: str, api: Api
) -> None:
    """A join answered REBALANCE_IN_PROGRESS (the group moved on while the member waited at
    the barrier) leaves the member at its old generation with a rejoin due. Its heartbeats
    must wait for that rejoin, as Kafka's do: one sent meanwhile is answered
    ILLEGAL_GENERATION and the member gave its partitions up as lost (seen in the e2e
    test_a_fourth_member_joining_three_revokes_only_what_must_move under load)."""
    topic, elsewhere = create_topics(api, 2)  # the others read another topic: nothing moves
    group = unique("g")
    recorder = Recorder()
    member = GroupMember(
        url,
        group,
        topics=[topic],
        protocol="classic",
        assignors=("cooperative-sticky",),
        listener=recorder,
        session_timeout_ms=6000,
        rebalance_timeout_ms=6000,
        heartbeat_interval_ms=100,
    )
    metadata = encode_subscription(Subscription([elsewhere], version=2))
    other, third = (
        ClassicClient(url, group, protocols=[("cooperative-sticky", metadata)]) for _ in range(2)
    )
    try:
        wait_until(lambda: member.poll(0.2), 30, "the member's first assignment")
        in_background(other.join)  # generation 2: the member and `other`
        wait_until(lambda: member.poll(0.2) and other.generation == 2, 30, "generation 2")
        other.sync()
        in_background(third.join)  # a rebalance: the member's heartbeat hears of it
        wait_until(lambda: member._rejoin.is_set(), 30, "the rebalance heard of")
        polling = in_background(lambda: member.poll(0))  # joins, waits for `other`...
        time.sleep(0.5)
        other.join()  # ...which completes the barrier and leaves at once: the group moves on
        other.leave()
        polling.join(30)
        third.leave()  # (so that the member's next round does not wait for it)
        time.sleep(1.0)  # ten heartbeat intervals
        wait_until(lambda: member.poll(0.2) == partitions_of(topic), 30, "the member rejoined")
        assert recorder.lost == []
    finally:
        member.close()
