"""find-coordinator (Kafka FindCoordinator v6) with groupcoord's endpoint extension."""

from __future__ import annotations

from pydantic import Field

from . import limits
from .base import GroupId, Int8, Int16, Int32, KafkaMessage, KafkaResponse


class FindCoordinatorRequest(KafkaMessage):
    key_type: Int8 = Field(0, description="0 = group; the only key type groupcoord serves.")
    coordinator_keys: list[GroupId] = Field(
        max_length=limits.GROUPS_PER_REQUEST_MAX,
        description="The group ids to find the coordinator of.",
    )


class Coordinator(KafkaMessage):
    key: str
    node_id: Int32 = 0
    host: str = ""
    port: Int32 = 0
    error_code: Int16 = 0
    error_message: str | None = None
    endpoint: str = Field(
        "", description="Base URL (without /v1) the client must use for this group."
    )
    coordinator_epoch: Int32 = Field(
        0, description="Grows each time the coordinator of the group moves."
    )
    push_url: str | None = Field(
        None,
        description="The push channel's WebSocket URL (docs/sessions.md, Push): a member "
        "connects to it with its groupId and memberId and heartbeats at once on each notice. "
        "Null when the coordinator offers no push channel.",
    )


class FindCoordinatorResponse(KafkaResponse):
    coordinators: list[Coordinator] = []
