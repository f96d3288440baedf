"""Online downgrade of a consumer group to a classic group, over HTTP: when the
last consumer-protocol member of a mixed group leaves or expires, the classic-protocol members
that remain find a classic group (generation = group epoch, PreparingRebalance), rejoin it as
ordinary classic members and converge; commits follow the classic rules; no partition is held
by two members at any moment."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.integration.test_consumer_migration import fetch
from tests.integration.test_consumer_upgrade import (
    PARTITIONS,
    STAGED,
    Tracked,
    commit,
    converge,
    group_type,
)
from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    Consumer,
    Ownership,
    describe,
    settle,
)
from tests.support.consumer import create_topic, unique
from tests.support.servers import running_service

SESSION_MS = 4000
SETTINGS = {
    **FAST_SETTINGS,
    "group.consumer.min.session.timeout.ms": "100",
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.consumer.min.heartbeat.interval.ms": "50",
    "group.consumer.heartbeat.interval.ms": "500",
}


pytestmark = pytest.mark.coordinator(SETTINGS)


@pytest.fixture(scope="module")
def staged_url(service_endpoint: str | None) -> Iterator[str]:
    with running_service(service_endpoint, settings={**SETTINGS, **STAGED}) as base:
        yield base


@pytest.fixture(scope="module")
def upgrade_only_url(service_endpoint: str | None) -> Iterator[str]:
    settings = {**SETTINGS, "group.consumer.migration.policy": "upgrade"}
    with running_service(service_endpoint, settings=settings) as base:
        yield base


def mixed_group(
    url: str,
    api: Api,
    cooperative: bool = True,
    static: bool = False,
    consumer_instance: str | None = None,
) -> tuple[str, str, Ownership, list[Consumer], Tracked]:
    """Three classic members settle, one restarts on the consumer protocol (the upgrade): a
    mixed group of two classic members c0, c1 and one consumer-protocol member (static with
    `consumer_instance`)."""
    group, topic = unique("g"), unique("t")
    topic_id = create_topic(api, topic, PARTITIONS)
    ownership = Ownership()
    consumers = [
        Consumer(
            url, group, [topic], name=f"c{i}", ownership=ownership, cooperative=cooperative,
            **({"instance_id": f"i-{i}"} if static else {}),
        )
        for i in range(3)
    ]  # fmt: skip
    for c in consumers:
        c.start()
    settle(api, group, consumers, 60)
    consumers[2].close()
    settle(api, group, consumers[:2], 60)
    m = Tracked(api, group, topic, topic_id, ownership)
    m.instance_id = consumer_instance
    assert m.join()["errorCode"] == 0, m.last
    converge(api, group, consumers[:2], [m])
    assert group_type(api, group) == "consumer"
    return group, topic, ownership, consumers, m


def check_classic_again(
    api: Api, group: str, topic: str, ownership: Ownership, classic: list[Consumer], epoch: int
) -> None:
    """The group is a classic group again, its members converge and commit as classic ones."""
    assert group_type(api, group) == "classic"
    described = describe(api, group)
    assert described["errorCode"] == 0 and described["protocolType"] == "consumer", described
    settled = settle(api, group, classic, 60)
    assert {m["memberId"] for m in settled["members"]} == {c.member_id for c in classic}
    assert ownership.violations == []
    held = [c.owned for c in classic]
    assert set().union(*held) == {(topic, p) for p in range(PARTITIONS)}
    assert sum(len(h) for h in held) == PARTITIONS  # no partition held twice
    c0 = classic[0]
    # The classic generation continues from the group epoch, through the rebalance.
    assert c0.generation > epoch
    assert commit(api, group, topic, c0.generation, c0.member_id, 3) == 0
    assert commit(api, group, topic, c0.generation + 1, c0.member_id, 3) == 22
    assert commit(api, group, topic, c0.generation - 1, c0.member_id, 3) == 22
    assert api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]["errorCode"] == 69


def recent_epochs(api: Api, group: str) -> list[int]:
    """The epochs (generations) of the group's recorded rebalances, oldest first."""
    body = api.ok("describe-group-activity", {"groupIds": [group]})
    return [r["epoch"] for r in body["groups"][0]["recentRebalances"]]


@pytest.mark.parametrize("cooperative", [False, True], ids=["eager", "cooperative"])
def test_the_last_consumer_member_leaving_downgrades_the_group(url: str, cooperative: bool) -> None:
    api = Api(url)
    group, topic, ownership, consumers, m = mixed_group(url, api, cooperative)
    try:
        epoch = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]["groupEpoch"]
        # Committed offsets survive the conversion.
        assert commit(api, group, topic, m.epoch, m.member_id, 5) == 0
        before = recent_epochs(api, group)
        assert before[-1] == epoch
        m.close()  # epoch -1: the last consumer-protocol member leaves
        assert group_type(api, group) == "classic"
        check_classic_again(api, group, topic, ownership, consumers[:2], epoch)
        assert fetch(api, group, topic, [5]) == {5: 7}
        # The consumer group's record of its epochs goes on as the classic group's.
        after = recent_epochs(api, group)
        assert epoch in after and after[-1] > epoch, (before, after)
    finally:
        for c in consumers:
            c.stop()


def test_the_last_consumer_member_expiring_downgrades_the_group(url: str) -> None:
    api = Api(url)
    group, topic, ownership, consumers, m = mixed_group(url, api)
    try:
        epoch = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]["groupEpoch"]
        # m goes silent (a crash): its session expires, lazily or by the sweeper.
        ownership.release(m.name, m.held())
        deadline = time.monotonic() + 3 * SESSION_MS / 1000 + 10
        while group_type(api, group) != "classic":
            assert time.monotonic() < deadline, "the group was not downgraded"
            for c in consumers[:2]:
                c.check()
            time.sleep(0.2)
        check_classic_again(api, group, topic, ownership, consumers[:2], epoch)
        assert m.heartbeat()["errorCode"] != 0
    finally:
        for c in consumers:
            c.stop()


def test_static_members_keep_their_instance_ids_through_the_downgrade(url: str) -> None:
    """The instance claims move to the classic group: a static member that restarts (new
    member id, same instance id) replaces the old one, which is fenced (82)."""
    api = Api(url)
    group, topic, ownership, consumers, m = mixed_group(url, api, static=True)
    try:
        epoch = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]["groupEpoch"]
        m.close()
        s0, s1 = consumers[:2]
        check_classic_again(api, group, topic, ownership, [s0, s1], epoch)
        by_instance = {x["groupInstanceId"]: x["memberId"] for x in describe(api, group)["members"]}
        assert by_instance == {"i-0": s0.member_id, "i-1": s1.member_id}
        s1.crash()
        again = Consumer(
            url, group, [topic], name="s1-again", ownership=ownership, cooperative=True,
            instance_id="i-1",
        )  # fmt: skip
        consumers.append(again.start())
        settle(api, group, [s0, again], 60)
        assert again.member_id != s1.member_id
        assert s1.heartbeat() == 82
        assert ownership.violations == []
    finally:
        for c in consumers:
            c.stop()


def test_the_last_consumer_member_restarting_as_a_classic_one_downgrades_the_group(
    url: str,
) -> None:
    """Kafka's validateOnlineDowngradeWithReplacedMember: the static consumer-protocol member
    restarts on the classic protocol with its instance id; its join downgrades the group
    without it and joins the classic group in its place."""
    api = Api(url)
    group, topic, ownership, consumers, m = mixed_group(
        url, api, static=True, consumer_instance="i-m"
    )
    try:
        epoch = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]["groupEpoch"]
        ownership.release(m.name, m.held())  # m crashes, and restarts as a classic member
        again = Consumer(
            url, group, [topic], name="m-classic", ownership=ownership, cooperative=True,
            instance_id="i-m",
        )  # fmt: skip
        consumers.append(again.start())
        s0, s1 = consumers[:2]
        deadline = time.monotonic() + 30
        while group_type(api, group) != "classic":  # once its join has arrived
            assert time.monotonic() < deadline, "the group was not downgraded"
            time.sleep(0.1)
        check_classic_again(api, group, topic, ownership, [s0, s1, again], epoch)
        by_instance = {x["groupInstanceId"]: x["memberId"] for x in describe(api, group)["members"]}
        assert by_instance == {"i-0": s0.member_id, "i-1": s1.member_id, "i-m": again.member_id}
        assert m.heartbeat()["errorCode"] == 69  # the consumer-protocol member is gone
    finally:
        for c in consumers:
            c.stop()


def test_no_downgrade_when_the_policy_is_upgrade_only(upgrade_only_url: str) -> None:
    api = Api(upgrade_only_url)
    group, _topic, ownership, consumers, m = mixed_group(upgrade_only_url, api)
    try:
        m.close()
        assert group_type(api, group) == "consumer"
        converge(api, group, consumers[:2], [])
        assert ownership.violations == []
        described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
        assert {x["memberId"] for x in described["members"]} == {c.member_id for c in consumers[:2]}
    finally:
        for c in consumers:
            c.stop()


@pytest.mark.parametrize("conversion", ["transaction", "staged"])
def test_rolling_downgrade_one_member_at_a_time(
    request: pytest.FixtureRequest, conversion: str
) -> None:
    """Three consumer-protocol members restart one by one as classic members: a mixed group,
    then, when the last one leaves, a classic group; no partition is ever held twice."""
    url = request.getfixturevalue("url" if conversion == "transaction" else "staged_url")
    api = Api(url)
    group, topic = unique("g"), unique("t")
    topic_id = create_topic(api, topic, PARTITIONS)
    ownership = Ownership()
    members = [Tracked(api, group, topic, topic_id, ownership) for _ in range(3)]
    classic: list[Consumer] = []
    try:
        for mm in members:
            assert mm.join()["errorCode"] == 0, mm.last
        converge(api, group, [], members)
        epoch = 0
        for i in range(3):
            leaving = members.pop()
            if not members:
                described = api.ok("consumer-group-describe", {"groupIds": [group]})
                epoch = described["groups"][0]["groupEpoch"]
            leaving.close()
            c = Consumer(url, group, [topic], name=f"r{i}", ownership=ownership, cooperative=True)
            if members:
                converge(api, group, classic, members)  # the others take over its partitions
                classic.append(c.start())
                converge(api, group, classic, members)
                assert group_type(api, group) == "consumer"
                for cc in classic:
                    assert commit(api, group, topic, cc.generation, cc.member_id, 2) == 0
                    assert commit(api, group, topic, cc.generation + 1, cc.member_id, 2) == 22
                for mm in members:
                    assert commit(api, group, topic, mm.epoch, mm.member_id, 2) == 0
            else:
                # The last consumer-protocol member left: a classic group, which the
                # restarted member joins as any classic member.
                assert group_type(api, group) == "classic"
                classic.append(c.start())
            assert ownership.violations == []
        check_classic_again(api, group, topic, ownership, classic, epoch)
    finally:
        for c in classic:
            c.stop()
