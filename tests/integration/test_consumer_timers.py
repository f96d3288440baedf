"""Consumer group timers and topic changes over HTTP, with short timeouts: session expiry and
rebalance-timeout fencing (lazily and by the sweeper), regex subscriptions picking up new
topics, partition growth reaching every subscribed group, and the steady heartbeat's cost."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.api import Api
from tests.support.consumer import Member, create_topic, describe, settle, unique, until
from tests.support.servers import IMMEDIATE_INSTALLS, running_service

SESSION_MS = 1500
SETTINGS = {
    "group.consumer.min.session.timeout.ms": "100",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "50",
    "group.consumer.heartbeat.interval.ms": "200",
    "groupcoord.sweep.interval.ms": "200",
    **IMMEDIATE_INSTALLS,
}


@pytest.fixture(scope="module")
def fast(service_endpoint: str | None) -> Iterator[Api]:
    with running_service(service_endpoint, settings=SETTINGS) as url:
        yield Api(url)


def test_a_silent_member_is_fenced_by_the_sweeper_and_its_partitions_move(fast: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(fast, topic, 4)
    a, b = Member(fast, group, [topic]), Member(fast, group, [topic])
    a.join()
    b.join()
    settle([a, b])
    epoch = describe(fast, group)["groupEpoch"]
    # b goes silent; a keeps heartbeating until it owns everything.
    until(lambda: a.heartbeat()["errorCode"] == 0 and a.owned.get(tid) == {0, 1, 2, 3})
    described = describe(fast, group)
    assert [m["memberId"] for m in described["members"]] == [a.member_id]
    assert described["groupEpoch"] > epoch
    assert b.heartbeat()["errorCode"] == 25


def test_an_idle_group_is_emptied_by_the_sweeper_alone(fast: Api) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(fast, topic, 2)
    Member(fast, group, [topic]).join()
    listed = until(
        lambda: [
            g
            for g in fast.ok("list-groups", {})["groups"]
            if g["groupId"] == group and g["groupState"] == "Empty"
        ],
        timeout_s=15,
    )
    assert listed[0]["groupType"] == "consumer"


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(fast: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(fast, topic, 4)
    a = Member(fast, group, [topic], rebalance_timeout_ms=300)
    a.join()
    b = Member(fast, group, [topic])
    b.join()
    # a keeps heartbeating (its session stays alive) but never acknowledges the revocation.
    assert a.heartbeat(ack=False)["memberEpoch"] == 1

    def fenced() -> bool:
        answer = a.send({"memberEpoch": a.epoch})  # null topicPartitions: still owning
        b.heartbeat()
        return answer["errorCode"] in (25, 110)

    until(fenced, timeout_s=10)
    until(lambda: b.heartbeat() and b.owned.get(tid) == {0, 1, 2, 3}, timeout_s=10)


def test_regex_subscription_picks_up_a_topic_created_later(fast: Api) -> None:
    group, prefix = unique("g"), unique("rx")
    first = create_topic(fast, f"{prefix}-a", 2)
    m = Member(fast, group, topics=None, regex=f"{prefix}-.*")
    m.join()
    settle([m])
    assert set(m.owned) == {first}
    epoch = m.epoch
    create_topic(fast, f"{prefix}-ignored".replace(prefix, unique("other")), 2)
    second = create_topic(fast, f"{prefix}-b", 3)
    until(lambda: m.heartbeat() and m.owned.get(second) == {0, 1, 2})
    assert m.owned[first] == {0, 1} and m.epoch > epoch
    assert describe(fast, group)["members"][0]["subscribedTopicRegex"] == f"{prefix}-.*"


def test_a_partition_increase_reaches_every_subscribed_group(fast: Api) -> None:
    topic = unique("t")
    tid = create_topic(fast, topic, 2)
    members = [Member(fast, unique("g"), [topic]) for _ in range(3)]
    for m in members:
        m.join()
    settle(members)  # all together: each round heartbeats every member
    body = fast.ok("create-partitions", {"topics": [{"name": topic, "count": 5}]})
    assert body["results"][0]["errorCode"] == 0

    def everyone_has_all_five() -> bool:
        # Each round heartbeats every member: waiting on one at a time left the others silent
        # past their 1.5 s session on a busy machine.
        beats = [m.heartbeat() for m in members]
        return all(beats) and all(m.owned.get(tid) == {0, 1, 2, 3, 4} for m in members)

    until(everyone_has_all_five)
