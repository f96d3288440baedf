"""Every API of the HTTP contract, in one table: its request and response messages, the
service function that answers it, and the Lambda function that serves it.

template.yaml routes `POST /v1/<api>` to the same functions (tests/integration/test_template.py
checks it), `groupcoord serve` dispatches by this table, docs/openapi.json is generated from it
(http/openapi.py), and a function answers only its own APIs. A service function is named by
its module and imported when a function's resolver is built (http/resolver.py), so a function
loads only its own APIs' code.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..models.acls import (
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
)
from ..models.base import KafkaMessage, KafkaResponse
from ..models.classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..models.consumer import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from ..models.coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from ..models.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from ..models.offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from ..models.topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)

# The Lambda functions. Group membership is the hot path (heartbeats): kept apart so that it
# scales and is billed alone. The admin function also answers the API's $default route (404).
MEMBERSHIP = "membership"
OFFSETS = "offsets"
ADMIN = "admin"
DEFAULT_ROUTE_FUNCTION = ADMIN

# (request, ApiContext) -> a Kafka response, or service.handlers_types.Accepted (a 202).
Handler = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Api:
    name: str
    request: type[KafkaMessage]
    response: type[KafkaResponse]
    function: str
    # "module:function" under groupcoord.service.
    service: str
    # Kafka's message and the version whose JSON form the API speaks.
    kafka: str
    # join-group and sync-group may answer 202 "registered, not complete" (classic-protocol.md).
    may_answer_accepted: bool = False

    def handler(self) -> Handler:
        module, _, name = self.service.partition(":")
        return getattr(importlib.import_module(f"groupcoord.service.{module}"), name)


APIS: tuple[Api, ...] = (
    Api("find-coordinator", FindCoordinatorRequest, FindCoordinatorResponse, ADMIN,
        "coordinator:find_coordinator", "FindCoordinator v6"),
    Api("join-group", JoinGroupRequest, JoinGroupResponse, MEMBERSHIP,
        "classic.join:join_group", "JoinGroup v9", may_answer_accepted=True),
    Api("sync-group", SyncGroupRequest, SyncGroupResponse, MEMBERSHIP,
        "classic.sync:sync_group", "SyncGroup v5", may_answer_accepted=True),
    Api("heartbeat", HeartbeatRequest, HeartbeatResponse, MEMBERSHIP,
        "classic.heartbeat:heartbeat", "Heartbeat v4"),
    Api("leave-group", LeaveGroupRequest, LeaveGroupResponse, MEMBERSHIP,
        "classic.leave:leave_group", "LeaveGroup v5"),
    Api("consumer-group-heartbeat", ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse, MEMBERSHIP,
        "consumer.heartbeat:consumer_group_heartbeat", "ConsumerGroupHeartbeat v1"),
    Api("offset-commit", OffsetCommitRequest, OffsetCommitResponse, OFFSETS,
        "offsets:offset_commit", "OffsetCommit v10"),
    Api("offset-fetch", OffsetFetchRequest, OffsetFetchResponse, OFFSETS,
        "offsets:offset_fetch", "OffsetFetch v10"),
    Api("offset-delete", OffsetDeleteRequest, OffsetDeleteResponse, OFFSETS,
        "offsets:offset_delete", "OffsetDelete v0"),
    Api("metadata", MetadataRequest, MetadataResponse, ADMIN, "topics:metadata", "Metadata v13"),
    Api("list-groups", ListGroupsRequest, ListGroupsResponse, ADMIN, "groups:list_groups",
        "ListGroups v5"),
    Api("describe-groups", DescribeGroupsRequest, DescribeGroupsResponse, ADMIN,
        "classic.describe:describe_groups", "DescribeGroups v6"),
    Api("consumer-group-describe", ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse, ADMIN, "consumer.describe:consumer_group_describe",
        "ConsumerGroupDescribe v1"),
    Api("delete-groups", DeleteGroupsRequest, DeleteGroupsResponse, ADMIN,
        "group_admin:delete_groups", "DeleteGroups v3"),
    Api("create-topics", CreateTopicsRequest, CreateTopicsResponse, ADMIN,
        "topics:create_topics", "CreateTopics v7"),
    Api("create-partitions", CreatePartitionsRequest, CreatePartitionsResponse, ADMIN,
        "topics:create_partitions", "CreatePartitions v3"),
    Api("delete-topics", DeleteTopicsRequest, DeleteTopicsResponse, ADMIN,
        "topics:delete_topics", "DeleteTopics v6"),
    Api("create-acls", CreateAclsRequest, CreateAclsResponse, ADMIN, "acls:create_acls",
        "CreateAcls v3"),
    Api("describe-acls", DescribeAclsRequest, DescribeAclsResponse, ADMIN,
        "acls:describe_acls", "DescribeAcls v3"),
    Api("delete-acls", DeleteAclsRequest, DeleteAclsResponse, ADMIN, "acls:delete_acls",
        "DeleteAcls v3"),
)  # fmt: skip

API_BY_NAME: dict[str, Api] = {api.name: api for api in APIS}
# The kebab-case names (POST /v1/<name>); a name outside this list is answered 404.
API_NAMES: tuple[str, ...] = tuple(API_BY_NAME)
API_FUNCTION: dict[str, str] = {api.name: api.function for api in APIS}
FUNCTION_APIS: dict[str, tuple[str, ...]] = {
    function: tuple(api.name for api in APIS if api.function == function)
    for function in (MEMBERSHIP, OFFSETS, ADMIN)
}
