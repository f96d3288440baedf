"""Every API of the HTTP contract, in one table: its request and response messages, the
service function that answers it, and the Lambda function that serves it.

template.yaml routes `POST /v1/<api>` to the same functions (tests/integration/test_template.py
checks it), `groupcoord serve` dispatches by this table, docs/openapi.json is generated from it
(http/openapi.py), and a function answers only its own APIs. The messages and the service
function are named by module ("module:Name" under groupcoord.models and groupcoord.service) and
imported by the API's first request (http/resolver.py), so a function loads only its own APIs'
code: importing this table imports no model, no service and no pydantic
(tests/unit/test_cold_imports.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..models.base import KafkaMessage, KafkaResponse

# The Lambda functions behind the HTTP API (template.yaml, FrontDoor=HttpApi). Group
# membership is the hot path (heartbeats): kept apart so that it scales and is billed alone.
# The admin function also answers the API's $default route (404).
MEMBERSHIP = "membership"
OFFSETS = "offsets"
ADMIN = "admin"
DEFAULT_ROUTE_FUNCTION = ADMIN
# Behind a function URL (FrontDoor=FunctionUrl) one function serves every API: a function URL
# has no routes, so one URL answers the whole `/v1/<api>` contract (docs/deploying.md says why
# one router rather than a URL per function).
ROUTER = "router"

# (request, ApiContext) -> a Kafka response, or service.handlers_types.Accepted (a 202).
Handler = Callable[[Any, Any], Any]


def _load(package: str, ref: str) -> Any:
    module, _, name = ref.partition(":")
    # __import__ rather than importlib.import_module: `python -X importtime` (bench.coldstart)
    # sees only imports through the former.
    return getattr(__import__(f"{package}.{module}", fromlist=[name]), name)


@cache
def _model(ref: str) -> Any:
    return _load("groupcoord.models", ref)


@dataclass(frozen=True)
class Api:
    name: str
    # The messages: "module:Class" under groupcoord.models (a class is taken as it is).
    request_ref: str | type[KafkaMessage]
    response_ref: str | type[KafkaResponse]
    function: str
    # "module:function" under groupcoord.service.
    service: str
    # Kafka's message and the version whose JSON form the API speaks.
    kafka: str
    # join-group and sync-group may answer 202 "registered, not complete" (classic-protocol.md).
    may_answer_accepted: bool = False

    @property
    def request(self) -> type[KafkaMessage]:
        ref = self.request_ref
        return _model(ref) if isinstance(ref, str) else ref

    @property
    def response(self) -> type[KafkaResponse]:
        ref = self.response_ref
        return _model(ref) if isinstance(ref, str) else ref

    def handler(self) -> Handler:
        return _load("groupcoord.service", self.service)


APIS: tuple[Api, ...] = (
    Api("find-coordinator", "coordinator:FindCoordinatorRequest",
        "coordinator:FindCoordinatorResponse", ADMIN, "coordinator:find_coordinator",
        "FindCoordinator v6"),
    Api("join-group", "classic:JoinGroupRequest", "classic:JoinGroupResponse", MEMBERSHIP,
        "classic.join:join_group", "JoinGroup v9", may_answer_accepted=True),
    Api("sync-group", "classic:SyncGroupRequest", "classic:SyncGroupResponse", MEMBERSHIP,
        "classic.sync:sync_group", "SyncGroup v5", may_answer_accepted=True),
    Api("heartbeat", "classic:HeartbeatRequest", "classic:HeartbeatResponse", MEMBERSHIP,
        "classic.heartbeat:heartbeat", "Heartbeat v4"),
    Api("leave-group", "classic:LeaveGroupRequest", "classic:LeaveGroupResponse", MEMBERSHIP,
        "classic.leave:leave_group", "LeaveGroup v5"),
    Api("consumer-group-heartbeat", "consumer:ConsumerGroupHeartbeatRequest",
        "consumer:ConsumerGroupHeartbeatResponse", MEMBERSHIP,
        "consumer.heartbeat:consumer_group_heartbeat", "ConsumerGroupHeartbeat v1"),
    Api("streams-group-heartbeat", "streams:StreamsGroupHeartbeatRequest",
        "streams:StreamsGroupHeartbeatResponse", MEMBERSHIP,
        "streams.heartbeat:streams_group_heartbeat", "StreamsGroupHeartbeat v0"),
    Api("offset-commit", "offsets:OffsetCommitRequest", "offsets:OffsetCommitResponse",
        OFFSETS, "offsets:offset_commit", "OffsetCommit v10"),
    Api("offset-fetch", "offsets:OffsetFetchRequest", "offsets:OffsetFetchResponse", OFFSETS,
        "offsets:offset_fetch", "OffsetFetch v10"),
    Api("offset-delete", "offsets:OffsetDeleteRequest", "offsets:OffsetDeleteResponse",
        OFFSETS, "offsets:offset_delete", "OffsetDelete v0"),
    Api("metadata", "topics:MetadataRequest", "topics:MetadataResponse", ADMIN,
        "topics:metadata", "Metadata v13"),
    Api("list-groups", "groups:ListGroupsRequest", "groups:ListGroupsResponse", ADMIN,
        "groups:list_groups", "ListGroups v5"),
    Api("describe-groups", "groups:DescribeGroupsRequest", "groups:DescribeGroupsResponse",
        ADMIN, "classic.describe:describe_groups", "DescribeGroups v6"),
    Api("consumer-group-describe", "consumer:ConsumerGroupDescribeRequest",
        "consumer:ConsumerGroupDescribeResponse", ADMIN,
        "consumer.describe:consumer_group_describe", "ConsumerGroupDescribe v1"),
    Api("streams-group-describe", "streams:StreamsGroupDescribeRequest",
        "streams:StreamsGroupDescribeResponse", ADMIN,
        "streams.describe:streams_group_describe", "StreamsGroupDescribe v0"),
    Api("delete-groups", "groups:DeleteGroupsRequest", "groups:DeleteGroupsResponse", ADMIN,
        "group_admin:delete_groups", "DeleteGroups v3"),
    # A groupcoord extension for monitoring (groupcoord dashboard): no Kafka message.
    Api("describe-group-activity", "activity:DescribeGroupActivityRequest",
        "activity:DescribeGroupActivityResponse", ADMIN,
        "group_activity:describe_group_activity",
        "(none: a groupcoord extension for monitoring)"),
    Api("create-topics", "topics:CreateTopicsRequest", "topics:CreateTopicsResponse", ADMIN,
        "topics:create_topics", "CreateTopics v7"),
    Api("create-partitions", "topics:CreatePartitionsRequest",
        "topics:CreatePartitionsResponse", ADMIN, "topics:create_partitions",
        "CreatePartitions v3"),
    Api("delete-topics", "topics:DeleteTopicsRequest", "topics:DeleteTopicsResponse", ADMIN,
        "topics:delete_topics", "DeleteTopics v6"),
    Api("create-acls", "acls:CreateAclsRequest", "acls:CreateAclsResponse", ADMIN,
        "acls:create_acls", "CreateAcls v3"),
    Api("describe-acls", "acls:DescribeAclsRequest", "acls:DescribeAclsResponse", ADMIN,
        "acls:describe_acls", "DescribeAcls v3"),
    Api("delete-acls", "acls:DeleteAclsRequest", "acls:DeleteAclsResponse", ADMIN,
        "acls:delete_acls", "DeleteAcls v3"),
)  # fmt: skip

API_BY_NAME: dict[str, Api] = {api.name: api for api in APIS}
# The kebab-case names (POST /v1/<name>); a name outside this list is answered 404.
API_NAMES: tuple[str, ...] = tuple(API_BY_NAME)
API_FUNCTION: dict[str, str] = {api.name: api.function for api in APIS}
FUNCTION_APIS: dict[str, tuple[str, ...]] = {
    function: tuple(api.name for api in APIS if api.function == function)
    for function in (MEMBERSHIP, OFFSETS, ADMIN)
}


def serves(function: str, api: Api) -> bool:
    """Whether this Lambda function answers the API: its own APIs, or all of them (ROUTER)."""
    return function == ROUTER or api.function == function
