"""Streams groups in the admin APIs and under the authorizer, over HTTP on DynamoDB Local:
list-groups (groupType streams, NotReady), delete-groups, describe-group-activity, and the
ACLs (READ on the group, DESCRIBE on the topology's topics, CREATE for internal topics) with
two principals."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.acls import (
    CREATE,
    DESCRIBE,
    GROUP,
    PREFIXED,
    READ,
    TOPIC,
    acl,
    authorizer_on,
    grant,
)
from tests.support.api import PRINCIPAL_HEADER, Api
from tests.support.consumer import create_topic, unique
from tests.support.servers import running_service
from tests.support.streams import HB, StreamsMember, describe, settle, word_count

ALICE = "User:alice"
MALLORY = "User:mallory"
SETTINGS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.assignment.interval.ms": "0",
    "group.streams.num.standby.replicas": "1",
    # Kafka 4.2's moves (tasks move at once): warm-ups by lag are test_streams_warmups.py's.
    "group.streams.num.warmup.replicas": "0",
    **authorizer_on(),
}


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> Iterator[str]:
    with running_service(dynamodb_endpoint, SETTINGS, principal_header=PRINCIPAL_HEADER) as base:
        yield base


@pytest.fixture(scope="module")
def granted(admin: Api) -> None:
    """alice may READ the groups sg-* and DESCRIBE the topics st-*; mallory may nothing."""
    grant(
        admin,
        acl(GROUP, "sg-", ALICE, READ, pattern=PREFIXED),
        acl(TOPIC, "st-", ALICE, DESCRIBE, pattern=PREFIXED),
    )


def as_(url: str, principal: str) -> Api:
    return Api(url, principal=principal)


def test_a_heartbeat_needs_read_on_the_group_and_describe_on_its_topics(
    url: str, admin: Api, granted: None
) -> None:
    words = unique("st-words")
    create_topic(admin, words, 2)
    group = unique("sg")
    mallory = StreamsMember(as_(url, MALLORY), group, word_count(words, unique("st-app")))
    assert mallory.join()["errorCode"] == 30
    other_topic = StreamsMember(as_(url, ALICE), group, word_count(unique("words"), "st-app"))
    assert other_topic.join()["errorCode"] == 29
    assert describe(admin, group)["errorCode"] == 69  # neither refusal created the group


def test_internal_topics_need_create_and_the_next_heartbeat_creates_them(
    url: str, admin: Api, granted: None
) -> None:
    words = unique("st-words")
    create_topic(admin, words, 2)
    alice = StreamsMember(as_(url, ALICE), unique("sg"), word_count(words, unique("st-app")))
    answer = alice.join()
    assert answer["errorCode"] == 0, answer
    assert [s["statusCode"] for s in answer["status"]] == [3]
    assert answer["status"][0]["statusDetail"].startswith("Unauthorized to CREATE on topics")
    assert not alice.active
    grant(admin, acl(TOPIC, "st-", ALICE, CREATE, pattern=PREFIXED))
    settle([alice])
    assert alice.statuses() == [] and len(alice.active["0"]) == 2


def test_a_member_answers_only_to_its_creator(url: str, admin: Api, granted: None) -> None:
    words = unique("st-words")
    create_topic(admin, words, 2)
    alice = StreamsMember(as_(url, ALICE), unique("sg"), word_count(words, unique("st-app")))
    alice.join()
    grant(admin, acl(GROUP, alice.group, MALLORY, READ))
    body = {"groupId": alice.group, "memberId": alice.member_id, "memberEpoch": alice.epoch}
    assert as_(url, MALLORY).ok(HB, body)["errorCode"] == 30


def test_list_delete_and_activity_of_a_streams_group(admin: Api) -> None:
    words = unique("st-words")
    create_topic(admin, words, 2)
    group = unique("sg")
    a = StreamsMember(admin, group, word_count(words, unique("st-app")))
    b = StreamsMember(admin, group, a.topology)
    a.join()
    b.join()
    settle([a, b])
    listed = admin.ok("list-groups", {"typesFilter": ["streams"]})["groups"]
    assert {"groupId": group, "groupType": "streams", "groupState": "Stable",
            "protocolType": "streams"}.items() <= next(
        g for g in listed if g["groupId"] == group).items()  # fmt: skip
    activity = admin.ok("describe-group-activity", {"groupIds": [group], "includeMembers": True})
    shown = activity["groups"][0]
    assert shown["groupType"] == "streams" and shown["subscribedTopics"] == [words]
    roles = {m["memberId"]: m for m in shown["members"]}
    assert roles[a.member_id]["processId"] == a.process_id
    assert {m["protocol"] for m in shown["members"]} == {"streams"}
    standbys = [t for m in shown["members"] for t in m["standbyTasks"]]
    assert sorted(p for t in standbys for p in t["partitions"]) == [0, 1]
    owners = {c["partitionIndex"]: c["owner"] for c in shown["partitions"]}
    assert set(owners.values()) <= {a.member_id, b.member_id} and len(owners) == 2
    deleted = admin.ok("delete-groups", {"groupsNames": [group]})["results"][0]
    assert deleted["errorCode"] == 68
    a.leave()
    b.leave()
    deleted = admin.ok("delete-groups", {"groupsNames": [group]})["results"][0]
    assert deleted["errorCode"] == 0
    assert describe(admin, group)["errorCode"] == 69
    # The id is free again: a new join starts a new group.
    again = StreamsMember(admin, group, a.topology)
    assert again.join()["errorCode"] == 0 and describe(admin, group)["groupEpoch"] >= 1
