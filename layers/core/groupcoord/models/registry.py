"""Every API of the HTTP contract (docs/openapi.json): its request and response messages."""

from __future__ import annotations

from dataclasses import dataclass

from .base import KafkaMessage, KafkaResponse
from .classic import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from .consumer import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from .coordinator import FindCoordinatorRequest, FindCoordinatorResponse
from .groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from .offsets import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from .topics import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    MetadataRequest,
    MetadataResponse,
)


@dataclass(frozen=True)
class ApiMessages:
    name: str
    request: type[KafkaMessage]
    response: type[KafkaResponse]
    # join-group and sync-group may answer 202 "registered, not complete" (classic-protocol.md).
    may_answer_accepted: bool = False


_ALL = [
    ApiMessages("find-coordinator", FindCoordinatorRequest, FindCoordinatorResponse),
    ApiMessages("join-group", JoinGroupRequest, JoinGroupResponse, may_answer_accepted=True),
    ApiMessages("sync-group", SyncGroupRequest, SyncGroupResponse, may_answer_accepted=True),
    ApiMessages("heartbeat", HeartbeatRequest, HeartbeatResponse),
    ApiMessages("leave-group", LeaveGroupRequest, LeaveGroupResponse),
    ApiMessages(
        "consumer-group-heartbeat", ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
    ),
    ApiMessages("offset-commit", OffsetCommitRequest, OffsetCommitResponse),
    ApiMessages("offset-fetch", OffsetFetchRequest, OffsetFetchResponse),
    ApiMessages("offset-delete", OffsetDeleteRequest, OffsetDeleteResponse),
    ApiMessages("metadata", MetadataRequest, MetadataResponse),
    ApiMessages("list-groups", ListGroupsRequest, ListGroupsResponse),
    ApiMessages("describe-groups", DescribeGroupsRequest, DescribeGroupsResponse),
    ApiMessages(
        "consumer-group-describe", ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
    ),
    ApiMessages("delete-groups", DeleteGroupsRequest, DeleteGroupsResponse),
    ApiMessages("create-topics", CreateTopicsRequest, CreateTopicsResponse),
    ApiMessages("create-partitions", CreatePartitionsRequest, CreatePartitionsResponse),
    ApiMessages("delete-topics", DeleteTopicsRequest, DeleteTopicsResponse),
]

API_MESSAGES: dict[str, ApiMessages] = {api.name: api for api in _ALL}

# The kebab-case API names (POST /v1/<name>); a name outside this list is answered 404.
API_NAMES: tuple[str, ...] = (
    "find-coordinator",
    "join-group",
    "sync-group",
    "heartbeat",
    "leave-group",
    "consumer-group-heartbeat",
    "offset-commit",
    "offset-fetch",
    "offset-delete",
    "metadata",
    "list-groups",
    "describe-groups",
    "consumer-group-describe",
    "delete-groups",
    "create-topics",
    "create-partitions",
    "delete-topics",
)
