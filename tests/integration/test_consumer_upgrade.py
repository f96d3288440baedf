"""Online upgrade of a classic group with members, and the mixed groups it leaves,
over HTTP: classic consumers (kafka-python's protocol classes and assignors,
tests/support/classic_client.py) restart one by one on the consumer protocol, with commits from
both kinds of member accepted or fenced, and no partition ever held by two members."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    Consumer,
    Ownership,
    TopicPartition,
    settle,
)
from tests.support.consumer import Member, create_topic, unique
from tests.support.servers import running_service

PARTITIONS = 6


pytestmark = pytest.mark.coordinator(FAST_SETTINGS)


# A conversion of more than one item's writes is staged and flipped (store/conversion.py), as
# one of 1,000 members is with DynamoDB's 100-item transactions.
STAGED = {"groupcoord.conversion.transaction.items": "2"}


@pytest.fixture(scope="module")
def staged_url(service_endpoint: str | None) -> Iterator[str]:
    with running_service(service_endpoint, settings={**FAST_SETTINGS, **STAGED}) as base:
        yield base


def commit(api: Api, group: str, topic: str, epoch: int, member_id: str, partition: int) -> int:
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "generationIdOrMemberEpoch": epoch,
            "memberId": member_id,
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": partition, "committedOffset": 7}]}
            ],
        },
    )
    (code,) = {p["errorCode"] for t in body["topics"] for p in t["partitions"]}
    return code


def group_type(api: Api, group: str) -> str | None:
    listed = {g["groupId"]: g for g in api.ok("list-groups", {})["groups"]}
    return listed[group]["groupType"] if group in listed else None


class Tracked(Member):
    """A consumer-protocol member that records what it holds in the shared Ownership (it
    acknowledges each assignment at once: revoked partitions are released first)."""

    def __init__(self, api: Api, group: str, topic: str, topic_id: str, ownership: Ownership):
        super().__init__(api, group, [topic], rebalance_timeout_ms=10_000)
        self.topic, self.topic_id, self.ownership = topic, topic_id, ownership
        self.name = f"m-{self.member_id[:6]}"

    def held(self) -> set[TopicPartition]:
        return {(self.topic, p) for p in self.owned.get(self.topic_id, set())}

    def _take(self, response: dict) -> None:
        before = self.held()
        super()._take(response)
        after = self.held()
        self.ownership.release(self.name, before - after)
        self.ownership.acquire(self.name, after - before)

    def close(self) -> None:
        self.ownership.release(self.name, self.held())
        self.owned = {}
        assert self.leave()["memberEpoch"] == -1


def converge(
    api: Api, group: str, classic: list[Consumer], members: list[Tracked], timeout_s: float = 60
) -> None:
    """Drive the consumer-protocol members (the classic ones run their own loops) until the
    partitions are spread evenly, each held by exactly one member, and everyone is settled."""
    everything = {(members[0].topic if members else classic[0].topics[0], p)
                  for p in range(PARTITIONS)}  # fmt: skip
    deadline = time.monotonic() + timeout_s
    while True:
        for m in members:
            m.heartbeat()
            assert m.last["errorCode"] == 0, m.last
        for c in classic:
            c.check()
        held = [c.owned for c in classic] + [m.held() for m in members]
        settled = all(not c.needs_rejoin and c.synced_generation == c.generation for c in classic)
        balanced = all(len(h) == PARTITIONS // len(held) for h in held)
        if settled and balanced and set().union(*held) == everything:
            described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
            states = {m["memberId"]: m["memberEpoch"] for m in described["members"]}
            if len(set(states.values())) == 1 and described["groupState"] == "Stable":
                return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no convergence: classic={[(c.name, c.generation, c.owned) for c in classic]} "
                f"members={[(m.name, m.epoch, m.held()) for m in members]}"
            )
        time.sleep(0.1)


def start_classic_group(
    url: str, api: Api, cooperative: bool, **consumer_options: Any
) -> tuple[str, str, str, Ownership, list[Consumer]]:
    group, topic = unique("g"), unique("t")
    topic_id = create_topic(api, topic, PARTITIONS)
    ownership = Ownership()
    consumers = [
        Consumer(
            url,
            group,
            [topic],
            name=f"c{i}",
            ownership=ownership,
            cooperative=cooperative,
            **consumer_options,
        )
        for i in range(3)
    ]
    for c in consumers:
        c.start()
    settle(api, group, consumers, 60)
    return group, topic, topic_id, ownership, consumers


@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_upgrade_keeps_the_classic_members_working(url: str, cooperative: bool) -> None:
    api = Api(url)
    group, topic, topic_id, ownership, consumers = start_classic_group(url, api, cooperative)
    c0, c1, c2 = consumers
    try:
        # c2 restarts on the consumer protocol: it leaves, the other two settle again.
        c2.close()
        settle(api, group, [c0, c1], 60)
        generation = c0.generation
        for c in (c0, c1):
            c.stop()  # hold the classic loops: the steps below are checked one by one
        assert commit(api, group, topic, generation, c0.member_id, 0) == 0

        m = Tracked(api, group, topic, topic_id, ownership)
        joined = m.join()
        assert joined["errorCode"] == 0, joined
        assert group_type(api, group) == "consumer"
        assert joined["memberEpoch"] == generation + 1
        # The classic group's record of its generations goes on as the consumer group's.
        body = api.ok("describe-group-activity", {"groupIds": [group]})
        recorded = [(r["epoch"], r["cause"]) for r in body["groups"][0]["recentRebalances"]]
        assert recorded[-2:] == [(generation, "leave"), (generation + 1, "join")], recorded
        # Nothing the classic members hold goes to the newcomer before they give it up.
        assert not (m.held() & (c0.owned | c1.owned)), (m.held(), c0.owned, c1.owned)

        # Classic members are at epoch = generation: the strict rule (22) for their commits.
        assert commit(api, group, topic, generation, c0.member_id, 0) == 0
        assert commit(api, group, topic, generation - 1, c0.member_id, 0) == 22
        assert commit(api, group, topic, generation + 1, c1.member_id, 0) == 22
        # The consumer-protocol member has KIP-1251 epochs.
        assert commit(api, group, topic, m.epoch, m.member_id, 0) == 0
        assert commit(api, group, topic, m.epoch + 1, m.member_id, 0) == 113
        assert commit(api, group, topic, generation, "nobody", 0) == 25
        # Their heartbeat at the generation says: rejoin (the group epoch moved on).
        assert c0.heartbeat() == 27
        wrong = c0.generation
        c0.generation = wrong - 1
        assert c0.heartbeat() == 22
        c0.generation = wrong

        for c in (c0, c1):
            c.resume(rejoin=True)
        converge(api, group, [c0, c1], [m])
        assert ownership.violations == []
        # Settled: each classic member's generation is its member epoch, and commits with it.
        assert c0.generation == c1.generation == m.epoch
        assert commit(api, group, topic, c0.generation, c0.member_id, 1) == 0
        assert commit(api, group, topic, c0.generation - 1, c0.member_id, 1) == 22
        assert commit(api, group, topic, m.epoch, m.member_id, 1) == 0
    finally:
        for c in consumers:
            c.stop()


@pytest.mark.parametrize("conversion", ["transaction", "staged"])
def test_rolling_upgrade_one_member_at_a_time(
    request: pytest.FixtureRequest, conversion: str
) -> None:
    """Three classic members become three consumer-protocol members, one restart at a time;
    after each step commits from both kinds are checked and no partition is held twice."""
    url = request.getfixturevalue("url" if conversion == "transaction" else "staged_url")
    api = Api(url)
    group, topic, topic_id, ownership, consumers = start_classic_group(url, api, True)
    classic = list(consumers)
    members: list[Tracked] = []
    try:
        while classic:
            leaving = classic.pop()
            if members:
                # A classic member of the mixed group leaves (leave-group): the group goes on.
                answer = leaving.close()
                assert [r["errorCode"] for r in answer["members"]] == [0], answer
            else:
                leaving.close()
                settle(api, group, classic, 60)
            m = Tracked(api, group, topic, topic_id, ownership)
            assert m.join()["errorCode"] == 0, m.last
            members.append(m)
            assert group_type(api, group) == "consumer"
            converge(api, group, classic, members)
            assert ownership.violations == []
            for c in classic:
                assert commit(api, group, topic, c.generation, c.member_id, 2) == 0
                assert commit(api, group, topic, c.generation + 1, c.member_id, 2) == 22
            for mm in members:
                assert commit(api, group, topic, mm.epoch, mm.member_id, 2) == 0
                assert commit(api, group, topic, mm.epoch + 1, mm.member_id, 2) == 113
        described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
        assert {m["memberId"] for m in described["members"]} == {m.member_id for m in members}
    finally:
        for c in consumers:
            c.stop()


def test_a_crashed_classic_member_of_a_mixed_group_expires(url: str) -> None:
    """Its session timeout (the classic one it joined with) removes it; its partitions go to
    the others only then."""
    api = Api(url)
    group, topic, topic_id, ownership, consumers = start_classic_group(url, api, True)
    c0, c1, c2 = consumers
    try:
        c2.close()
        settle(api, group, [c0, c1], 60)
        m = Tracked(api, group, topic, topic_id, ownership)
        assert m.join()["errorCode"] == 0, m.last
        converge(api, group, [c0, c1], [m])
        c1.crash()
        converge(api, group, [c0], [m])
        assert ownership.violations == []
        described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
        assert {x["memberId"] for x in described["members"]} == {c0.member_id, m.member_id}
        assert commit(api, group, topic, c1.generation, c1.member_id, 0) == 25
    finally:
        for c in consumers:
            c.stop()


def test_static_classic_members_keep_their_instance_ids_through_the_upgrade(url: str) -> None:
    """Static classic members are upgraded with their instance ids; one that restarts (a new
    member id, the same instance id) takes its place at once, the old id is fenced (82)."""
    api = Api(url)
    group, topic = unique("g"), unique("t")
    topic_id = create_topic(api, topic, PARTITIONS)
    ownership = Ownership()
    consumers = [
        Consumer(
            url, group, [topic], name=f"s{i}", ownership=ownership, cooperative=True,
            instance_id=f"i-{i}",
        )
        for i in range(2)
    ]  # fmt: skip
    try:
        for c in consumers:
            c.start()
        settle(api, group, consumers, 60)
        s0, s1 = consumers
        m = Tracked(api, group, topic, topic_id, ownership)
        assert m.join()["errorCode"] == 0, m.last
        converge(api, group, [s0, s1], [m])
        s1.crash()
        again = Consumer(
            url, group, [topic], name="s1-again", ownership=ownership, cooperative=True,
            instance_id="i-1",
        )  # fmt: skip
        consumers.append(again)
        again.start()
        converge(api, group, [s0, again], [m])
        assert again.member_id != s1.member_id
        assert s1.heartbeat() == 82
        assert ownership.violations == []
        described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
        by_instance = {x.get("instanceId"): x["memberId"] for x in described["members"]}
        assert by_instance == {"i-0": s0.member_id, "i-1": again.member_id, None: m.member_id}
    finally:
        for c in consumers:
            c.stop()


def test_upgrade_cuts_a_rebalance_in_progress_short(url: str) -> None:
    """A classic group in PreparingRebalance (a second member's join is waiting for the
    first): the upgrade converts it as Kafka does; the first member keeps its partitions at
    epoch = generation until it rejoins and gives them up; the waiting one joins the consumer
    group on its next poll."""
    from groupcoord.wire.consumer_protocol import Assignment, decode_assignment, encode_assignment
    from tests.support.classic_client import ClassicClient, encode_subscription, unb64

    api = Api(url)
    group, topic = unique("g"), unique("t")
    topic_id = create_topic(api, topic, 4)

    def client() -> ClassicClient:
        return ClassicClient(
            url, group, protocols=[("range", encode_subscription([topic], (), 1))],
            session_timeout_ms=10_000, rebalance_timeout_ms=10_000,
        )  # fmt: skip

    a = client()
    assert a.join()["errorCode"] == 0 and a.is_leader
    everything = encode_assignment(Assignment({topic: [0, 1, 2, 3]}))
    assert a.sync({a.member_id: everything})["errorCode"] == 0
    generation = a.generation
    b = client()
    first = b.join_once()
    assert first.body["errorCode"] == 79
    b.member_id = first.body["memberId"]
    assert b.join_once().status == 202  # PreparingRebalance: waiting for a

    m = Member(api, group, [topic])
    joined = m.join()
    assert joined["errorCode"] == 0, joined
    assert joined["memberEpoch"] == generation + 1
    assert m.owned == {}  # a still holds everything
    assert commit(api, group, topic, generation, a.member_id, 0) == 0
    assert a.heartbeat() == 27

    # b's next poll joins the consumer group (generation = its member epoch).
    b_joined = b.join()
    assert b_joined["errorCode"] == 0 and b_joined["leader"] == "", b_joined
    assert b_joined["generationId"] == generation + 1
    assert decode_assignment(unb64(b.sync()["assignment"])).partitions == {}

    # a rejoins still owning everything (cooperative): it keeps only what it may keep.
    a.protocols = [("range", encode_subscription([topic], [(topic, p) for p in range(4)], 1))]
    assert a.join()["errorCode"] == 0
    assert a.generation == generation  # UNREVOKED_PARTITIONS: its epoch does not move yet
    kept = decode_assignment(unb64(a.sync()["assignment"])).partitions.get(topic, [])
    assert 0 < len(kept) < 4
    assert m.heartbeat()["errorCode"] == 0 and m.owned == {}
    a.protocols = [("range", encode_subscription([topic], [(topic, p) for p in kept], 1))]
    assert a.join()["errorCode"] == 0 and a.generation == generation + 1
    assert commit(api, group, topic, generation, a.member_id, 0) == 22
    assert commit(api, group, topic, a.generation, a.member_id, kept[0]) == 0

    def holdings() -> list[set[int]]:
        m.heartbeat()
        b_has = decode_assignment(unb64(b.sync()["assignment"])).partitions.get(topic, [])
        return [set(kept), set(b_has), m.owned.get(topic_id, set())]

    deadline = time.monotonic() + 30
    while True:
        if b.heartbeat() == 27:
            assert b.join()["errorCode"] == 0
        held = holdings()
        assert sum(map(len, held)) == len(set().union(*held)), held  # never twice
        if set().union(*held) == {0, 1, 2, 3}:
            break
        assert time.monotonic() < deadline, held
        time.sleep(0.1)
