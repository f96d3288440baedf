"""Every input bounded, every bound a clear answer (docs/limits.md): the inputs that
used to reach DynamoDB and answer 500 are refused with a 400 naming the field, or Kafka's
in-band error, and change nothing. (Commit metadata over offset.metadata.max.bytes, Kafka's
per-partition 12, is tested in test_offsets_classic.py.)"""

from __future__ import annotations

import base64
import uuid

import pytest

from groupcoord.models import limits
from tests.support.api import Api

# An HTTP-contract test: `serve` on the DynamoDB endpoint.
pytestmark = pytest.mark.http_contract


def _group() -> str:
    return f"lim-{uuid.uuid4().hex[:8]}"


def _topic(api: Api, partitions: int = 2) -> str:
    name = f"lim-{uuid.uuid4().hex[:8]}"
    api.ok("create-topics", {"topics": [{"name": name, "numPartitions": partitions}]})
    return name


def _refused(answer, field: str) -> None:
    assert answer.status == 400, answer
    assert answer.body["errorCode"] == 42
    assert field in answer.body["errorMessage"], answer.body


def _listed(api: Api) -> set[str]:
    return {g["groupId"] for g in api.ok("list-groups", {})["groups"]}


def test_a_3000_character_group_id_is_a_400_and_writes_nothing(api: Api) -> None:
    topic = _topic(api)
    group = "g" * 3000
    answer = api.call(
        "offset-commit",
        {
            "groupId": group,
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": 0, "committedOffset": 1}]}
            ],
        },
    )
    _refused(answer, "groupId")
    assert group not in _listed(api)


def test_the_longest_ids_work_in_every_key(api: Api) -> None:
    # 255 four-byte characters with the key separator in them: the largest keys a request can
    # make, and still within DynamoDB's limits.
    topic = _topic(api)
    group = ("\U0001f600#%" * 85)[: limits.GROUP_ID_MAX_CHARS]
    member = "\U0001f600" * limits.MEMBER_ID_MAX_CHARS
    body = api.ok(
        "consumer-group-heartbeat",
        {
            "groupId": group,
            "memberId": member,
            "memberEpoch": 0,
            "instanceId": "\U0001f600" * limits.INSTANCE_ID_MAX_CHARS,
            "rackId": "r" * limits.RACK_ID_MAX_CHARS,
            "rebalanceTimeoutMs": 30000,
            "subscribedTopicNames": [topic, "t" * limits.TOPIC_NAME_MAX_CHARS],
            "topicPartitions": [],
        },
    )
    assert body["errorCode"] == 0, body
    committed = api.ok(
        "offset-commit",
        {
            "groupId": group,
            "memberId": member,
            "generationIdOrMemberEpoch": body["memberEpoch"],
            "topics": [
                {"name": topic, "partitions": [{"partitionIndex": 0, "committedOffset": 5}]}
            ],
        },
    )
    assert committed["topics"][0]["partitions"][0]["errorCode"] in (0, 113), committed
    described = api.ok("consumer-group-describe", {"groupIds": [group]})["groups"][0]
    assert [m["memberId"] for m in described["members"]] == [member]


@pytest.mark.parametrize(
    ("api_name", "body", "field"),
    [
        ("heartbeat", {"groupId": "g", "generationId": 1, "memberId": "m" * 1100}, "memberId"),
        (
            "join-group",
            {"groupId": "g", "groupInstanceId": "i" * 256, "protocols": []},
            "groupInstanceId",
        ),
        (
            "consumer-group-heartbeat",
            {"groupId": "g", "memberId": "m", "memberEpoch": 0, "rackId": "r" * 256},
            "rackId",
        ),
        (
            "consumer-group-heartbeat",
            {
                "groupId": "g",
                "memberId": "m",
                "memberEpoch": 0,
                "subscribedTopicNames": ["t"] * (limits.SUBSCRIBED_TOPICS_MAX + 1),
            },
            "subscribedTopicNames",
        ),
        ("describe-groups", {"groups": ["g"] * 101}, "groups"),
        ("consumer-group-describe", {"groupIds": ["g"] * 101}, "groupIds"),
        ("delete-groups", {"groupsNames": ["g"] * 101}, "groupsNames"),
        ("find-coordinator", {"coordinatorKeys": ["g"] * 101}, "coordinatorKeys"),
        ("offset-fetch", {"groups": [{"groupId": f"g{i}"} for i in range(11)]}, "groups"),
        ("list-groups", {"statesFilter": ["x" * 65]}, "statesFilter"),
        (
            "leave-group",
            {"groupId": "g", "members": [{"memberId": "m"}] * (limits.MEMBERS_PER_LEAVE_MAX + 1)},
            "members",
        ),
        ("offset-commit", {"groupId": "g", "topics": [{"name": "t" * 250}]}, "topics[0].name"),
    ],
)
def test_over_a_limit_is_a_400_naming_the_field(
    api: Api, api_name: str, body: dict, field: str
) -> None:
    _refused(api.call(api_name, body), field)


def test_protocol_metadata_past_its_bound_is_a_400_not_a_500(api: Api) -> None:
    group = _group()
    big = base64.b64encode(b"x" * (limits.PROTOCOL_METADATA_MAX_BYTES + 1)).decode()
    answer = api.call(
        "join-group",
        {
            "groupId": group,
            "protocolType": "consumer",
            "protocols": [{"name": "a", "metadata": big}],
        },
    )
    _refused(answer, "protocols[0].metadata")
    # Each within its own bound, together past what one payload item may hold.
    part = base64.b64encode(b"x" * limits.PROTOCOL_METADATA_MAX_BYTES).decode()
    protocols = [{"name": n, "metadata": part} for n in ("a", "b", "c")]
    answer = api.call("join-group", {"groupId": group, "protocolType": "c", "protocols": protocols})
    _refused(answer, "protocols")
    assert group not in _listed(api)
    # A 400 KB blob (the old way to a 500) is refused by the body limit first.
    huge = base64.b64encode(b"x" * 400_000).decode()
    answer = api.call(
        "join-group", {"groupId": group, "protocols": [{"name": "a", "metadata": huge}]}
    )
    assert answer.status in (400, 413), answer


def test_a_partition_count_past_the_limit_is_kafkas_37(api: Api) -> None:
    name = f"lim-{uuid.uuid4().hex[:8]}"
    too_many = limits.TOPIC_PARTITIONS_DEFAULT_MAX + 1
    body = api.ok("create-topics", {"topics": [{"name": name, "numPartitions": too_many}]})
    assert body["topics"][0]["errorCode"] == 37, body
    assert api.ok("metadata", {"topics": [{"name": name}]})["topics"][0]["errorCode"] == 3
    topic = _topic(api)
    grown = api.ok("create-partitions", {"topics": [{"name": topic, "count": 2**31 - 1}]})
    assert grown["results"][0]["errorCode"] == 37, grown
