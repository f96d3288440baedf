"""describe-group-activity: a groupcoord extension (no Kafka message) for monitoring tools such
as `groupcoord dashboard`. What Kafka's describe APIs leave out: when each member was last heard
from and when its session ends, the partitions pending revocation and the target, and when
each offset was last committed.

Two shapes in one API so that a dashboard pays for what it shows: a summary of up to 100
groups (the group item only: one read each), or one group in detail (`includeMembers`: its
members, a partition grid and its committed offsets)."""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from . import limits
from .base import GroupId, Int16, Int32, Int64, KafkaMessage, KafkaResponse

# One detailed group per request: its reads grow with its members and partitions.
ACTIVITY_DETAILED_GROUPS_MAX = 1
# The most grid cells (partitions) one answer carries: a bounded answer whatever the group.
ACTIVITY_PARTITIONS_MAX = 2000


class DescribeGroupActivityRequest(KafkaMessage):
    group_ids: list[GroupId] = Field(
        max_length=limits.GROUPS_PER_REQUEST_MAX, description="The groups to describe."
    )
    include_members: bool = Field(
        False,
        description="Also read the members, the partition grid and the committed offsets; "
        f"for at most {ACTIVITY_DETAILED_GROUPS_MAX} group per request.",
    )

    @field_validator("include_members")
    @classmethod
    def _one_detailed_group(cls, value: bool, info: ValidationInfo) -> bool:
        if value and len(info.data.get("group_ids") or ()) > ACTIVITY_DETAILED_GROUPS_MAX:
            raise ValueError(f"applies to at most {ACTIVITY_DETAILED_GROUPS_MAX} group per request")
        return value


class ActivityTasks(KafkaMessage):
    subtopology_id: str
    partitions: list[Int32] = []


class ActivityMember(KafkaMessage):
    member_id: str
    instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    principal: str | None = Field(None, description="The principal that created the member.")
    protocol: str = Field(
        "consumer", description="The protocol the member speaks: consumer, classic or streams."
    )
    member_epoch: Int32 = Field(
        -1,
        description="Consumer protocol: the member epoch. Classic: the last generation the "
        "member completed a join in (-1: none yet).",
    )
    member_state: str = Field(
        "",
        description="Consumer protocol: STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS. "
        "Classic: Stable, AwaitingJoin, AwaitingSync, MustRejoin, Pending.",
    )
    last_heartbeat_ms: Int64 = Field(
        -1,
        description="When the member's session was last renewed (ms): its session deadline "
        "less its session length and renewal slack. A heartbeat renews it only when it is "
        "less than a session away (groupcoord.session.renewal.skips), so this lags the last "
        "heartbeat by up to that many heartbeat intervals.",
    )
    session_deadline_ms: Int64 = Field(
        -1, description="When the member is dead unless heard from again (ms)."
    )
    subscribed_topic_names: list[str] = []
    subscribed_topic_regex: str | None = None
    process_id: str | None = Field(None, description="Streams: the member's process.")
    active_tasks: list[ActivityTasks] | None = Field(
        None, description="Streams: the member's tasks by role (subtopologyId, partitions)."
    )
    standby_tasks: list[ActivityTasks] | None = None
    warmup_tasks: list[ActivityTasks] | None = None


class ActivityPartition(KafkaMessage):
    topic_name: str = Field("", description="Empty for a deleted topic.")
    topic_id: str = ""
    partition_index: Int32
    owner: str | None = Field(None, description="The member that holds the partition.")
    revoking_member: str | None = Field(
        None, description="Consumer protocol: the member that still has to revoke it."
    )
    target_member: str | None = Field(
        None, description="Consumer protocol: the member the installed target gives it to."
    )
    lag_ms: Int64 | None = Field(
        None,
        description="How far behind its holder last said it was (ms; the partitionLags of "
        "its heartbeats, kept at band changes and session renewals); null when not reported.",
    )
    committed_offset: Int64 = -1
    commit_timestamp_ms: Int64 = Field(-1, description="When it was last committed (ms).")


class ActivityRebalance(KafkaMessage):
    epoch: Int32 = Field(description="The group epoch (classic: the generation) moved to.")
    at_ms: Int64 = Field(description="When, on the coordinator's clock (ms).")
    cause: str = Field(
        description="join (more members than at the move before), leave (fewer: a leave or "
        "an expired session), topic change (a subscribed topic changed: consumer and streams "
        "groups), member update (the same members: a subscription, protocols, a rejoin)."
    )
    member_count: Int32 = Field(description="The members after the move.")


class ActivityGroup(KafkaMessage):
    error_code: Int16 = 0
    error_message: str | None = None
    group_id: str
    group_type: str = Field("", description="classic, consumer or streams.")
    group_state: str = Field(
        "",
        description="As stored: a timer that is due (an expired member) shows once a request "
        "or the sweeper has run it; this API only reads.",
    )
    protocol_type: str = ""
    protocol_name: str = Field(
        "", description="Classic: the selected protocol. Consumer: the server assignor."
    )
    member_count: Int32 = 0
    epoch: Int32 = Field(0, description="Classic: the generation. Consumer: the group epoch.")
    assignment_epoch: Int32 = Field(
        0, description="Consumer: the epoch of the installed target. Classic: the generation."
    )
    created_at_ms: Int64 = 0
    recent_rebalances: list[ActivityRebalance] = Field(
        [],
        description="The group's last epoch (classic: generation) moves as the coordinator "
        f"recorded them with each move, oldest first, at most {limits.REBALANCES_KEPT}.",
    )
    subscribed_topics: list[str] = []
    members: list[ActivityMember] = Field([], description="With includeMembers only.")
    partitions: list[ActivityPartition] = Field(
        [],
        description="With includeMembers only: the subscribed topics' partitions and any "
        "other partition with a committed offset, in (topic, partition) order, at most "
        f"{ACTIVITY_PARTITIONS_MAX}.",
    )
    partitions_truncated: bool = Field(
        False, description=f"More than {ACTIVITY_PARTITIONS_MAX} partitions: the rest left out."
    )


class DescribeGroupActivityResponse(KafkaResponse):
    now_ms: Int64 = Field(0, description="The coordinator's clock at the answer (ms).")
    groups: list[ActivityGroup] = []
