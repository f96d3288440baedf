"""Classic group protocol: join-group (Kafka JoinGroup v9), sync-group (SyncGroup v5),
heartbeat (Heartbeat v4) and leave-group (LeaveGroup v5), with groupcoord's heartbeat extension
to join-group (API.md "Extensions to Kafka's messages").
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import Base64Bytes, Int16, Int32, KafkaMessage, KafkaResponse

# A positive Int32: the join-group extensions divide by it.
PositiveInt32 = Annotated[int, Field(ge=1, le=2**31 - 1)]


# --- join-group ---


class JoinGroupRequestProtocol(KafkaMessage):
    name: str = Field(description="The protocol name (for consumers: the assignor name).")
    metadata: Base64Bytes = Field(
        b"", description="The protocol metadata (for consumers: a ConsumerProtocol Subscription)."
    )


class JoinGroupRequest(KafkaMessage):
    group_id: str
    session_timeout_ms: Int32 = 0
    rebalance_timeout_ms: Int32 = Field(
        -1, description="-1 (the default) means the session timeout, as in Kafka."
    )
    member_id: str = Field("", description="Empty on the first join of a dynamic member.")
    group_instance_id: str | None = Field(None, description="Set for a static member.")
    protocol_type: str = ""
    protocols: list[JoinGroupRequestProtocol] = []
    reason: str | None = None
    heartbeat_frequency: PositiveInt32 = Field(
        3,
        description="groupcoord extension: heartbeats per session timeout; "
        "heartbeatIntervalMs = sessionTimeoutMs / heartbeatFrequency.",
    )
    failed_heartbeat_threshold: PositiveInt32 = Field(
        3,
        description="groupcoord extension: the member is dead after "
        "failedHeartbeatThreshold * sessionTimeoutMs / heartbeatFrequency ms of silence.",
    )


class JoinGroupResponseMember(KafkaMessage):
    member_id: str
    group_instance_id: str | None = None
    metadata: Base64Bytes = b""


class JoinGroupResponse(KafkaResponse):
    error_code: Int16 = 0
    generation_id: Int32 = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = Field("", description="The member id of the group leader.")
    skip_assignment: bool = Field(
        False, description="True if the leader must not run the assignment (static rejoin)."
    )
    member_id: str = ""
    members: list[JoinGroupResponseMember] = Field(
        [], description="Every member with its metadata; only in the leader's response."
    )
    heartbeat_interval_ms: Int32 = Field(
        0,
        description="groupcoord extension: sessionTimeoutMs / heartbeatFrequency, rounded down.",
    )


# --- sync-group ---


class SyncGroupRequestAssignment(KafkaMessage):
    member_id: str
    assignment: Base64Bytes = Field(
        b"", description="The member's assignment (for consumers: a ConsumerProtocol Assignment)."
    )


class SyncGroupRequest(KafkaMessage):
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[SyncGroupRequestAssignment] = Field(
        [], description="The leader's assignment of every member; [] from followers."
    )


class SyncGroupResponse(KafkaResponse):
    error_code: Int16 = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: Base64Bytes = b""


# --- heartbeat ---


class HeartbeatRequest(KafkaMessage):
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None


class HeartbeatResponse(KafkaResponse):
    error_code: Int16 = 0


# --- leave-group ---


class LeaveGroupMemberIdentity(KafkaMessage):
    member_id: str = Field("", description="Empty with a groupInstanceId: an admin removal.")
    group_instance_id: str | None = None
    reason: str | None = None


class LeaveGroupRequest(KafkaMessage):
    group_id: str
    members: list[LeaveGroupMemberIdentity] = []


class LeaveGroupMemberResponse(KafkaMessage):
    member_id: str = ""
    group_instance_id: str | None = None
    error_code: Int16 = 0


class LeaveGroupResponse(KafkaResponse):
    error_code: Int16 = 0
    members: list[LeaveGroupMemberResponse] = []
