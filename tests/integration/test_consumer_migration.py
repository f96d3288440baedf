"""Classic <-> consumer migration over HTTP: Empty groups converted by the other
protocol's first request, with their committed offsets kept."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest

from groupcoord.wire.consumer_protocol import Subscription, encode_subscription
from tests.support.api import Api
from tests.support.consumer import Member, create_topic, describe, settle, unique
from tests.support.servers import running_service

SETTINGS = {
    "group.initial.rebalance.delay.ms": "100",
    "groupcoord.barrier.hold.ms": "300",
}


pytestmark = pytest.mark.coordinator(SETTINGS)


def join_body(group: str, topic: str, member_id: str = "") -> dict:
    metadata = base64.b64encode(encode_subscription(Subscription([topic]))).decode()
    return {
        "groupId": group,
        "memberId": member_id,
        "sessionTimeoutMs": 10_000,
        "rebalanceTimeoutMs": 10_000,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],
    }


def classic_join(api: Api, group: str, topic: str, member_id: str = "") -> dict:
    """Join until a 200 that is not MEMBER_ID_REQUIRED, polling 202s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = api.call("join-group", join_body(group, topic, member_id))
        if answer.status == 202:
            member_id = answer.body["memberId"]
            time.sleep(answer.body["retryAfterMs"] / 1000)
            continue
        assert answer.status == 200, answer.body
        if answer.body["errorCode"] == 79:
            member_id = answer.body["memberId"]
            continue
        if answer.body["errorCode"] == 0:
            sync(api, group, answer.body)
        return answer.body
    raise AssertionError("join did not complete")


def sync(api: Api, group: str, joined: dict) -> dict:
    """The group's only member syncs (as leader, with an empty assignment): Stable."""
    body = {
        "groupId": group,
        "generationId": joined["generationId"],
        "memberId": joined["memberId"],
        "assignments": [],
    }
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = api.call("sync-group", body)
        if answer.status == 202:
            time.sleep(answer.body["retryAfterMs"] / 1000)
            continue
        assert answer.status == 200 and answer.body["errorCode"] == 0, answer.body
        return answer.body
    raise AssertionError("sync did not complete")


def commit(api: Api, group: str, topic: str, offsets: dict[int, int], epoch: int, member: str):
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "generationIdOrMemberEpoch": epoch,
            "memberId": member,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partitionIndex": p, "committedOffset": o} for p, o in offsets.items()
                    ],
                }
            ],
        },
    )
    return [p["errorCode"] for t in body["topics"] for p in t["partitions"]]


def fetch(api: Api, group: str, topic: str, partitions: list[int]) -> dict[int, int]:
    body = api.ok(
        "offset-fetch",
        {
            "groups": [
                {"groupId": group, "topics": [{"name": topic, "partitionIndexes": partitions}]}
            ]
        },
    )
    return {
        p["partitionIndex"]: p["committedOffset"]
        for p in body["groups"][0]["topics"][0]["partitions"]
    }


def group_type(api: Api, group: str) -> str | None:
    listed = {g["groupId"]: g for g in api.ok("list-groups", {})["groups"]}
    return listed[group]["groupType"] if group in listed else None


def test_empty_classic_group_becomes_a_consumer_group_with_its_offsets(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 2)
    joined = classic_join(api, group, topic)
    assert joined["errorCode"] == 0
    assert commit(
        api, group, topic, {0: 11, 1: 12}, joined["generationId"], joined["memberId"]
    ) == [
        0,
        0,
    ]
    left = api.ok("leave-group", {"groupId": group, "members": [{"memberId": joined["memberId"]}]})
    assert left["errorCode"] == 0
    assert group_type(api, group) == "classic"

    member = Member(api, group, [topic])
    assert member.join()["errorCode"] == 0
    settle([member])
    assert group_type(api, group) == "consumer"
    assert describe(api, group)["groupState"] == "Stable"
    assert fetch(api, group, topic, [0, 1]) == {0: 11, 1: 12}
    # The consumer member commits on top of what the classic group committed.
    assert commit(api, group, topic, {0: 21}, member.epoch, member.member_id) == [0]
    assert fetch(api, group, topic, [0, 1]) == {0: 21, 1: 12}


def test_empty_consumer_group_becomes_a_classic_group_with_its_offsets(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 2)
    member = Member(api, group, [topic])
    member.join()
    settle([member])
    assert commit(api, group, topic, {0: 5, 1: 6}, member.epoch, member.member_id) == [0, 0]
    assert member.leave()["memberEpoch"] == -1
    assert describe(api, group)["groupState"] == "Empty"

    joined = classic_join(api, group, topic)
    assert joined["errorCode"] == 0
    assert group_type(api, group) == "classic"
    assert fetch(api, group, topic, [0, 1]) == {0: 5, 1: 6}
    assert commit(api, group, topic, {1: 16}, joined["generationId"], joined["memberId"]) == [0]
    assert fetch(api, group, topic, [0, 1]) == {0: 5, 1: 16}
    # A consumer-protocol member now upgrades the (non-empty) classic group: the classic
    # member stays in it at epoch = generation (test_consumer_upgrade.py has the rest).
    assert Member(api, group, [topic]).join()["errorCode"] == 0
    assert group_type(api, group) == "consumer"
    assert fetch(api, group, topic, [0, 1]) == {0: 5, 1: 16}


def test_a_known_member_id_does_not_convert_an_empty_consumer_group(api: Api) -> None:
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 1)
    member = Member(api, group, [topic])
    member.join()
    member.leave()
    answer = api.call("join-group", join_body(group, topic, member_id="someone-1234"))
    assert answer.status == 200 and answer.body["errorCode"] == 69
    assert group_type(api, group) == "consumer"


def test_pending_classic_member_ids_do_not_survive_the_conversion(api: Api) -> None:
    """A classic group with only a pending id (MEMBER_ID_REQUIRED handed out) is Empty: the
    consumer protocol takes it, and the pending id's member item must not confuse it."""
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 4)
    first = api.call("join-group", join_body(group, topic))
    assert first.body["errorCode"] == 79
    pending = first.body["memberId"]

    a, b = Member(api, group, [topic]), Member(api, group, [topic])
    assert a.join()["errorCode"] == 0
    assert b.join()["errorCode"] == 0
    settle([a, b])
    described = describe(api, group)
    assert {m["memberId"] for m in described["members"]} == {a.member_id, b.member_id}
    # The pending id's second join finds a consumer group with members: as Kafka does, it
    # joins it as a new classic-protocol member (generation = its member epoch).
    late = api.call("join-group", join_body(group, topic, member_id=pending))
    assert late.body["errorCode"] == 0, late.body
    assert late.body["memberId"] == pending and late.body["leader"] == ""
    assert late.body["generationId"] > 0 and late.body["members"] == []
    described = describe(api, group)
    assert {m["memberId"] for m in described["members"]} == {a.member_id, b.member_id, pending}


def test_consumer_heartbeat_and_join_race_for_an_empty_group(api: Api) -> None:
    """Both protocols' first requests at once: whichever wins, the group ends a consumer group
    with both members. The classic one joins it as a classic-protocol member, or is upgraded
    with the group (its pending join then answers 27), or its second join found the group
    replaced and still Empty (69, as for any member id there): a new join then succeeds."""
    import threading

    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 1)
    seed = Member(api, group, [topic])
    seed.join()
    seed.leave()
    results: dict[str, int] = {}
    classic_id: list[str] = []

    def classic() -> None:
        answer = classic_join(api, group, topic)
        results["classic"] = answer["errorCode"]
        classic_id.append(answer["memberId"])

    def consumer() -> None:
        results["consumer"] = Member(api, group, [topic]).join()["errorCode"]

    threads = [threading.Thread(target=classic), threading.Thread(target=consumer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results["consumer"] == 0, results
    assert results["classic"] in (0, 27, 69), results
    if results["classic"] == 27:  # upgraded with the group: it rejoins as itself
        assert classic_join(api, group, topic, classic_id[0])["errorCode"] == 0
    elif results["classic"] == 69:  # its id was never a member: a new join
        assert classic_join(api, group, topic)["errorCode"] == 0
    assert group_type(api, group) == "consumer"
    assert len(describe(api, group)["members"]) == 2


# --- refusals of an upgrade ---


def static_join(api: Api, group: str, instance: str, protocol_type: str = "consumer") -> None:
    """One join-group of a static member: registered at once (no MEMBER_ID_REQUIRED)."""
    body = {
        "groupId": group,
        "memberId": "",
        "groupInstanceId": instance,
        "sessionTimeoutMs": 30000,
        "rebalanceTimeoutMs": 30000,
        "protocolType": protocol_type,
        "protocols": [{"name": "range", "metadata": ""}],
    }
    answer = api.call("join-group", body)
    assert answer.status in (200, 202), answer.body


def upgrade_attempt(api: Api, group: str) -> dict:
    return Member(api, group, ["t"]).join()


@pytest.fixture(scope="module")
def upgrade_only_api(service_endpoint: str | None) -> Iterator[Api]:
    settings = {
        **SETTINGS,
        "group.consumer.migration.policy": "upgrade",
        "group.consumer.max.size": "1",
    }
    with running_service(service_endpoint, settings=settings) as url:
        yield Api(url)


@pytest.mark.parametrize("policy", ["disabled", "downgrade"])
def test_upgrade_refused_when_the_policy_forbids_it(
    service_endpoint: str | None, policy: str
) -> None:
    settings = {**SETTINGS, "group.consumer.migration.policy": policy}
    with running_service(service_endpoint, settings=settings) as url:
        api = Api(url)
        group = unique("g")
        static_join(api, group, "i-1")
        answer = upgrade_attempt(api, group)
        assert answer["errorCode"] == 69
        assert answer["errorMessage"] == (
            f"Cannot upgrade classic group {group} to consumer group because online upgrade "
            "is disabled."
        )
        assert group_type(api, group) == "classic"


def test_upgrade_refused_when_the_protocol_type_is_not_consumer(upgrade_only_api: Api) -> None:
    group = unique("g")
    static_join(upgrade_only_api, group, "i-1", protocol_type="connect")
    answer = upgrade_attempt(upgrade_only_api, group)
    assert answer["errorCode"] == 69
    assert answer["errorMessage"].endswith("does not use the consumer embedded protocol.")
    assert group_type(upgrade_only_api, group) == "classic"


def test_upgrade_refused_when_the_group_is_over_the_consumer_max_size(
    upgrade_only_api: Api,
) -> None:
    group = unique("g")
    static_join(upgrade_only_api, group, "i-1")
    static_join(upgrade_only_api, group, "i-2")
    answer = upgrade_attempt(upgrade_only_api, group)
    assert answer["errorCode"] == 69
    assert answer["errorMessage"].endswith("exceeds the consumer group maximum size.")
    assert group_type(upgrade_only_api, group) == "classic"


def test_upgrade_refused_when_the_embedded_protocol_is_malformed(api: Api) -> None:
    """A member whose metadata is not a ConsumerProtocol Subscription: 69, group untouched;
    a heartbeat at a non-zero epoch is not a join."""
    group = unique("g")
    static_join(api, group, "i-1")
    answer = upgrade_attempt(api, group)
    assert (answer["errorCode"], answer["errorMessage"]) == (
        69,
        f"Cannot upgrade the classic group {group} to consumer group because the embedded "
        "consumer protocol is malformed.",
    )
    beat = Member(api, group, ["t"]).send({"memberEpoch": 3})
    assert (beat["errorCode"], beat["errorMessage"]) == (
        69,
        f"Group {group} is not a consumer group.",
    )
    assert group_type(api, group) == "classic"


# --- the protocols of a mixed group's classic members (Kafka's supportsClassicProtocols) ---


def mixed_join(api: Api, group: str, topic: str, names: list[str], member_id: str = "") -> dict:
    """A classic join to a consumer group with the given protocol names; the 79 answer is
    followed by the join with the given id."""
    metadata = base64.b64encode(encode_subscription(Subscription([topic]))).decode()
    body = {
        **join_body(group, topic, member_id),
        "protocols": [{"name": name, "metadata": metadata} for name in names],
    }
    answer = api.ok("join-group", body)
    if answer["errorCode"] == 79:
        return mixed_join(api, group, topic, names, answer["memberId"])
    return answer


def test_a_classic_joiner_needs_a_protocol_every_classic_member_supports(api: Api) -> None:
    """23 INCONSISTENT_GROUP_PROTOCOL for a classic joiner of a consumer group that shares no
    protocol name with all its classic-protocol members; once the member that lacked it has
    left, the same joiner is accepted."""
    group, topic = unique("g"), unique("t")
    create_topic(api, topic, 4)
    m = Member(api, group, [topic])
    assert m.join()["errorCode"] == 0
    a = mixed_join(api, group, topic, ["range", "roundrobin"])
    b = mixed_join(api, group, topic, ["roundrobin"])
    assert a["errorCode"] == b["errorCode"] == 0, (a, b)
    refused = mixed_join(api, group, topic, ["range"])
    assert refused["errorCode"] == 23, refused
    assert mixed_join(api, group, topic, ["roundrobin", "sticky"])["errorCode"] == 0
    left = api.ok(
        "leave-group",
        {"groupId": group, "members": [{"memberId": b["memberId"]}]},
    )
    assert [x["errorCode"] for x in left["members"]] == [0], left
    # Only a ("range", "roundrobin") and the ("roundrobin", "sticky") member are classic now.
    assert mixed_join(api, group, topic, ["range"])["errorCode"] == 23
    assert mixed_join(api, group, topic, ["roundrobin"])["errorCode"] == 0
    members = describe(api, group)["members"]
    assert len(members) == 4  # m, a, the sticky member and the last joiner
