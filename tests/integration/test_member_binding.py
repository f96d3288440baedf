"""Members belong to the principal that created them (core/ownership.py): with the authorizer
on, a principal that may READ the group still cannot drive another principal's member, by its
member id or its static instance id, in any API that names a member. Each refusal is 30 and
changes nothing (looked at as the super user). A super user may act as any member."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.wire.consumer_protocol import Subscription, encode_subscription
from tests.support.acls import (
    ADMIN,
    GROUP,
    GROUP_DENIED,
    PREFIXED,
    READ,
    TOPIC,
    acl,
    authorizer_on,
    grant,
)
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.classic_client import FAST_SETTINGS, ClassicClient
from tests.support.consumer import Member, create_topic, unique
from tests.support.servers import IMMEDIATE_INSTALLS

ALICE = "User:alice"
MALLORY = "User:mallory"
SETTINGS = {**FAST_SETTINGS, **IMMEDIATE_INSTALLS, **authorizer_on()}
NOT_OWNER = GROUP_DENIED
PREFIX = "bound-"


pytestmark = pytest.mark.coordinator(SETTINGS, principal_header=PRINCIPAL_HEADER)


@pytest.fixture(scope="module", autouse=True)
def granted(url: str) -> None:
    """Both may READ every group and topic of the prefix: only ownership tells them apart."""
    grant(
        Api(url, principal=ADMIN),
        *(
            acl(resource_type, PREFIX, principal, READ, pattern=PREFIXED)
            for resource_type in (GROUP, TOPIC)
            for principal in (ALICE, MALLORY)
        ),
    )


@pytest.fixture(scope="module")
def topic(admin: Api) -> str:
    name = unique(PREFIX + "t")
    create_topic(admin, name, 2)
    return name


def classic(url: str, group_id: str, principal: str, **fields: Any) -> ClassicClient:
    client = ClassicClient(url, group_id, **fields)
    client.api.session.headers[PRINCIPAL_HEADER] = principal
    return client


def described(admin: Api, group_id: str) -> dict[str, Any]:
    return admin.ok("describe-groups", {"groups": [group_id]})["groups"][0]


def commit(api: Api, group_id: str, topic: str, generation: int, member_id: str, **extra: Any):
    body = {
        "groupId": group_id,
        "generationIdOrMemberEpoch": generation,
        "memberId": member_id,
        **extra,
        "topics": [{"name": topic, "partitions": [{"partitionIndex": 0, "committedOffset": 9}]}],
    }
    return api.ok("offset-commit", body)["topics"][0]["partitions"][0]["errorCode"]


def committed(admin: Api, group_id: str, topic: str) -> int:
    body = {"groups": [{"groupId": group_id, "topics": [{"name": topic, "partitionIndexes": [0]}]}]}
    fetched = admin.ok("offset-fetch", body)["groups"][0]["topics"][0]["partitions"][0]
    return fetched["committedOffset"]


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_a_classic_member_answers_only_to_its_creator(
    url: str, admin: Api, topic: str, static: bool
) -> None:
    group_id = unique(PREFIX + "classic")
    instance = {"instance_id": unique("i")} if static else {}
    alice = classic(url, group_id, ALICE, **instance)
    assert alice.join()["errorCode"] == 0
    assert alice.sync({alice.member_id: b"mine"})["errorCode"] == 0
    before = described(admin, group_id)
    assert [m["principal"] for m in before["members"]] == [ALICE]

    # Mallory names alice's member (and instance, if static) on every API: 30 each time.
    mallory = classic(url, group_id, MALLORY, member_id=alice.member_id, **instance)
    mallory.generation, mallory.protocol_name = alice.generation, alice.protocol_name
    assert mallory.join_once().body["errorCode"] == NOT_OWNER
    assert mallory.sync_once({alice.member_id: b"stolen"}).body["errorCode"] == NOT_OWNER
    assert mallory.heartbeat() == NOT_OWNER
    assert mallory.leave()["members"][0]["errorCode"] == NOT_OWNER
    mallory_api = Api(url, principal=MALLORY)
    assert commit(mallory_api, group_id, topic, alice.generation, alice.member_id) == NOT_OWNER
    if static:
        # A new member id on alice's instance would replace her: refused too.
        usurper = classic(url, group_id, MALLORY, **instance)
        assert usurper.join_once().body["errorCode"] == NOT_OWNER

    after = described(admin, group_id)
    assert after["groupState"] == "Stable" and after["members"] == before["members"]
    assert committed(admin, group_id, topic) == -1
    # Alice goes on as before.
    assert alice.heartbeat() == 0
    own = {"groupInstanceId": instance["instance_id"]} if static else {}
    alice_api = Api(url, principal=ALICE)
    assert commit(alice_api, group_id, topic, alice.generation, alice.member_id, **own) == 0
    assert committed(admin, group_id, topic) == 9
    # An operator (a super user) may remove any member.
    removed = classic(url, group_id, ADMIN, member_id=alice.member_id, **instance).leave()
    assert removed["members"][0]["errorCode"] == 0
    assert described(admin, group_id)["groupState"] == "Empty"


def test_a_pending_member_id_is_its_creators(url: str, admin: Api) -> None:
    group_id = unique(PREFIX + "pending")
    alice = classic(url, group_id, ALICE)
    first = alice.join_once().body
    assert first["errorCode"] == 79  # MEMBER_ID_REQUIRED: a pending id, alice's
    mallory = classic(url, group_id, MALLORY, member_id=first["memberId"])
    assert mallory.join_once().body["errorCode"] == NOT_OWNER
    alice.member_id = first["memberId"]
    assert alice.join()["errorCode"] == 0


@pytest.mark.parametrize("static", [False, True], ids=["dynamic", "static"])
def test_a_consumer_protocol_member_answers_only_to_its_creator(
    url: str, admin: Api, topic: str, static: bool
) -> None:
    group_id = unique(PREFIX + "consumer")
    instance = unique("i") if static else None
    alice_api, mallory_api = Api(url, principal=ALICE), Api(url, principal=MALLORY)
    alice = Member(alice_api, group_id, topics=[topic], instance_id=instance)
    assert alice.join()["errorCode"] == 0
    alice.heartbeat()

    def snapshot() -> dict[str, Any]:
        body = {"groupIds": [group_id]}
        return admin.ok("consumer-group-describe", body)["groups"][0]

    before = snapshot()
    assert [m["principal"] for m in before["members"]] == [ALICE]

    mallory = Member(mallory_api, group_id, topics=[topic], instance_id=instance)
    mallory.member_id, mallory.epoch = alice.member_id, alice.epoch
    assert mallory.heartbeat()["errorCode"] == NOT_OWNER  # a heartbeat at alice's epoch
    assert mallory.join()["errorCode"] == NOT_OWNER  # a rejoin under her member id
    assert mallory.leave()["errorCode"] == NOT_OWNER  # epoch -1
    if static:
        assert mallory.leave(-2)["errorCode"] == NOT_OWNER  # a static leave
    assert commit(mallory_api, group_id, topic, alice.epoch, alice.member_id) == NOT_OWNER
    if static:
        # Alice leaves statically (keeping her partitions for her instance's return); another
        # principal's new member id on that instance may not take them.
        assert alice.leave(-2)["errorCode"] == 0
        usurper = Member(mallory_api, group_id, topics=[topic], instance_id=instance)
        assert usurper.join()["errorCode"] == NOT_OWNER
        back = Member(alice_api, group_id, topics=[topic], instance_id=instance)
        assert back.join()["errorCode"] == 0
        alice = back
        alice.heartbeat()
    else:
        after = snapshot()
        assert after["members"] == before["members"]
    assert committed(admin, group_id, topic) == -1
    assert alice.heartbeat()["errorCode"] == 0
    assert commit(alice_api, group_id, topic, alice.epoch, alice.member_id) == 0
    assert alice.leave()["errorCode"] == 0


def test_a_classic_member_of_a_consumer_group_answers_only_to_its_creator(
    url: str, admin: Api, topic: str
) -> None:
    """A mixed group: alice's classic member stays in the group her consumer-protocol member
    upgraded; mallory may not drive the classic one either."""
    group_id = unique(PREFIX + "mixed")
    metadata = encode_subscription(Subscription([topic]))
    alice = classic(url, group_id, ALICE, protocols=[("range", metadata)])
    assert alice.join()["errorCode"] == 0
    assert alice.sync({alice.member_id: b""})["errorCode"] == 0
    upgrader = Member(Api(url, principal=ALICE), group_id, topics=[topic])
    assert upgrader.join()["errorCode"] == 0
    kinds = admin.ok("list-groups", {})["groups"]
    assert {g["groupId"]: g["groupType"] for g in kinds}[group_id] == "consumer"

    mallory = classic(url, group_id, MALLORY, member_id=alice.member_id,
                      protocols=[("range", metadata)])  # fmt: skip
    mallory.generation, mallory.protocol_name = alice.generation, alice.protocol_name
    assert mallory.heartbeat() == NOT_OWNER
    assert mallory.sync_once().body["errorCode"] == NOT_OWNER
    assert mallory.join_once().body["errorCode"] == NOT_OWNER
    assert mallory.leave()["members"][0]["errorCode"] == NOT_OWNER
    members = admin.ok("consumer-group-describe", {"groupIds": [group_id]})["groups"][0]["members"]
    assert {m["memberId"] for m in members} == {alice.member_id, upgrader.member_id}
    assert {m["principal"] for m in members} == {ALICE}
