"""Static membership of streams groups (beyond Kafka 4.2) over HTTP on DynamoDB Local: a
temporary leave (-2) keeps the tasks, a rejoin under a new member id takes them back with no
new group epoch, the old id is fenced (82), an instance still in use is 111."""

from __future__ import annotations

import pytest

from tests.support.api import Api
from tests.support.consumer import create_topic, unique
from tests.support.streams import HB, StreamsMember, describe, settle, streams_serve, word_count


@pytest.fixture(scope="module")
def url(dynamodb_endpoint: str) -> str:
    """The streams tests' shared `serve` on DynamoDB Local (not the in-memory adapter)."""
    return streams_serve(dynamodb_endpoint)


def static_pair(api: Api) -> tuple[StreamsMember, StreamsMember]:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, unique("app")), instanceId="i-a")
    b = StreamsMember(api, group, a.topology, instanceId="i-b")
    a.join()
    b.join()
    settle([a, b])
    return a, b


def test_a_static_member_leaves_and_returns_under_a_new_id_without_a_rebalance(
    api: Api,
) -> None:
    a, b = static_pair(api)
    before, epoch = describe(api, a.group), a.epoch
    assert a.call(memberEpoch=-2, instanceId="i-a")["memberEpoch"] == -2
    again = StreamsMember(api, a.group, a.topology, process_id=a.process_id, instanceId="i-a")
    answer = again.join()
    assert answer["errorCode"] == 0, answer
    assert (again.epoch, again.active, again.standby) == (epoch, a.active, a.standby)
    after = describe(api, a.group)
    assert after["groupEpoch"] == before["groupEpoch"]
    assert sorted(m["memberId"] for m in after["members"]) == sorted([again.member_id, b.member_id])
    # The old member id is fenced by the new one.
    old = api.ok(HB, {"groupId": a.group, "memberId": a.member_id, "memberEpoch": epoch,
                      "instanceId": "i-a"})  # fmt: skip
    assert old["errorCode"] == 82
    settle([again, b])
    assert again.active == a.active


def test_a_static_member_rejoins_under_its_own_id_as_kafka_streams_does(api: Api) -> None:
    # Kafka Streams keeps its member id for the consumer's life: after a -2 (a poll timeout
    # or close) the same id joins again with epoch 0, and takes its tasks back as a new id.
    a, b = static_pair(api)
    before, epoch, held = describe(api, a.group), a.epoch, (a.active, a.standby)
    assert a.call(memberEpoch=-2, instanceId="i-a")["memberEpoch"] == -2
    answer = a.join()
    assert answer["errorCode"] == 0, answer
    assert (a.epoch, a.active, a.standby) == (epoch, *held)
    assert describe(api, a.group)["groupEpoch"] == before["groupEpoch"]
    settle([a, b])
    assert (a.active, a.standby) == held


def test_an_instance_id_in_use_is_111_and_an_unknown_one_25(api: Api) -> None:
    a, _ = static_pair(api)
    thief = StreamsMember(api, a.group, a.topology, instanceId="i-a")
    assert thief.join()["errorCode"] == 111
    stranger = api.ok(HB, {"groupId": a.group, "memberId": "x", "memberEpoch": 1,
                           "instanceId": "i-none"})  # fmt: skip
    assert stranger["errorCode"] == 25


def _by_port(answer: dict) -> dict[int, dict]:
    lines = answer["partitionsByUserEndpoint"]
    by_port = {line["userEndpoint"]["port"]: line for line in lines}
    assert len(by_port) == len(lines), lines  # one line per endpoint
    return by_port


def test_a_static_rejoin_with_an_endpoint_bumps_neither_epoch(api: Api) -> None:
    """The endpoints map follows a static member's instance: its rejoin under a new member
    id, with the same endpoint and tasks, leaves the group epoch and the endpoint epoch
    alone, and the map still names each endpoint once with its tasks."""
    words = unique("words")
    create_topic(api, words, 2)
    group, topology = unique("g"), word_count(words, unique("app"))
    a = StreamsMember(api, group, topology, instanceId="i-a",
                      userEndpoint={"host": "127.0.0.1", "port": 7001})  # fmt: skip
    b = StreamsMember(api, group, topology, instanceId="i-b",
                      userEndpoint={"host": "127.0.0.1", "port": 7002})  # fmt: skip
    a.join()
    b.join()
    settle([a, b])
    before = a.heartbeat(endpointInformationEpoch=-1)
    endpoint_epoch, group_epoch = (
        before["endpointInformationEpoch"],
        describe(api, group)["groupEpoch"],
    )
    assert set(_by_port(before)) == {7001, 7002}
    assert a.call(memberEpoch=-2, instanceId="i-a")["memberEpoch"] == -2
    again = StreamsMember(api, group, topology, process_id=a.process_id, instanceId="i-a",
                          userEndpoint={"host": "127.0.0.1", "port": 7001})  # fmt: skip
    answer = again.join(endpointInformationEpoch=-1)
    assert answer["errorCode"] == 0, answer
    assert answer["endpointInformationEpoch"] == endpoint_epoch
    assert describe(api, group)["groupEpoch"] == group_epoch
    assert _by_port(answer) == _by_port(before)
    # The other member is not sent a map (nothing changed), and the map it reads is the same.
    assert b.heartbeat(endpointInformationEpoch=endpoint_epoch)["partitionsByUserEndpoint"] is None
    assert _by_port(b.heartbeat(endpointInformationEpoch=-1)) == _by_port(before)
    settle([again, b])
    assert (again.active, again.standby) == (a.active, a.standby)
    assert describe(api, group)["groupEpoch"] == group_epoch
