"""Group admin APIs: list-groups (Kafka ListGroups v5), describe-groups (DescribeGroups v6) and
delete-groups (DeleteGroups v3)."""

from __future__ import annotations

from pydantic import Field

from .base import Base64Bytes, Int16, Int32, KafkaMessage, KafkaResponse
from .topics import UNKNOWN_AUTHORIZED_OPERATIONS


class ListGroupsRequest(KafkaMessage):
    states_filter: list[str] = Field(
        [], description="Group states to include (case-insensitive); [] = all."
    )
    types_filter: list[str] = Field(
        [], description="Group types to include: classic, consumer; [] = all."
    )


class ListedGroup(KafkaMessage):
    group_id: str
    protocol_type: str = ""
    group_state: str = ""
    group_type: str = ""


class ListGroupsResponse(KafkaResponse):
    error_code: Int16 = 0
    groups: list[ListedGroup] = []


# --- describe-groups (Kafka DescribeGroups v6) ---


class DescribeGroupsRequest(KafkaMessage):
    groups: list[str] = Field(description="The group ids to describe.")
    include_authorized_operations: bool = False


class DescribedGroupMember(KafkaMessage):
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = Field("", description="The caller's source address at its last join.")
    member_metadata: Base64Bytes = Field(
        b"", description="The member's metadata for the group's protocol."
    )
    member_assignment: Base64Bytes = Field(
        b"", description="The member's assignment from the leader."
    )


class DescribedGroup(KafkaMessage):
    error_code: Int16 = 0
    error_message: str | None = None
    group_id: str
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = Field(
        "", description="The selected protocol name (the assignor, for consumers)."
    )
    members: list[DescribedGroupMember] = []
    authorized_operations: Int32 = UNKNOWN_AUTHORIZED_OPERATIONS


class DescribeGroupsResponse(KafkaResponse):
    groups: list[DescribedGroup] = []


# --- delete-groups (Kafka DeleteGroups v3) ---


class DeleteGroupsRequest(KafkaMessage):
    groups_names: list[str] = Field(description="The group ids to delete.")


class DeletableGroupResult(KafkaMessage):
    group_id: str
    error_code: Int16 = 0
    error_message: str | None = None


class DeleteGroupsResponse(KafkaResponse):
    results: list[DeletableGroupResult] = []
