"""No group id reaches another group's items: offsets, members and deletes of one
group never touch another's, however its id is spelled. Over HTTP against `serve`."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.api import Api

# An HTTP-contract test: `serve` on the DynamoDB endpoint.
pytestmark = pytest.mark.http_contract


def _topic(api: Api) -> str:
    name = f"iso-{uuid.uuid4().hex[:10]}"
    api.ok("create-topics", {"topics": [{"name": name, "numPartitions": 4}]})
    return name


def _commit(api: Api, group: str, topic: str, offset: int) -> None:
    body = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": 3, "committedOffset": offset}]}
            ],
        },
    )
    assert body["topics"][0]["partitions"][0]["errorCode"] == 0, body


def _committed(api: Api, group: str, topic: str) -> int:
    body = api.ok(
        "offset-fetch",
        {"groups": [{"groupId": group, "topics": [{"name": topic, "partitionIndexes": [3]}]}]},
    )
    return body["groups"][0]["topics"][0]["partitions"][0]["committedOffset"]


def _join_classic(api: Api, group: str) -> str:
    request = {
        "groupId": group,
        "sessionTimeoutMs": 30000,
        "protocolType": "consumer",
        "protocols": [{"name": "range", "metadata": ""}],
    }
    first = api.ok("join-group", request)
    assert first["errorCode"] == 79, first
    answer = api.call("join-group", {**request, "memberId": first["memberId"]})
    assert answer.status in (200, 202), answer
    return first["memberId"]


def _join_consumer(api: Api, group: str, topic: str) -> str:
    member = uuid.uuid4().hex
    body = api.ok(
        "consumer-group-heartbeat",
        {
            "groupId": group,
            "memberId": member,
            "memberEpoch": 0,
            "rebalanceTimeoutMs": 30000,
            "subscribedTopicNames": [topic],
            "topicPartitions": [],
        },
    )
    assert body["errorCode"] == 0, body
    return member


def _consumer_members(api: Api, group: str) -> list[str]:
    described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
    return [m["memberId"] for m in described["members"]]


def _members(api: Api, group: str) -> list[str]:
    described = api.ok("describe-groups", {"groups": [group]})["groups"][0]
    return [m["memberId"] for m in described["members"]]


def test_deleting_a_group_keeps_the_groups_named_like_its_items(api: Api) -> None:
    # The bug key escaping fixed: deleting `baz` took `baz#P3` and `baz#I` (its payload and instance
    # partition keys) with it.
    topic = _topic(api)
    base = f"baz-{uuid.uuid4().hex[:6]}"
    others = [f"{base}#P3", f"{base}#I", f"{base}#M1", f"{base}#S0", f"{base}#J2", f"{base}%23P3"]
    for offset, group in enumerate([base, *others], start=10):
        _commit(api, group, topic, offset)

    result = api.ok("delete-groups", {"groupsNames": [base]})["results"][0]
    assert result["errorCode"] == 0, result

    assert _committed(api, base, topic) == -1
    for offset, group in enumerate(others, start=11):
        assert _committed(api, group, topic) == offset, group
    listed = {g["groupId"] for g in api.ok("list-groups", {})["groups"]}
    assert set(others) <= listed


def test_a_commit_to_a_group_named_like_a_member_shard_is_no_phantom_member(api: Api) -> None:
    # A commit to `foo#M3` landed in group `foo`'s member partition 3 and showed as a member.
    topic = _topic(api)
    base = f"foo-{uuid.uuid4().hex[:6]}"
    member = _join_classic(api, base)
    for shard in range(8):
        _commit(api, f"{base}#M{shard}", topic, 5)
        _commit(api, f"{base}#P{shard}", topic, 5)
    assert _members(api, base) == [member]


_PIECES = st.sampled_from(["#", "%", "%23", "/", "\x00", "é", "\U0001f600", "M1", "P3", "I", "O#"])
hostile_ids = st.lists(
    st.one_of(_PIECES, st.text(min_size=1, max_size=4)), min_size=1, max_size=6
).map("".join)


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(a=hostile_ids, b=hostile_ids)
def test_no_operation_on_one_group_reaches_another(api: Api, a: str, b: str) -> None:
    if a == b:
        return
    run = uuid.uuid4().hex[:6]
    a, b = f"{run}{a}", f"{run}{b}"  # fresh groups per example, prefix kept hostile-free
    topic = _topic(api)
    _commit(api, a, topic, 1)
    _commit(api, b, topic, 2)
    member_b = _join_consumer(api, b, topic)

    # Everything done to `a` leaves `b` as it was: commits, a member, a deletion.
    member_a = _join_consumer(api, a, topic)
    assert _consumer_members(api, b) == [member_b]
    left = api.ok(
        "consumer-group-heartbeat", {"groupId": a, "memberId": member_a, "memberEpoch": -1}
    )
    assert left["errorCode"] == 0, left
    assert api.ok("delete-groups", {"groupsNames": [a]})["results"][0]["errorCode"] == 0
    assert _committed(api, a, topic) == -1
    assert _committed(api, b, topic) == 2
    assert _consumer_members(api, b) == [member_b]
