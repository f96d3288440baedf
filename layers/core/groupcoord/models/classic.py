"""Classic group protocol: join-group (Kafka JoinGroup v9), sync-group (SyncGroup v5),
heartbeat (Heartbeat v4) and leave-group (LeaveGroup v5), with groupcoord's heartbeat extension
to join-group (docs/classic-protocol.md, "Failure detection").
"""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, model_validator

from . import limits
from .base import (
    Base64Bytes,
    GroupId,
    InstanceId,
    Int16,
    Int32,
    KafkaMessage,
    KafkaResponse,
    MemberId,
    ProtocolName,
    Reason,
    base64_bytes,
)
from .lags import (
    PARTITION_LAGS_DESCRIPTION,
    PartitionLagsField,
    check_lags_bound,
    reported,
)

# A positive Int32: the join-group extensions divide by it.
PositiveInt32 = Annotated[int, Field(ge=1, le=2**31 - 1)]


# --- join-group ---


class JoinGroupRequestProtocol(KafkaMessage):
    name: ProtocolName = Field(
        min_length=1, description="The protocol name (for consumers: the assignor name)."
    )
    metadata: base64_bytes(limits.PROTOCOL_METADATA_MAX_BYTES) = Field(  # type: ignore[valid-type]
        b"", description="The protocol metadata (for consumers: a ConsumerProtocol Subscription)."
    )


class JoinGroupRequest(KafkaMessage):
    group_id: GroupId
    session_timeout_ms: Int32 = 0
    rebalance_timeout_ms: Int32 = Field(
        -1, description="-1 (the default) means the session timeout, as in Kafka."
    )
    member_id: MemberId = Field("", description="Empty on the first join of a dynamic member.")
    group_instance_id: InstanceId | None = Field(None, description="Set for a static member.")
    protocol_type: ProtocolName = ""
    protocols: list[JoinGroupRequestProtocol] = Field(
        [],
        max_length=limits.PROTOCOLS_PER_JOIN_MAX,
        description=f"At most {limits.JOIN_METADATA_TOTAL_MAX_BYTES} bytes of metadata in all.",
    )
    reason: Reason | None = None
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

    @model_validator(mode="after")
    def _metadata_fits(self) -> Self:
        # Every protocol's metadata lands on one payload item (limits.py).
        total = sum(len(p.metadata) for p in self.protocols)
        if total > limits.JOIN_METADATA_TOTAL_MAX_BYTES:
            raise ValueError(
                f"protocols: {total} bytes of metadata in all; the limit is "
                f"{limits.JOIN_METADATA_TOTAL_MAX_BYTES}"
            )
        return self


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
    member_id: MemberId
    assignment: base64_bytes(limits.ASSIGNMENT_MAX_BYTES) = Field(  # type: ignore[valid-type]
        b"", description="The member's assignment (for consumers: a ConsumerProtocol Assignment)."
    )


class SyncGroupRequest(KafkaMessage):
    group_id: GroupId
    generation_id: Int32
    member_id: MemberId
    group_instance_id: InstanceId | None = None
    protocol_type: ProtocolName | None = None
    protocol_name: ProtocolName | None = None
    assignments: list[SyncGroupRequestAssignment] = Field(
        [],
        max_length=limits.SYNC_ASSIGNMENTS_MAX,
        description="The leader's assignment of every member; [] from followers.",
    )


class SyncGroupResponse(KafkaResponse):
    error_code: Int16 = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: Base64Bytes = b""


# --- heartbeat ---


class HeartbeatRequest(KafkaMessage):
    group_id: GroupId
    generation_id: Int32
    member_id: MemberId
    group_instance_id: InstanceId | None = None
    partition_lags: PartitionLagsField = Field(None, description=PARTITION_LAGS_DESCRIPTION)

    @model_validator(mode="after")
    def _lags_bounded(self) -> Self:
        check_lags_bound(self.partition_lags)
        return self

    def reported_lags(self) -> list[tuple[str, int, int]] | None:
        return reported(self.partition_lags)


class HeartbeatResponse(KafkaResponse):
    error_code: Int16 = 0


# --- leave-group ---


class LeaveGroupMemberIdentity(KafkaMessage):
    member_id: MemberId = Field("", description="Empty with a groupInstanceId: an admin removal.")
    group_instance_id: InstanceId | None = None
    reason: Reason | None = None


class LeaveGroupRequest(KafkaMessage):
    group_id: GroupId
    members: list[LeaveGroupMemberIdentity] = Field([], max_length=limits.MEMBERS_PER_LEAVE_MAX)


class LeaveGroupMemberResponse(KafkaMessage):
    member_id: str = ""
    group_instance_id: str | None = None
    error_code: Int16 = 0


class LeaveGroupResponse(KafkaResponse):
    error_code: Int16 = 0
    members: list[LeaveGroupMemberResponse] = []
