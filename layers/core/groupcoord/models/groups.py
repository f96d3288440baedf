"""Group admin APIs: list-groups (Kafka ListGroups v5), describe-groups (DescribeGroups v6) and
delete-groups (DeleteGroups v3)."""

from __future__ import annotations

from pydantic import Field

from . import limits
from .base import (
    UNKNOWN_AUTHORIZED_OPERATIONS,
    Base64Bytes,
    GroupId,
    Int16,
    Int32,
    KafkaMessage,
    KafkaResponse,
    bounded,
)


class ListGroupsRequest(KafkaMessage):
    states_filter: list[bounded(limits.STATE_OR_TYPE_MAX_CHARS)] = Field(  # type: ignore[valid-type]
        [],
        max_length=limits.FILTERS_MAX,
        description="Group states to include (case-insensitive); [] = all.",
    )
    types_filter: list[bounded(limits.STATE_OR_TYPE_MAX_CHARS)] = Field(  # type: ignore[valid-type]
        [],
        max_length=limits.FILTERS_MAX,
        description="Group types to include: classic, consumer; [] = all.",
    )
    limit: int = Field(
        1000,
        ge=1,
        le=1000,
        description="groupcoord extension (paging): the most groups this answer reads, 1 to "
        "1000. The filters apply to the groups read, so with filters an answer may hold fewer "
        "groups, even none, and still have a nextCursor. For a caller whose listing the ACLs "
        "filter (no DESCRIBE on the cluster), the most groups it answers: it reads on past "
        "the groups the caller may not see (and the filters leave out).",
    )
    cursor: str | None = Field(
        None,
        min_length=1,
        max_length=8192,
        description="groupcoord extension (paging): the nextCursor of the previous answer, "
        "opaque; null starts the listing. Any other string is refused (400), and so is a "
        "sealed cursor (one handed to a caller whose listing is filtered by the ACLs) sent by "
        "another principal or over an hour old, and a plain cursor sent by a caller whose "
        "listing the ACLs filter.",
    )


class ListedGroup(KafkaMessage):
    group_id: str
    protocol_type: str = ""
    group_state: str = ""
    group_type: str = ""


class ListGroupsResponse(KafkaResponse):
    error_code: Int16 = 0
    groups: list[ListedGroup] = Field(
        [], description="In group id order, across the pages of one listing too."
    )
    next_cursor: str | None = Field(
        None,
        description="groupcoord extension (paging): send it as `cursor` for the next answer; "
        "null when this answer completes the listing.",
    )


# --- describe-groups (Kafka DescribeGroups v6) ---


class DescribeGroupsRequest(KafkaMessage):
    groups: list[GroupId] = Field(
        max_length=limits.GROUPS_PER_REQUEST_MAX, description="The group ids to describe."
    )
    include_authorized_operations: bool = False


class DescribedGroupMember(KafkaMessage):
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = Field("", description="The caller's source address at its last join.")
    principal: str | None = Field(
        None,
        description="groupcoord extension: the principal that created the member (only it may "
        "act as the member while the authorizer is on); null when not recorded.",
    )
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
    groups_names: list[GroupId] = Field(
        max_length=limits.GROUPS_PER_REQUEST_MAX, description="The group ids to delete."
    )


class DeletableGroupResult(KafkaMessage):
    group_id: str
    error_code: Int16 = 0
    error_message: str | None = None


class DeleteGroupsResponse(KafkaResponse):
    results: list[DeletableGroupResult] = []
