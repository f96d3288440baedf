"""consumer-group-heartbeat over HTTP: validation and errors, reconciliation, static members,
leaving, the group size limit, and consumer-group-describe."""

from __future__ import annotations

import uuid

import pytest

from tests.support.api import Api
from tests.support.consumer import (
    Member,
    as_owned,
    assert_no_partition_held_twice,
    create_topic,
    describe,
    settle,
    unique,
)
from tests.support.servers import IMMEDIATE_INSTALLS, running_service

HB = "consumer-group-heartbeat"


# A coordinator on a table of this module's own (a listing of groups here lists only this
# module's).
pytestmark = pytest.mark.coordinator(IMMEDIATE_INSTALLS)


def join_body(group: str, **fields) -> dict:
    return {
        "groupId": group,
        "memberId": str(uuid.uuid4()),
        "memberEpoch": 0,
        "rebalanceTimeoutMs": 30000,
        "subscribedTopicNames": [],
        "topicPartitions": [],
        **fields,
    }


def test_invalid_requests_answer_42_112_128_like_kafka(api: Api) -> None:
    group = unique("g")
    cases = [
        ({"memberId": ""}, 42, "MemberId can't be empty."),
        ({"groupId": ""}, 42, "GroupId can't be empty."),
        ({"instanceId": ""}, 42, "InstanceId can't be empty."),
        ({"rackId": ""}, 42, "RackId can't be empty."),
        ({"rebalanceTimeoutMs": -1}, 42, "RebalanceTimeoutMs must be provided in first request."),
        ({"topicPartitions": None}, 42, "TopicPartitions must be empty when (re-)joining."),
        (
            {"topicPartitions": [{"topicId": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [0]}]},
            42,
            "TopicPartitions must be empty when (re-)joining.",
        ),
        ({"subscribedTopicNames": None}, 42, None),
        ({"memberEpoch": -2}, 42, "InstanceId can't be null."),
        ({"memberEpoch": -3}, 42, "MemberEpoch is invalid."),
        ({"serverAssignor": "sticky"}, 112, None),
        ({"subscribedTopicNames": None, "subscribedTopicRegex": "orders-(["}, 128, None),
    ]
    for fields, code, message in cases:
        body = api.ok(HB, join_body(group, **fields))
        assert body["errorCode"] == code, (fields, body)
        assert body["errorMessage"], fields
        if message is not None:
            assert body["errorMessage"] == message
    # Nothing was created by any of them.
    assert describe(api, group)["errorCode"] == 69


def test_schema_violations_are_400_naming_the_field(api: Api) -> None:
    answer = api.call(HB, {"groupId": unique("g"), "memberEpoch": 0})
    assert answer.status == 400 and "memberId" in answer.body["errorMessage"]
    answer = api.call(HB, {**join_body(unique("g")), "memberEpoch": "0"})
    assert answer.status == 400 and "memberEpoch" in answer.body["errorMessage"]


def test_unknown_group_member_and_epochs(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 4)
    missing = api.ok(HB, {"groupId": unique("g"), "memberId": "m", "memberEpoch": 1})
    assert missing["errorCode"] == 69
    a = Member(api, group, [topic])
    assert a.join()["memberEpoch"] == 1
    unknown = api.ok(HB, {"groupId": group, "memberId": "nobody", "memberEpoch": 1})
    assert unknown["errorCode"] == 25
    b = Member(api, group, [topic])
    b.join()
    settle([a, b])
    assert a.epoch == 2
    ahead = a.send({"memberEpoch": a.epoch + 1})
    assert ahead["errorCode"] == 110 and "greater" in ahead["errorMessage"]
    behind = a.send({"memberEpoch": a.epoch - 1})
    assert behind["errorCode"] == 110 and "smaller" in behind["errorMessage"]


def test_three_member_walk_through_revocation_before_release(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(api, topic, 6)
    a, b = Member(api, group, [topic]), Member(api, group, [topic])
    a.join()
    b.join()
    settle([a, b])
    assert {len(a.owned[tid]), len(b.owned[tid])} == {3}
    epoch = a.epoch

    c = Member(api, group, [topic])
    joined = c.join()
    assert joined["memberEpoch"] == epoch + 1
    assert as_owned(joined["assignment"]) == {}  # everything is still held by a and b
    target = {
        m["memberId"]: m["targetAssignment"]["topicPartitions"][0]["partitions"]
        for m in describe(api, group)["members"]
    }
    assert sorted(len(ps) for ps in target.values()) == [2, 2, 2]

    # a heartbeats without acknowledging: it must revoke one partition and keeps its epoch.
    a_before = set(a.owned[tid])
    pending = a.heartbeat(ack=False)
    assert pending["memberEpoch"] == epoch
    assert set(as_owned(pending["assignment"])[tid]) == set(target[a.member_id])
    a_revoked = a_before - set(target[a.member_id])
    assert len(a_revoked) == 1
    still = c.heartbeat()
    assert still["memberEpoch"] == epoch + 1 and as_owned(c.last.get("assignment")) == {}
    # Null topicPartitions counts as still owning: no progress.
    assert a.send({"memberEpoch": epoch})["memberEpoch"] == epoch
    # a acknowledges: it moves to the new epoch; c gets exactly what a released.
    assert a.heartbeat()["memberEpoch"] == epoch + 1
    got = c.heartbeat()
    assert got["memberEpoch"] == epoch + 1
    assert as_owned(got["assignment"])[tid] == a_revoked
    assert_no_partition_held_twice([a, b, c])
    settle([a, b, c])
    assert_no_partition_held_twice([a, b, c])
    assert sorted(len(m.owned[tid]) for m in (a, b, c)) == [2, 2, 2]
    described = describe(api, group)
    assert described["groupState"] == "Stable"
    assert {m["memberEpoch"] for m in described["members"]} == {epoch + 1}


def test_assignment_is_sent_only_on_join_full_request_or_change(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 2)
    a = Member(api, group, [topic])
    assert a.join()["assignment"] is not None
    assert a.heartbeat()["assignment"] is None
    full = a.heartbeat(rebalanceTimeoutMs=30000, subscribedTopicNames=[topic])
    assert full["assignment"] is not None


def test_lost_response_previous_epoch_with_owned_subset_is_accepted(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(api, topic, 4)
    a = Member(api, group, [topic])
    a.join()
    b = Member(api, group, [topic])
    b.join()
    a.heartbeat()  # revokes two partitions (acknowledged) and moves on
    settle([a, b])
    # a's last response is "lost": it resends its previous epoch with a subset of its partitions.
    previous = a.epoch - 1
    answer = a.send({"memberEpoch": previous, "topicPartitions": [
        {"topicId": tid, "partitions": sorted(a.owned[tid])[:1]}]})  # fmt: skip
    assert (answer["errorCode"], answer["memberEpoch"]) == (0, a.epoch)


def test_server_assignor_votes_pick_range(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(api, topic, 5)
    members = [Member(api, group, [topic], assignor="range") for _ in range(2)]
    for m in members:
        m.join()
    settle(members)
    assert describe(api, group)["assignorName"] == "range"
    first, second = sorted(members, key=lambda m: m.member_id)
    assert first.owned[tid] == {0, 1, 2} and second.owned[tid] == {3, 4}


def test_leave_with_minus_one_bumps_the_epoch_and_frees_partitions(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(api, topic, 4)
    a, b = Member(api, group, [topic]), Member(api, group, [topic])
    a.join()
    b.join()
    settle([a, b])
    epoch = describe(api, group)["groupEpoch"]
    left = b.leave()
    assert (left["errorCode"], left["memberEpoch"]) == (0, -1)
    assert describe(api, group)["groupEpoch"] == epoch + 1
    settle([a])
    assert a.owned[tid] == {0, 1, 2, 3}
    assert b.send({"memberEpoch": b.epoch})["errorCode"] == 25


def test_static_member_bounce_keeps_its_assignment_without_a_rebalance(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(api, topic, 4)
    a = Member(api, group, [topic], instance_id="instance-a")
    b = Member(api, group, [topic])
    a.join()
    b.join()
    settle([a, b])
    epoch, owned = a.epoch, a.owned[tid]
    group_epoch = describe(api, group)["groupEpoch"]

    # Another process claiming the instance while a is live: 111.
    intruder = Member(api, group, [topic], instance_id="instance-a")
    assert intruder.join()["errorCode"] == 111

    assert a.leave(-2)["memberEpoch"] == -2
    assert describe(api, group)["groupEpoch"] == group_epoch
    back = Member(api, group, [topic], instance_id="instance-a")
    rejoined = back.join()
    assert rejoined["errorCode"] == 0
    assert rejoined["memberEpoch"] == epoch
    assert as_owned(rejoined["assignment"])[tid] == owned
    assert describe(api, group)["groupEpoch"] == group_epoch
    # The old member id is fenced by the new one.
    assert a.heartbeat()["errorCode"] == 82
    settle([back, b])
    assert_no_partition_held_twice([back, b])


def test_static_leave_of_an_unknown_instance_is_25(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 1)
    Member(api, group, [topic]).join()
    stranger = Member(api, group, [topic], instance_id="who")
    assert stranger.leave(-2)["errorCode"] == 25


def test_classic_group_with_members_is_not_a_consumer_group(api: Api) -> None:
    group = unique("g")
    body = {
        "groupId": group,
        "memberId": "",
        "groupInstanceId": "static-1",
        "sessionTimeoutMs": 30000,
        "rebalanceTimeoutMs": 30000,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": ""}],
    }
    answer = api.call("join-group", body)
    assert answer.status in (200, 202), answer.body
    assert api.ok(HB, join_body(group))["errorCode"] == 69
    assert describe(api, group)["errorCode"] == 69


def test_group_max_size_answers_81(service_endpoint: str | None) -> None:
    with running_service(
        service_endpoint, settings={**IMMEDIATE_INSTALLS, "group.consumer.max.size": "2"}
    ) as url:
        api = Api(url)
        group = unique("g")
        for _ in range(2):
            assert api.ok(HB, join_body(group))["errorCode"] == 0
        full = api.ok(HB, join_body(group))
        assert full["errorCode"] == 81
        assert "maximum capacity of 2" in full["errorMessage"]


def test_describe_fifty_members_driven_to_stable(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    tid = create_topic(api, topic, 120)
    members = [Member(api, group, [topic]) for _ in range(50)]
    for m in members:
        m.join()
    settle(members)
    assert_no_partition_held_twice(members)
    described = describe(api, group)
    assert described["groupState"] == "Stable"
    assert described["groupEpoch"] == described["assignmentEpoch"] == 50
    assert len(described["members"]) == 50
    total = set()
    for m in described["members"]:
        assert m["memberEpoch"] == 50 and m["memberType"] == 1
        assigned = m["assignment"]["topicPartitions"][0]
        assert assigned == m["targetAssignment"]["topicPartitions"][0]
        assert assigned["topicName"] == topic and assigned["topicId"] == tid
        assert len(assigned["partitions"]) in (2, 3)
        total |= set(assigned["partitions"])
    assert total == set(range(120))
    listed = {g["groupId"]: g for g in api.ok("list-groups", {})["groups"]}
    assert listed[group]["groupType"] == "consumer"
