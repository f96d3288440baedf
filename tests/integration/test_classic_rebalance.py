"""Full rebalances of consumers driven by kafka-python's ConsumerProtocol and assignors: eager
(range) and cooperative (KIP-429, cooperative-sticky), a crash and a graceful leave, and a
subscribed topic that grows or appears."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    REBALANCE_IN_PROGRESS,
    Consumer,
    Ownership,
    TopicPartition,
    assignments_of,
    converged,
    diagnosis,
    unique,
    wait_until,
)
from tests.support.classic_client import settle as settle_group

# Generous bound for a group of healthy consumers to settle on a busy 2-core CI machine.
SETTLE_S = 20


pytestmark = pytest.mark.coordinator(FAST_SETTINGS, shared=True)


# A bound on real time, not a speed: generous enough for a machine whose cores are busy.
BUSY_SLACK_S = 10.0


def create_topic(api: Api, partitions: int) -> str:
    topic = unique("t")
    body = api.ok("create-topics", {"topics": [{"name": topic, "numPartitions": partitions}]})
    assert body["topics"][0]["errorCode"] == 0
    return topic


def every_partition(topics: dict[str, int]) -> set[TopicPartition]:
    return {(t, p) for t, n in topics.items() for p in range(n)}


def start(
    consumers: list[Consumer],
    url: str,
    group_id: str,
    topics: list[str],
    ownership: Ownership,
    count: int,
    **kwargs,
) -> list[Consumer]:
    kwargs.setdefault("session_timeout_ms", 6000)
    kwargs.setdefault("rebalance_timeout_ms", 10000)
    new = [
        Consumer(
            url,
            group_id,
            topics,
            name=f"c{len(consumers) + i}-{group_id}",
            ownership=ownership,
            **kwargs,
        )
        for i in range(count)
    ]
    consumers.extend(new)
    for consumer in new:
        consumer.start()
    return new


def settle(api: Api, group_id: str, members: list[Consumer], timeout_s: float = SETTLE_S) -> dict:
    return settle_group(api, group_id, members, timeout_s)


def assert_disjoint_cover(
    group: dict, partitions: set[TopicPartition], explain: Callable[[], str] = lambda: ""
) -> None:
    """`explain` adds to a failure's message (the consumers' recent requests, say)."""
    assigned = assignments_of(group)
    seen: list[TopicPartition] = [tp for tps in assigned.values() for tp in tps]
    assert len(seen) == len(set(seen)), f"a partition is assigned twice: {assigned}\n{explain()}"
    assert set(seen) == partitions, f"{group}\n{explain()}"


def test_eager_rebalance_of_three_range_consumers(api: Api, url: str, consumers) -> None:
    topics = {create_topic(api, 5): 5, create_topic(api, 3): 3}
    group_id, ownership = unique("eager"), Ownership()
    members = start(consumers, url, group_id, list(topics), ownership, 3)
    group = settle(api, group_id, members)

    assert group["protocolData"] == "range"
    assert_disjoint_cover(group, every_partition(topics))
    # The leader ran kafka-python's range assignor: per topic, contiguous ranges over the
    # member ids in order, the first n % m members getting one more.
    ordered = sorted(c.member_id for c in members)
    assigned = assignments_of(group)
    for topic, count in topics.items():
        sizes = [len([tp for tp in assigned[m] if tp[0] == topic]) for m in ordered]
        assert sizes == [count // 3 + (1 if i < count % 3 else 0) for i in range(3)]
    leaders = {c.leader for c in members}
    assert len(leaders) == 1 and leaders <= {c.member_id for c in members}
    assert ownership.violations == []
    # Each consumer holds exactly what describe-groups says it was given.
    for consumer in members:
        assert consumer.owned == assigned[consumer.member_id]
        assert ownership.held_by(consumer.name) == consumer.owned


def test_cooperative_rebalance_never_moves_a_partition_directly(
    api: Api, url: str, consumers
) -> None:
    topics = {create_topic(api, 6): 6, create_topic(api, 3): 3}
    group_id, ownership = unique("coop"), Ownership()
    first = start(consumers, url, group_id, list(topics), ownership, 2, cooperative=True)
    group = settle(api, group_id, first)
    assert group["protocolData"] == "cooperative-sticky"
    assert_disjoint_cover(group, every_partition(topics))
    before = assignments_of(group)
    rounds_before = {c.name: len(c.rounds) for c in first}

    # A third member arrives: partitions must move to it, through an unowned state.
    third = start(consumers, url, group_id, list(topics), ownership, 1, cooperative=True)
    members = first + third
    group = wait_until(
        lambda: (g := converged(api, group_id, members)) and all(assignments_of(g).values()) and g,
        SETTLE_S,
        "the third member to get partitions",
    )
    assert_disjoint_cover(group, every_partition(topics))
    after = assignments_of(group)
    moved = {tp for m in first for tp in before[m.member_id] - after[m.member_id]}
    assert moved and moved <= after[third[0].member_id]

    assert ownership.violations == []
    # Round by round, the leader never gave a member a partition another member said it owned.
    leader_rounds = [r for c in members for r in c.rounds if r.leader and r.owned_by_member]
    assert leader_rounds
    for round_ in leader_rounds:
        assert round_.leader_assignment is not None
        for member_id, given in round_.leader_assignment.items():
            for other, owned in round_.owned_by_member.items():
                if other != member_id:
                    assert not given & owned, (round_.generation, member_id, other)
    # The owners revoked what moved (owned - assigned) and rejoined at once: the move took
    # two rounds, the first of which revoked exactly the moved partitions.
    revoked = {tp for c in first for r in c.rounds[rounds_before[c.name] :] for tp in r.revoked}
    assert revoked == moved
    # Cooperative members kept what did not move: nobody revoked a partition it kept.
    for consumer in first:
        kept = before[consumer.member_id] & after[consumer.member_id]
        assert kept <= consumer.owned


def test_three_consumers_survive_a_crash_and_a_graceful_leave(
    api: Api, url: str, consumers
) -> None:
    """What a classic group must do: disjoint assignments covering every partition; a crashed
    member's partitions move within the session timeout plus one heartbeat interval; a leaving
    member's partitions move at the survivors' next heartbeat."""
    topics = {create_topic(api, 7): 7}
    partitions = every_partition(topics)
    group_id, ownership = unique("done"), Ownership()
    # Heartbeats every 300 ms; dead after threshold * session / frequency = the session.
    session_ms, frequency = 1500, 5
    interval_s = session_ms / frequency / 1000
    members = start(
        consumers,
        url,
        group_id,
        list(topics),
        ownership,
        3,
        session_timeout_ms=session_ms,
        heartbeat_frequency=frequency,
        failed_heartbeat_threshold=frequency,
    )
    group = settle(api, group_id, members)
    assert_disjoint_cover(group, partitions)
    assert all(c.heartbeat_interval_ms == 300 for c in members)

    # A crash: no leave, no heartbeat. The others take its partitions once its session runs
    # out and their next heartbeat answers 27. The bound is the session timeout plus one
    # heartbeat interval; we allow BUSY_SLACK_S more for the rebalance round trips on a busy
    # machine (with both cores taken by other programs, a rejoin and sync took 3 s and more).
    crashed, survivors = members[0], members[1:]
    crashed_partitions = set(crashed.owned)
    crashed.crash()
    group = settle(
        api, group_id, survivors, timeout_s=session_ms / 1000 + interval_s + BUSY_SLACK_S
    )
    # This has failed about 1 run in 5 (a partial assignment after the survivors settled): the
    # message carries every consumer's recent requests to tell why.
    assert_disjoint_cover(group, partitions, lambda: diagnosis(api, group_id, members, last=30))
    assert crashed_partitions <= set().union(*(c.owned for c in survivors))
    # Not before its session ran out, counted from its last request.
    assert time.monotonic() - crashed.log[-1][0] >= session_ms / 1000

    # A graceful leave: the other's very next heartbeat answers 27 and it takes everything.
    leaving, last = survivors
    assert [m["errorCode"] for m in leaving.close()["members"]] == [0]
    left_at = time.monotonic()
    group = settle(api, group_id, [last], timeout_s=interval_s + BUSY_SLACK_S)
    # Its next heartbeat after the leave answered 27: the first one answered after the leave
    # returned, or (if that one was already in flight and got in before the leave) the first
    # one sent after it.
    beats = [
        (sent, sent + taken, code)
        for sent, api, _, code, _, taken in last.log
        if api == "heartbeat"
    ]
    first_answered = next((code for _, answered, code in beats if answered >= left_at), None)
    first_sent = next((code for sent, _, code in beats if sent >= left_at), None)
    assert REBALANCE_IN_PROGRESS in (first_answered, first_sent)
    assert last.owned == partitions
    assert_disjoint_cover(group, partitions)
    assert ownership.violations == []


def test_a_subscribed_topic_that_grows_or_appears_rebalances_the_group(
    api: Api, url: str, consumers
) -> None:
    grows = create_topic(api, 2)
    appears = unique("later")
    group_id, ownership = unique("topics"), Ownership()
    members = start(consumers, url, group_id, [grows, appears], ownership, 2)
    settle(api, group_id, members)
    assert set().union(*(c.owned for c in members)) == every_partition({grows: 2})
    for consumer in members:
        consumer.stop()
    generation = members[0].generation

    # The topic grows: the group goes to PreparingRebalance, its next heartbeat answers 27.
    body = api.ok("create-partitions", {"topics": [{"name": grows, "count": 4}]})
    assert body["results"][0]["errorCode"] == 0
    assert members[0].heartbeat() == 27
    assert members[1].heartbeat() == 27
    for consumer in members:
        consumer.resume(rejoin=True)
    settle(api, group_id, members)
    assert members[0].generation > generation
    assert set().union(*(c.owned for c in members)) == every_partition({grows: 4})

    # A topic it subscribes to is created: the same.
    for consumer in members:
        consumer.stop()
    body = api.ok("create-topics", {"topics": [{"name": appears, "numPartitions": 2}]})
    assert body["topics"][0]["errorCode"] == 0
    assert members[0].heartbeat() == 27
    for consumer in members:
        consumer.resume(rejoin=True)
    settle(api, group_id, members)
    assert set().union(*(c.owned for c in members)) == every_partition({grows: 4, appears: 2})
    assert ownership.violations == []
