"""Kafka's authorization checks in the group APIs, over HTTP with the authorizer on: a principal
without the ACL is refused with Kafka's code and the refusal changes nothing (looked at as the
super user); LITERAL and PREFIXED ACLs allow, a DENY wins over an ALLOW; list-groups shows only
what the caller may describe; authorizedOperations is filled when asked."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.acls import (
    ADMIN,
    CLUSTER,
    DELETE,
    DENY,
    DESCRIBE,
    GROUP,
    GROUP_DENIED,
    PREFIXED,
    READ,
    TOPIC,
    TOPIC_DENIED,
    acl,
    authorizer_on,
    grant,
)
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.classic_client import FAST_SETTINGS, ClassicClient
from tests.support.consumer import Member, create_topic, unique
from tests.support.servers import IMMEDIATE_INSTALLS, running_service

ALICE = "User:alice"
MALLORY = "User:mallory"
SETTINGS = {**FAST_SETTINGS, **IMMEDIATE_INSTALLS, **authorizer_on()}
# Kafka's codes (core/acls.py, errors.py).
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = TOPIC_DENIED, GROUP_DENIED
GROUP_ID_NOT_FOUND = 69
NOT_ASKED = -(2**31)
# authorizedOperations bit fields (bit = operation code) of a group.
ALL_GROUP_OPERATIONS = sum(1 << op for op in (READ, DELETE, DESCRIBE, 10, 11))
READ_AND_DESCRIBE = (1 << READ) | (1 << DESCRIBE)  # an ALLOW of READ implies DESCRIBE
ONLY_DESCRIBE = 1 << DESCRIBE


pytestmark = pytest.mark.coordinator(SETTINGS, principal_header=PRINCIPAL_HEADER)


@pytest.fixture(scope="module")
def topic(admin: Api) -> str:
    name = unique("authz-topic")
    create_topic(admin, name, 2)
    return name


def classic(url: str, group_id: str, principal: str, **fields: Any) -> ClassicClient:
    client = ClassicClient(url, group_id, **fields)
    client.api.session.headers[PRINCIPAL_HEADER] = principal
    return client


def described(api: Api, group_id: str, asked: bool = False) -> dict[str, Any]:
    body = {"groups": [group_id], "includeAuthorizedOperations": asked}
    return api.ok("describe-groups", body)["groups"][0]


def consumer_described(api: Api, group_id: str, asked: bool = False) -> dict[str, Any]:
    body = {"groupIds": [group_id], "includeAuthorizedOperations": asked}
    return api.ok("consumer-group-describe", body)["groups"][0]


def stable_classic_group(url: str, group_id: str, principal: str) -> ClassicClient:
    """A classic group with one member, Stable (the member's principal may READ it)."""
    member = classic(url, group_id, principal)
    assert member.join()["errorCode"] == 0
    assert member.sync({member.member_id: b"mine"})["errorCode"] == 0
    return member


# --- join-group, sync-group, heartbeat, leave-group ---


def test_the_classic_apis_refuse_a_caller_without_read_and_change_nothing(
    url: str, admin: Api
) -> None:
    group_id = unique("authz-classic")
    grant(admin, acl(GROUP, group_id, ALICE, READ))
    alice = stable_classic_group(url, group_id, ALICE)

    # Mallory, with alice's member id and generation, is refused on every API.
    mallory = classic(url, group_id, MALLORY, member_id=alice.member_id)
    mallory.generation, mallory.protocol_name = alice.generation, alice.protocol_name
    joined = mallory.join_once()
    assert joined.status == 200
    assert joined.body["errorCode"] == GROUP_AUTHORIZATION_FAILED
    # Kafka's getErrorResponse: nothing of the group in it.
    assert (joined.body["memberId"], joined.body["generationId"], joined.body["leader"]) == (
        "",
        -1,
        "",
    )
    synced = mallory.sync_once({alice.member_id: b"stolen"})
    assert synced.body == {**synced.body, "errorCode": GROUP_AUTHORIZATION_FAILED, "assignment": ""}
    assert mallory.heartbeat() == GROUP_AUTHORIZATION_FAILED
    left = mallory.leave()
    assert (left["errorCode"], left["members"]) == (GROUP_AUTHORIZATION_FAILED, [])

    # The group is as alice left it: Stable, her member with her assignment.
    group = described(admin, group_id)
    assert group["groupState"] == "Stable"
    assert [m["memberId"] for m in group["members"]] == [alice.member_id]
    assert group["members"][0]["memberAssignment"] == "bWluZQ=="  # b"mine"
    assert alice.heartbeat() == 0

    # A refused join creates no group.
    elsewhere = unique("authz-classic-none")
    assert (
        classic(url, elsewhere, MALLORY).join_once().body["errorCode"] == GROUP_AUTHORIZATION_FAILED
    )
    assert described(admin, elsewhere)["errorCode"] == GROUP_ID_NOT_FOUND

    assert alice.leave()["members"][0]["errorCode"] == 0
    assert described(admin, group_id)["groupState"] == "Empty"


def test_a_prefixed_read_lets_a_member_in_and_a_deny_wins_over_it(url: str, admin: Api) -> None:
    prefix = unique("authz-team") + "."
    grant(admin, acl(GROUP, prefix, ALICE, READ, pattern=PREFIXED))
    secret = prefix + "secret"
    grant(admin, acl(GROUP, secret, ALICE, READ, permission=DENY))

    alice = stable_classic_group(url, prefix + "open", ALICE)
    assert alice.heartbeat() == 0
    assert classic(url, secret, ALICE).join_once().body["errorCode"] == GROUP_AUTHORIZATION_FAILED
    assert described(admin, secret)["errorCode"] == GROUP_ID_NOT_FOUND
    alice.leave()


# --- consumer-group-heartbeat ---


def test_the_consumer_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(
    url: str, admin: Api, topic: str
) -> None:
    group_id = unique("authz-consumer")
    hidden = unique("authz-hidden")
    create_topic(admin, hidden, 1)
    alice_api, mallory_api = Api(url, principal=ALICE), Api(url, principal=MALLORY)

    # Without READ on the group: 30, and no group is created.
    refused = Member(mallory_api, group_id, topics=[topic]).join()
    assert (refused["errorCode"], refused["memberId"]) == (GROUP_AUTHORIZATION_FAILED, None)
    assert consumer_described(admin, group_id)["errorCode"] == GROUP_ID_NOT_FOUND

    grant(admin, acl(GROUP, group_id, ALICE, READ))
    grant(admin, acl(TOPIC, topic, ALICE, DESCRIBE))
    # A subscription naming a topic alice may not describe: 29 for the whole request, naming
    # no topic, and still no group.
    refused = Member(alice_api, group_id, topics=[topic, hidden]).join()
    assert refused["errorCode"] == TOPIC_AUTHORIZATION_FAILED
    assert (refused["errorMessage"], refused["memberId"], refused["assignment"]) == (
        None,
        None,
        None,
    )
    assert consumer_described(admin, group_id)["errorCode"] == GROUP_ID_NOT_FOUND

    alice = Member(alice_api, group_id, topics=[topic])
    assert alice.join()["errorCode"] == 0
    assert alice.heartbeat()["errorCode"] == 0
    before = consumer_described(admin, group_id)
    assert [m["memberId"] for m in before["members"]] == [alice.member_id]

    # Mallory with alice's member id and epoch: refused, whatever she asks.
    impostor = Member(mallory_api, group_id, topics=[topic])
    impostor.member_id, impostor.epoch = alice.member_id, alice.epoch
    assert impostor.heartbeat()["errorCode"] == GROUP_AUTHORIZATION_FAILED
    assert impostor.leave()["errorCode"] == GROUP_AUTHORIZATION_FAILED
    # Alice may not widen her subscription to the hidden topic.
    widened = alice.heartbeat(subscribedTopicNames=[topic, hidden])
    assert widened["errorCode"] == TOPIC_AUTHORIZATION_FAILED

    after = consumer_described(admin, group_id)
    assert after["groupEpoch"] == before["groupEpoch"]
    assert [
        (m["memberId"], m["memberEpoch"], m["subscribedTopicNames"]) for m in after["members"]
    ] == [(alice.member_id, alice.epoch, [topic])]
    assert alice.heartbeat()["errorCode"] == 0
    assert alice.leave()["errorCode"] == 0


# --- find-coordinator ---


def test_find_coordinator_refuses_the_keys_the_caller_may_not_describe(
    url: str, admin: Api
) -> None:
    described_key, read_key, other = (unique("authz-fc") for _ in range(3))
    grant(admin, acl(GROUP, described_key, ALICE, DESCRIBE))
    grant(admin, acl(GROUP, read_key, ALICE, READ))  # READ implies DESCRIBE
    alice = Api(url, principal=ALICE)
    body = alice.ok(
        "find-coordinator", {"keyType": 0, "coordinatorKeys": [described_key, read_key, other]}
    )
    found, also_found, refused = body["coordinators"]
    for coordinator in (found, also_found):
        assert (coordinator["errorCode"], coordinator["endpoint"]) == (0, url)
    assert refused["key"] == other
    assert (refused["errorCode"], refused["nodeId"], refused["host"], refused["port"]) == (
        GROUP_AUTHORIZATION_FAILED,
        -1,
        "",
        -1,
    )
    assert refused["endpoint"] == ""
    # Every key refused: still one entry per key.
    only_refused = Api(url, principal=MALLORY).ok(
        "find-coordinator", {"coordinatorKeys": [described_key, other]}
    )
    assert [c["errorCode"] for c in only_refused["coordinators"]] == [
        GROUP_AUTHORIZATION_FAILED
    ] * 2


# --- describe-groups, consumer-group-describe ---


def test_describe_groups_answers_30_for_a_group_and_fills_authorized_operations(
    url: str, admin: Api
) -> None:
    group_id, hidden, missing = (unique("authz-dg") for _ in range(3))
    member = stable_classic_group(url, group_id, ADMIN)
    stable_classic_group(url, hidden, ADMIN)
    grant(admin, acl(GROUP, group_id, ALICE, READ))
    grant(admin, acl(GROUP, missing, ALICE, DESCRIBE))
    alice = Api(url, principal=ALICE)

    body = {"groups": [hidden, group_id, missing], "includeAuthorizedOperations": True}
    refused, shown, absent = alice.ok("describe-groups", body)["groups"]
    assert refused == {
        **refused,
        "groupId": hidden,
        "errorCode": GROUP_AUTHORIZATION_FAILED,
        "groupState": "",
        "protocolType": "",
        "members": [],
        "authorizedOperations": NOT_ASKED,
    }
    assert (shown["errorCode"], shown["groupState"]) == (0, "Stable")
    assert [m["memberId"] for m in shown["members"]] == [member.member_id]
    assert shown["authorizedOperations"] == READ_AND_DESCRIBE
    # Only a described group has them.
    assert (absent["errorCode"], absent["authorizedOperations"]) == (GROUP_ID_NOT_FOUND, NOT_ASKED)

    assert described(alice, group_id)["authorizedOperations"] == NOT_ASKED
    assert described(admin, group_id, asked=True)["authorizedOperations"] == ALL_GROUP_OPERATIONS
    assert (
        described(Api(url, principal=MALLORY), group_id)["errorCode"] == GROUP_AUTHORIZATION_FAILED
    )


def test_consumer_group_describe_checks_the_group_and_the_topics_it_shows(
    url: str, admin: Api
) -> None:
    group_id, other, topic = unique("authz-cgd"), unique("authz-cgd-other"), unique("authz-cgd-t")
    create_topic(admin, topic, 2)  # its own: no other test grants anything on it
    member = Member(admin, group_id, topics=[topic])
    assert member.join()["errorCode"] == 0
    alice = Api(url, principal=ALICE)

    assert consumer_described(alice, group_id)["errorCode"] == GROUP_AUTHORIZATION_FAILED
    grant(admin, acl(GROUP, group_id, ALICE, DESCRIBE))
    # Alice may describe the group, not the topic its assignments name: 29, no members.
    refused = consumer_described(alice, group_id, asked=True)
    assert refused == {
        **refused,
        "errorCode": TOPIC_AUTHORIZATION_FAILED,
        "errorMessage": (
            "The group has described topic(s) that the client is not authorized to describe."
        ),
        "members": [],
        "authorizedOperations": NOT_ASKED,
    }
    assert topic not in str(refused)

    grant(admin, acl(TOPIC, topic[:12], ALICE, DESCRIBE, pattern=PREFIXED))
    body = {"groupIds": [other, group_id], "includeAuthorizedOperations": True}
    hidden, shown = alice.ok("consumer-group-describe", body)["groups"]
    assert (hidden["groupId"], hidden["errorCode"]) == (other, GROUP_AUTHORIZATION_FAILED)
    assert shown["errorCode"] == 0
    assert [m["memberId"] for m in shown["members"]] == [member.member_id]
    assert shown["authorizedOperations"] == ONLY_DESCRIBE
    assert consumer_described(alice, group_id)["authorizedOperations"] == NOT_ASKED
    member.leave()


# --- list-groups, delete-groups ---


def listed(api: Api, prefix: str) -> list[str]:
    groups = api.ok("list-groups", {})["groups"]
    return sorted(g["groupId"] for g in groups if g["groupId"].startswith(prefix))


def test_list_groups_shows_only_the_groups_the_caller_may_describe(
    url: str, admin: Api, topic: str
) -> None:
    prefix = unique("authz-lg") + "."
    names = [prefix + "team.a", prefix + "team.b", prefix + "other"]
    for name in names:
        Member(admin, name, topics=[topic]).join()
    grant(admin, acl(GROUP, prefix + "team.", ALICE, DESCRIBE, pattern=PREFIXED))
    grant(admin, acl(GROUP, prefix + "team.b", ALICE, DESCRIBE, permission=DENY))
    grant(admin, acl(CLUSTER, "kafka-cluster", "User:ops", DESCRIBE))

    assert listed(Api(url, principal=ALICE), prefix) == [prefix + "team.a"]
    assert listed(Api(url, principal=MALLORY), prefix) == []
    # DESCRIBE on the cluster lists every group, as does a super user.
    assert listed(Api(url, principal="User:ops"), prefix) == sorted(names)
    assert listed(admin, prefix) == sorted(names)


def test_delete_groups_needs_delete_on_each_group(url: str, admin: Api, topic: str) -> None:
    kept, deleted = unique("authz-del-kept"), unique("authz-del")
    for group_id in (kept, deleted):
        member = Member(admin, group_id, topics=[topic])
        member.join()
        member.leave()
        commit = {
            "groupId": group_id,
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": 0, "committedOffset": 7}]}
            ],
        }
        assert admin.ok("offset-commit", commit)["topics"][0]["partitions"][0]["errorCode"] == 0
    grant(admin, acl(GROUP, deleted, ALICE, DELETE))

    refused = Api(url, principal=MALLORY).ok("delete-groups", {"groupsNames": [deleted]})
    assert refused["results"] == [
        {"groupId": deleted, "errorCode": GROUP_AUTHORIZATION_FAILED, "errorMessage": None}
    ]
    results = Api(url, principal=ALICE).ok("delete-groups", {"groupsNames": [kept, deleted]})
    assert [(r["groupId"], r["errorCode"]) for r in results["results"]] == [
        (kept, GROUP_AUTHORIZATION_FAILED),
        (deleted, 0),
    ]

    # The refused group is still there, with its offsets; the other is gone.
    assert consumer_described(admin, kept)["errorCode"] == 0
    assert consumer_described(admin, deleted)["errorCode"] == GROUP_ID_NOT_FOUND
    fetch = {"groups": [{"groupId": kept, "topics": [{"name": topic, "partitionIndexes": [0]}]}]}
    partition = admin.ok("offset-fetch", fetch)["groups"][0]["topics"][0]["partitions"][0]
    assert partition["committedOffset"] == 7


# --- without the authorizer ---


def test_without_the_authorizer_a_caller_may_do_every_operation(
    service_endpoint: str | None,
) -> None:
    with running_service(service_endpoint, FAST_SETTINGS) as base:
        group_id = unique("authz-off")
        member = ClassicClient(base, group_id)
        assert member.join()["errorCode"] == 0
        api = Api(base)
        assert described(api, group_id, asked=True)["authorizedOperations"] == ALL_GROUP_OPERATIONS
        assert described(api, group_id)["authorizedOperations"] == NOT_ASKED


def test_a_regex_subscription_matches_only_the_topics_the_member_may_describe(
    url: str, admin: Api
) -> None:
    prefix = unique("authz-rx") + "-"
    seen, hidden = prefix + "seen", prefix + "hidden"
    create_topic(admin, seen, 2)
    create_topic(admin, hidden, 2)
    group_id = unique("authz-rx-group")
    grant(admin, acl(GROUP, group_id, ALICE, READ))
    grant(admin, acl(TOPIC, seen, ALICE, DESCRIBE))
    alice = Member(Api(url, principal=ALICE), group_id, regex=prefix + ".*")
    assert alice.join()["errorCode"] == 0
    for _ in range(3):
        alice.heartbeat()
    described = admin.ok("metadata", {"topics": [{"name": seen}, {"name": hidden}]})["topics"]
    ids = {t["name"]: t["topicId"] for t in described}
    assert set(alice.owned) == {ids[seen]}  # the regex matched both; alice sees one
    # The super user's regex member sees both.
    boss = Member(admin, unique("authz-rx-admin"), regex=prefix + ".*")
    assert boss.join()["errorCode"] == 0
    assert set(boss.owned) == {ids[seen], ids[hidden]}
