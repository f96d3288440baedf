"""docs/authorization.md's worked example, played over HTTP: team A runs groups `a.*` on topics
`a.*`, team B the same under `b.`, an operator administers both, a platform admin (a super
user) bootstraps the ACLs. Every API allows what it must and refuses what it must, and each
refusal changes nothing (looked at as the operator)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.acls import (
    ALL,
    ALTER,
    CLUSTER,
    CLUSTER_DENIED,
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
from tests.support.consumer import Member, unique
from tests.support.servers import IMMEDIATE_INSTALLS

ACCOUNT = "arn:aws:iam::123456789012:role"
ADMIN, TEAM_A, TEAM_B, OPS = (
    f"User:{ACCOUNT}/{name}" for name in ("platform-admin", "team-a", "team-b", "ops")
)
SETTINGS = {**FAST_SETTINGS, **IMMEDIATE_INSTALLS, **authorizer_on(ADMIN)}


pytestmark = pytest.mark.coordinator(SETTINGS, principal_header=PRINCIPAL_HEADER)


@pytest.fixture(scope="module", autouse=True)
def granted(url: str) -> None:
    creations = [
        *(acl(t, "a.", TEAM_A, READ, pattern=PREFIXED) for t in (GROUP, TOPIC)),
        *(acl(t, "b.", TEAM_B, READ, pattern=PREFIXED) for t in (GROUP, TOPIC)),
        *(acl(t, n, OPS, ALL, pattern=PREFIXED) for t in (GROUP, TOPIC) for n in ("a.", "b.")),
        acl(CLUSTER, "kafka-cluster", OPS, ALTER),
    ]
    grant(Api(url, principal=ADMIN), *creations)


@pytest.fixture(scope="module")
def apis(url: str) -> dict[str, Api]:
    return {who: Api(url, principal=who) for who in (TEAM_A, TEAM_B, OPS)}


def topic_codes(answer: dict[str, Any], key: str = "topics") -> dict[str, int]:
    return {t["name"]: t["errorCode"] for t in answer[key]}


def commit_body(group: str, topic: str, offset: int) -> dict[str, Any]:
    partitions = [{"partitionIndex": 0, "committedOffset": offset}]
    return {"groupId": group, "topics": [{"name": topic, "partitions": partitions}]}


def committed(api: Api, group: str, topic: str) -> list[dict[str, Any]]:
    body = {"groups": [{"groupId": group, "topics": [{"name": topic, "partitionIndexes": [0]}]}]}
    return api.ok("offset-fetch", body)["groups"][0]["topics"][0]["partitions"]


@dataclass(frozen=True)
class Names:
    """Each team's topic and group, under its prefix."""

    a_topic: str
    b_topic: str
    a_group: str
    b_group: str


def test_two_teams_and_an_operator(url: str, apis: dict[str, Api]) -> None:
    a, b, ops = apis[TEAM_A], apis[TEAM_B], apis[OPS]
    suffix = unique("x")
    names = Names(
        f"a.orders-{suffix}", f"b.orders-{suffix}", f"a.billing-{suffix}", f"b.billing-{suffix}"
    )
    topics_and_metadata(a, b, ops, names)
    member = team_a_member_that_team_b_cannot_be(a, b, names)
    team_a_offsets(a, b, member, names)
    team_b_group = describing_and_listing(url, a, b, ops, names)
    admin_apis(a, b, ops, member, names)
    team_b_group.leave()


def topics_and_metadata(a: Api, b: Api, ops: Api, names: Names) -> None:
    a_topic, b_topic = names.a_topic, names.b_topic
    # Topics: the teams may not create them (READ only), the operator may, in both spaces.
    body = {"topics": [{"name": a_topic, "numPartitions": 2}]}
    assert topic_codes(a.ok("create-topics", body)) == {a_topic: TOPIC_DENIED}
    for name in (a_topic, b_topic):
        created = ops.ok("create-topics", {"topics": [{"name": name, "numPartitions": 2}]})
        assert topic_codes(created) == {name: 0}
    grow = {"topics": [{"name": a_topic, "count": 3}]}
    assert topic_codes(b.ok("create-partitions", grow), "results") == {a_topic: TOPIC_DENIED}
    assert topic_codes(ops.ok("create-partitions", grow), "results") == {a_topic: 0}

    # Metadata: each team sees its own topics; named, the other's answer 29.
    both = {a_topic, b_topic}
    listed = {t["name"] for t in a.ok("metadata", {})["topics"]} & both
    assert listed == {a_topic}
    named = b.ok("metadata", {"topics": [{"name": a_topic}, {"name": b_topic}]})
    assert topic_codes(named) == {a_topic: TOPIC_DENIED, b_topic: 0}


def team_a_member_that_team_b_cannot_be(a: Api, b: Api, names: Names) -> Member:
    """Team A's consumer-protocol member runs in its group; team B cannot join it, cannot
    subscribe its own group to team A's topic, and cannot act as team A's member."""
    member = Member(a, names.a_group, topics=[names.a_topic])
    assert member.join()["errorCode"] == 0
    member.heartbeat()
    assert member.heartbeat()["errorCode"] == 0
    assert Member(b, names.a_group, topics=[names.b_topic]).join()["errorCode"] == GROUP_DENIED
    assert Member(b, names.b_group, topics=[names.a_topic]).join()["errorCode"] == TOPIC_DENIED
    impostor = Member(b, names.a_group, topics=[names.a_topic])
    impostor.member_id, impostor.epoch = member.member_id, member.epoch
    assert impostor.heartbeat()["errorCode"] == GROUP_DENIED
    return member


def team_a_offsets(a: Api, b: Api, member: Member, names: Names) -> None:
    """Team A commits and fetches; team B may neither commit nor read them."""
    a_group, a_topic = names.a_group, names.a_topic
    mine = {**commit_body(a_group, a_topic, 42), "memberId": member.member_id,
            "generationIdOrMemberEpoch": member.epoch}  # fmt: skip
    assert a.ok("offset-commit", mine)["topics"][0]["partitions"][0]["errorCode"] == 0
    theirs = b.ok("offset-commit", commit_body(a_group, a_topic, 0))
    assert theirs["topics"][0]["partitions"][0]["errorCode"] == GROUP_DENIED
    assert committed(a, a_group, a_topic)[0]["committedOffset"] == 42
    fetched = b.ok("offset-fetch", {"groups": [{"groupId": a_group, "topics": None}]})
    assert fetched["groups"][0]["errorCode"] == GROUP_DENIED


def describing_and_listing(url: str, a: Api, b: Api, ops: Api, names: Names) -> ClassicClient:
    """Each team sees its own groups; the operator sees both. Returns team B's classic
    member (its group stays, for the admin APIs)."""
    a_group, b_group = names.a_group, names.b_group
    team_b_group = ClassicClient(url, b_group)
    team_b_group.api.session.headers[PRINCIPAL_HEADER] = TEAM_B
    assert team_b_group.join()["errorCode"] == 0
    groups = {a_group, b_group}
    for api, expected in ((a, {a_group}), (b, {b_group}), (ops, groups)):
        listed = {g["groupId"] for g in api.ok("list-groups", {})["groups"]} & groups
        assert listed == expected
    described = b.ok("consumer-group-describe", {"groupIds": [a_group]})["groups"][0]
    assert described["errorCode"] == GROUP_DENIED and described["members"] == []
    found = b.ok("find-coordinator", {"keyType": 0, "coordinatorKeys": [a_group, b_group]})
    assert {c["key"]: c["errorCode"] for c in found["coordinators"]} == {
        a_group: GROUP_DENIED,
        b_group: 0,
    }
    return team_b_group


def admin_apis(a: Api, b: Api, ops: Api, member: Member, names: Names) -> None:
    """Only the operator (or the super user) manages ACLs, deletes groups and offsets, and
    deletes topics."""
    a_group, a_topic, b_topic = names.a_group, names.a_topic, names.b_topic
    creation = acl(GROUP, "b.", TEAM_B, ALL, pattern=PREFIXED)
    refused = b.ok("create-acls", {"creations": [creation]})
    assert [r["errorCode"] for r in refused["results"]] == [CLUSTER_DENIED]
    filters = {"resourceTypeFilter": 1, "patternTypeFilter": 1, "operation": 1,
               "permissionType": 1}  # fmt: skip
    assert b.ok("describe-acls", filters)["errorCode"] == CLUSTER_DENIED
    assert len(ops.ok("describe-acls", filters)["resources"]) >= 4
    member.leave()
    offsets = {
        "groupId": a_group,
        "topics": [{"name": a_topic, "partitions": [{"partitionIndex": 0}]}],
    }
    assert a.ok("offset-delete", offsets)["errorCode"] == GROUP_DENIED  # READ is not DELETE
    assert committed(ops, a_group, a_topic)[0]["committedOffset"] == 42
    assert ops.ok("offset-delete", offsets)["errorCode"] == 0
    assert committed(ops, a_group, a_topic)[0]["committedOffset"] == -1
    deleted = b.ok("delete-groups", {"groupsNames": [a_group]})["results"]
    assert [r["errorCode"] for r in deleted] == [GROUP_DENIED]
    assert ops.ok("delete-groups", {"groupsNames": [a_group]})["results"][0]["errorCode"] == 0
    gone = {"topics": [{"name": b_topic}]}
    assert topic_codes(a.ok("delete-topics", gone), "responses") == {b_topic: TOPIC_DENIED}
    assert topic_codes(ops.ok("delete-topics", gone), "responses") == {b_topic: 0}
