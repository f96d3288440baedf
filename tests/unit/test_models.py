"""The message models hold the contract's schema rules: Kafka's camelCase names and defaults, strict
ranged types, exactly the required fields the contract names, base64 byte fields."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from pydantic import ValidationError

from groupcoord.http.apis import API_BY_NAME, API_NAMES
from groupcoord.models.accepted import AcceptedResponse, ErrorBody
from groupcoord.models.classic import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupMemberResponse,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.models.consumer import (
    ConsumerGroupDescribedGroup,
    ConsumerGroupDescribeMember,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatAssignment,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupHeartbeatTopicPartitions,
)
from groupcoord.models.groups import DescribedGroup, DescribedGroupMember, DescribeGroupsResponse
from groupcoord.models.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)

TOPIC_ID = "b5Gz0J1fQ8ahlfmxyZ9x4w"

# The smallest valid request of every API: exactly its required fields.
MINIMAL: dict[str, dict[str, Any]] = {
    "find-coordinator": {"coordinatorKeys": ["g"]},
    "join-group": {"groupId": "g"},
    "sync-group": {"groupId": "g", "generationId": 1, "memberId": "m"},
    "heartbeat": {"groupId": "g", "generationId": 1, "memberId": "m"},
    "leave-group": {"groupId": "g"},
    "consumer-group-heartbeat": {"groupId": "g", "memberId": "m", "memberEpoch": 0},
    "offset-commit": {"groupId": "g"},
    "offset-fetch": {"groups": [{"groupId": "g"}]},
    "offset-delete": {"groupId": "g"},
    "metadata": {},
    "list-groups": {},
    "describe-groups": {"groups": ["g"]},
    "consumer-group-describe": {"groupIds": ["g"]},
    "streams-group-heartbeat": {"groupId": "g", "memberId": "m", "memberEpoch": 0},
    "streams-group-describe": {"groupIds": ["g"]},
    "delete-groups": {"groupsNames": ["g"]},
    "describe-group-activity": {"groupIds": ["g"]},
    "create-topics": {"topics": []},
    "create-partitions": {"topics": []},
    "delete-topics": {"topics": []},
    "create-acls": {"creations": []},
    "describe-acls": {"resourceTypeFilter": 1, "operation": 1, "permissionType": 1},
    "delete-acls": {"filters": []},
}

# What the minimal request reads as: Kafka's schema defaults, null for nullable fields.
KAFKA_DEFAULTS: dict[str, dict[str, Any]] = {
    "join-group": {
        "groupId": "g",
        "sessionTimeoutMs": 0,
        "rebalanceTimeoutMs": -1,
        "memberId": "",
        "groupInstanceId": None,
        "protocolType": "",
        "protocols": [],
        "reason": None,
        "heartbeatFrequency": 3,
        "failedHeartbeatThreshold": 3,
    },
    "sync-group": {
        "groupId": "g",
        "generationId": 1,
        "memberId": "m",
        "groupInstanceId": None,
        "protocolType": None,
        "protocolName": None,
        "assignments": [],
    },
    "heartbeat": {
        "groupId": "g",
        "generationId": 1,
        "memberId": "m",
        "groupInstanceId": None,
        "partitionLags": None,  # groupcoord extension: lags unchanged
    },
    "leave-group": {"groupId": "g", "members": []},
    "consumer-group-heartbeat": {
        "groupId": "g",
        "memberId": "m",
        "memberEpoch": 0,
        "instanceId": None,
        "rackId": None,
        "rebalanceTimeoutMs": -1,
        "subscribedTopicNames": None,
        "subscribedTopicRegex": None,
        "serverAssignor": None,
        "topicPartitions": None,
        "partitionLags": None,  # groupcoord extension: lags unchanged
    },
    "offset-commit": {
        "groupId": "g",
        "generationIdOrMemberEpoch": -1,
        "memberId": "",
        "groupInstanceId": None,
        "topics": [],
        # groupcoord's extension (docs/exactly-once.md)
        "writes": None,
        "idempotencyKey": None,
    },
    "offset-fetch": {
        "groups": [{"groupId": "g", "memberId": None, "memberEpoch": -1, "topics": None}],
        "requireStable": False,
    },
    "offset-delete": {"groupId": "g", "topics": []},
    "describe-groups": {"groups": ["g"], "includeAuthorizedOperations": False},
    "consumer-group-describe": {"groupIds": ["g"], "includeAuthorizedOperations": False},
    "delete-groups": {"groupsNames": ["g"]},
}

# A field of the wrong type in each API (a string where a number belongs wherever the request
# has a number): (path of the field, wrong value, extra fields the path needs).
WRONG_TYPE: dict[str, tuple[tuple[Any, ...], Any, dict[str, Any]]] = {
    "find-coordinator": (("keyType",), "0", {}),
    "join-group": (("sessionTimeoutMs",), "45000", {}),
    "sync-group": (("generationId",), "1", {}),
    "heartbeat": (("generationId",), "1", {}),
    "leave-group": (("members", 0, "memberId"), 5, {"members": [{}]}),
    "consumer-group-heartbeat": (("memberEpoch",), "0", {}),
    "offset-commit": (
        ("topics", 0, "partitions", 0, "committedOffset"),
        "10",
        {"topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": 1}]}]},
    ),
    "offset-fetch": (("groups", 0, "memberEpoch"), "3", {}),
    "offset-delete": (
        ("topics", 0, "partitions", 0, "partitionIndex"),
        "0",
        {"topics": [{"name": "t", "partitions": [{"partitionIndex": 0}]}]},
    ),
    "metadata": (("allowAutoTopicCreation",), "true", {}),
    "list-groups": (("statesFilter",), "Stable", {}),
    "describe-groups": (("includeAuthorizedOperations",), 1, {}),
    "consumer-group-describe": (("groupIds",), "g", {}),
    "delete-groups": (("groupsNames", 1), 7, {"groupsNames": ["g", "h"]}),
    "describe-group-activity": (("includeMembers",), 1, {}),
    "create-topics": (("timeoutMs",), "60000", {}),
    "create-partitions": (("timeoutMs",), "60000", {}),
    "delete-topics": (("timeoutMs",), "60000", {}),
}

# An int one past its Kafka type's range.
OUT_OF_RANGE: dict[str, tuple[tuple[Any, ...], int, dict[str, Any]]] = {
    "find-coordinator": (("keyType",), 2**7, {}),
    "join-group": (("sessionTimeoutMs",), 2**31, {}),
    "sync-group": (("generationId",), -(2**31) - 1, {}),
    "heartbeat": (("generationId",), 2**31, {}),
    "consumer-group-heartbeat": (("rebalanceTimeoutMs",), 2**31, {}),
    "offset-commit": (
        ("topics", 0, "partitions", 0, "committedOffset"),
        2**63,
        {"topics": [{"topicId": TOPIC_ID, "partitions": [{"partitionIndex": 0}]}]},
    ),
    "offset-fetch": (
        ("groups", 0, "topics", 0, "partitionIndexes", 0),
        2**31,
        {"groups": [{"groupId": "g", "topics": [{"name": "t", "partitionIndexes": []}]}]},
    ),
    "offset-delete": (
        ("topics", 0, "partitions", 0, "partitionIndex"),
        2**31,
        {"topics": [{"name": "t", "partitions": [{"partitionIndex": 0}]}]},
    ),
    "create-topics": (("timeoutMs",), 2**31, {}),
    "create-partitions": (("timeoutMs",), 2**31, {}),
    "delete-topics": (("timeoutMs",), 2**31, {}),
}


def _set(body: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    *parents, last = path
    target: Any = body
    for key in parents:
        target = target[key]
    if isinstance(target, list) and last == len(target):
        target.append(value)
    else:
        target[last] = value


def _body(api: str, extra: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    body = copy.deepcopy({**MINIMAL[api], **extra})
    _set(body, path, value)
    return body


def _error_locs(model: type, body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The error locations of `body`, the same whether parsed from a dict or from JSON text."""
    locs = []
    for parse in (model.model_validate, lambda b: model.model_validate_json(json.dumps(b))):
        with pytest.raises(ValidationError) as caught:
            parse(body)
        locs.append([error["loc"] for error in caught.value.errors()])
    assert locs[0] == locs[1]
    return locs[0]


def test_every_api_of_the_contract_has_messages():
    assert set(API_BY_NAME) == set(API_NAMES) == set(MINIMAL)
    barriers = {api for api, messages in API_BY_NAME.items() if messages.may_answer_accepted}
    assert barriers == {"join-group", "sync-group"}


@pytest.mark.parametrize("api", API_NAMES)
def test_minimal_request_parses(api):
    request = API_BY_NAME[api].request.model_validate(MINIMAL[api])
    assert API_BY_NAME[api].request.model_validate_json(json.dumps(MINIMAL[api])) == request


@pytest.mark.parametrize("api", sorted(KAFKA_DEFAULTS))
def test_absent_fields_take_kafkas_defaults(api):
    request = API_BY_NAME[api].request.model_validate(MINIMAL[api])
    assert request.to_json_dict() == KAFKA_DEFAULTS[api]


@pytest.mark.parametrize("api", API_NAMES)
def test_required_fields_are_exactly_the_documented_ones(api):
    fields = API_BY_NAME[api].request.model_fields
    required = {field.alias for field in fields.values() if field.is_required()}
    assert required == set(MINIMAL[api])


@pytest.mark.parametrize(
    ("api", "field"), [(api, field) for api in API_NAMES for field in MINIMAL[api]]
)
def test_missing_required_field_is_rejected_naming_it(api, field):
    body = {k: v for k, v in MINIMAL[api].items() if k != field}
    assert _error_locs(API_BY_NAME[api].request, body) == [(field,)]


@pytest.mark.parametrize("api", sorted(WRONG_TYPE))
def test_wrong_type_is_rejected_naming_the_field(api):
    path, value, extra = WRONG_TYPE[api]
    body = _body(api, extra, path, value)
    assert _error_locs(API_BY_NAME[api].request, body) == [path]


@pytest.mark.parametrize("api", sorted(OUT_OF_RANGE))
def test_int_outside_its_kafka_type_is_rejected(api):
    path, value, extra = OUT_OF_RANGE[api]
    body = _body(api, extra, path, value)
    assert _error_locs(API_BY_NAME[api].request, body) == [path]


@pytest.mark.parametrize("value", [True, 1.0, None])
def test_ints_are_not_coerced(value):
    body = {"groupId": "g", "memberId": "m", "memberEpoch": value}
    assert _error_locs(API_BY_NAME["consumer-group-heartbeat"].request, body) == [("memberEpoch",)]


# --- byte fields ---

BYTES_REQUESTS = [
    (
        JoinGroupRequest,
        {"groupId": "g", "protocols": [{"name": "range"}]},
        ("protocols", 0, "metadata"),
    ),
    (
        SyncGroupRequest,
        {"groupId": "g", "generationId": 1, "memberId": "m", "assignments": [{"memberId": "m"}]},
        ("assignments", 0, "assignment"),
    ),
]


@pytest.mark.parametrize(("model", "body", "path"), BYTES_REQUESTS)
def test_base64_fields_round_trip(model, body, path):
    body = copy.deepcopy(body)
    _set(body, path, "AAEC/w==")
    parsed = model.model_validate(body)
    node: Any = parsed  # these paths' camelCase names equal the Python attribute names
    for key in path:
        node = node[key] if isinstance(key, int) else getattr(node, key)
    assert node == b"\x00\x01\x02\xff"
    dumped: Any = parsed.to_json_dict()
    assert model.model_validate(dumped) == parsed
    for key in path:
        dumped = dumped[key]
    assert dumped == "AAEC/w=="


@pytest.mark.parametrize(("model", "body", "path"), BYTES_REQUESTS)
@pytest.mark.parametrize("bad", ["not base64!", "AAE", 12])
def test_bad_base64_is_rejected_naming_the_field(model, body, path, bad):
    body = copy.deepcopy(body)
    _set(body, path, bad)
    assert _error_locs(model, body) == [path]


def test_absent_byte_fields_are_empty():
    request = JoinGroupRequest.model_validate({"groupId": "g", "protocols": [{"name": "range"}]})
    assert request.protocols[0].metadata == b""


def test_response_byte_fields_dump_as_base64():
    join = JoinGroupResponse(members=[JoinGroupResponseMember(member_id="m", metadata=b"\x01\x02")])
    assert join.to_json_dict()["members"] == [
        {"memberId": "m", "groupInstanceId": None, "metadata": "AQI="}
    ]
    assert SyncGroupResponse(assignment=b"\xff").to_json_dict()["assignment"] == "/w=="
    member = DescribedGroupMember(member_id="m", member_metadata=b"\x00", member_assignment=b"")
    assert member.to_json_dict()["memberMetadata"] == "AA=="
    assert member.to_json_dict()["memberAssignment"] == ""


# --- topics by name and/or id (offset APIs) ---

TOPIC_REQUESTS = [
    (OffsetCommitRequest, lambda topic: {"groupId": "g", "topics": [topic]}, ("topics", 0)),
    (
        OffsetFetchRequest,
        lambda topic: {"groups": [{"groupId": "g", "topics": [topic]}]},
        ("groups", 0, "topics", 0),
    ),
    (OffsetDeleteRequest, lambda topic: {"groupId": "g", "topics": [topic]}, ("topics", 0)),
]


@pytest.mark.parametrize(("model", "wrap", "path"), TOPIC_REQUESTS)
@pytest.mark.parametrize(
    "topic", [{"name": "t"}, {"topicId": TOPIC_ID}, {"name": "t", "topicId": TOPIC_ID}]
)
def test_offset_topics_are_named_by_name_or_id_or_both(model, wrap, path, topic):
    model.model_validate(wrap(topic))


@pytest.mark.parametrize(("model", "wrap", "path"), TOPIC_REQUESTS)
def test_offset_topic_without_name_or_id_is_rejected(model, wrap, path):
    assert _error_locs(model, wrap({})) == [path]


@pytest.mark.parametrize(("model", "wrap", "path"), TOPIC_REQUESTS)
def test_malformed_topic_id_is_rejected(model, wrap, path):
    assert _error_locs(model, wrap({"topicId": "not-a-topic-id"})) == [(*path, "topicId")]


def test_offset_commit_partition_defaults():
    partition = {"partitionIndex": 2, "committedOffset": 7}
    body = {"groupId": "g", "topics": [{"name": "t", "partitions": [partition]}]}
    topic = OffsetCommitRequest.model_validate(body).to_json_dict()["topics"][0]
    assert topic == {
        "name": "t",
        "topicId": None,
        "partitions": [
            {
                "partitionIndex": 2,
                "committedOffset": 7,
                "committedLeaderEpoch": -1,
                "committedMetadata": None,
                "kinesisPosition": None,
            }
        ],
    }


@pytest.mark.parametrize("field", ["heartbeatFrequency", "failedHeartbeatThreshold"])
def test_join_heartbeat_extensions_must_be_positive(field):
    assert _error_locs(JoinGroupRequest, {"groupId": "g", field: 0}) == [(field,)]


# --- responses ---

SAMPLE_RESPONSES = [
    JoinGroupResponse(members=[JoinGroupResponseMember(member_id="m")], heartbeat_interval_ms=1),
    LeaveGroupResponse(members=[LeaveGroupMemberResponse(member_id="m", error_code=25)]),
    ConsumerGroupHeartbeatResponse(
        member_id="m",
        assignment=ConsumerGroupHeartbeatAssignment(
            topic_partitions=[ConsumerGroupHeartbeatTopicPartitions(topic_id=TOPIC_ID)]
        ),
    ),
    ConsumerGroupDescribeResponse(
        groups=[
            ConsumerGroupDescribedGroup(
                group_id="g", members=[ConsumerGroupDescribeMember(member_id="m")]
            )
        ]
    ),
    OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name="t", partitions=[OffsetCommitResponsePartition(partition_index=0)]
            )
        ]
    ),
    OffsetFetchResponse(
        groups=[
            OffsetFetchResponseGroup(
                group_id="g",
                topics=[
                    OffsetFetchResponseTopics(
                        topic_id=TOPIC_ID,
                        partitions=[OffsetFetchResponsePartitions(partition_index=0)],
                    )
                ],
            )
        ]
    ),
    DescribeGroupsResponse(groups=[DescribedGroup(group_id="g")]),
]


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


@pytest.mark.parametrize("api", API_NAMES)
def test_default_response_dumps_camel_case_with_throttle_time(api):
    model = API_BY_NAME[api].response
    dumped = model().to_json_dict()
    assert dumped["throttleTimeMs"] == 0
    assert set(dumped) == {field.alias for field in model.model_fields.values()}
    assert not any("_" in key for key in dumped)


@pytest.mark.parametrize("response", SAMPLE_RESPONSES, ids=lambda r: type(r).__name__)
def test_nested_response_keys_are_camel_case(response):
    dumped = response.to_json_dict()
    assert "throttleTimeMs" in dumped
    assert not any("_" in key for key in _keys(dumped))
    assert type(response).model_validate(dumped) == response


def test_response_topics_carry_both_name_and_id():
    topic = OffsetFetchResponse.model_validate(
        {"groups": [{"groupId": "g", "topics": [{"name": "t", "partitions": []}]}]}
    ).to_json_dict()["groups"][0]["topics"][0]
    assert topic == {"name": "t", "topicId": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": []}


def test_consumer_group_heartbeat_assignment_is_null_unless_set():
    dumped = ConsumerGroupHeartbeatResponse(member_epoch=3).to_json_dict()
    assert dumped["assignment"] is None
    assert dumped["memberEpoch"] == 3


# --- bodies that are not Kafka messages ---


def test_accepted_body_is_exactly_member_id_and_retry_after():
    assert AcceptedResponse(member_id="m", retry_after_ms=500).to_json_dict() == {
        "memberId": "m",
        "retryAfterMs": 500,
    }
    assert _error_locs(AcceptedResponse, {"memberId": "m"}) == [("retryAfterMs",)]


def test_error_body_is_error_code_and_message():
    assert ErrorBody(error_code=42, error_message="groupId: missing").to_json_dict() == {
        "errorCode": 42,
        "errorMessage": "groupId: missing",
    }


def test_narrow_bounds_are_kept_where_a_field_narrows_its_type() -> None:
    """A Field(ge=0) beside Int32's own bounds would be overridden: -1 must still be refused."""
    from groupcoord.models.lags import PartitionLag
    from groupcoord.models.streams import StreamsEndpoint, StreamsTopology

    for model, body in (
        (StreamsEndpoint, {"host": "h", "port": -1}),
        (StreamsEndpoint, {"host": "h", "port": 65536}),
        (StreamsTopology, {"epoch": -1, "subtopologies": []}),
        (PartitionLag, {"partition": 0, "lagMs": -1}),
    ):
        with pytest.raises(ValidationError):
            model.model_validate(body)
