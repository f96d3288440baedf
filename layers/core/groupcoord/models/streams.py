"""Streams groups (KIP-1071): streams-group-heartbeat (Kafka StreamsGroupHeartbeat v0) and
streams-group-describe (StreamsGroupDescribe v0), docs/streams.md.

Every list is bounded (models/limits.py): a topology, its topics and a member's tasks stay
far below one DynamoDB item and one request's cost.
"""

from __future__ import annotations

from typing import Self

from pydantic import Field, model_validator

from . import limits
from .base import (
    UNKNOWN_AUTHORIZED_OPERATIONS,
    GroupId,
    InstanceId,
    Int16,
    Int32,
    Int64,
    KafkaMessage,
    KafkaResponse,
    MemberHeartbeatResponse,
    MemberId,
    NonNegativeInt32,
    Port,
    RackId,
    TopicName,
    TopicRegex,
    bounded,
)

SubtopologyId = bounded(limits.SUBTOPOLOGY_ID_MAX_CHARS)
ProcessId = bounded(limits.PROCESS_ID_MAX_CHARS)
Host = bounded(limits.ENDPOINT_HOST_MAX_CHARS)
TagText = bounded(limits.CLIENT_TAG_MAX_CHARS)
ConfigName = bounded(limits.CONFIG_NAME_MAX_CHARS)
ConfigValue = bounded(limits.CONFIG_VALUE_MAX_CHARS)

# --- the topology ---


class StreamsTopicConfig(KafkaMessage):
    key: ConfigName
    value: ConfigValue


class StreamsTopicInfo(KafkaMessage):
    name: TopicName
    partitions: Int32 = Field(
        0,
        description="0 = the coordinator decides (always 0 for a changelog); described: a "
        "ready group's configured count.",
    )
    replication_factor: Int16 = Field(0, description="0 = the coordinator's default.")
    topic_configs: list[StreamsTopicConfig] = Field([], max_length=limits.CONFIGS_PER_TOPIC_MAX)


class StreamsCopartitionGroup(KafkaMessage):
    """Indexes into the sub-topology's own lists of topics that must be co-partitioned."""

    source_topics: list[Int16] = Field([], max_length=limits.TOPOLOGY_TOPICS_MAX)
    source_topic_regex: list[Int16] = Field([], max_length=limits.TOPOLOGY_TOPICS_MAX)
    repartition_source_topics: list[Int16] = Field([], max_length=limits.TOPOLOGY_TOPICS_MAX)


class StreamsSubtopology(KafkaMessage):
    subtopology_id: SubtopologyId
    source_topics: list[TopicName] = Field([], max_length=limits.TOPOLOGY_TOPICS_MAX)
    source_topic_regex: list[TopicRegex] = Field([], max_length=limits.TOPOLOGY_REGEXES_MAX)
    state_changelog_topics: list[StreamsTopicInfo] = Field(
        [], max_length=limits.TOPOLOGY_TOPICS_MAX
    )
    repartition_sink_topics: list[TopicName] = Field([], max_length=limits.TOPOLOGY_TOPICS_MAX)
    repartition_source_topics: list[StreamsTopicInfo] = Field(
        [], max_length=limits.TOPOLOGY_TOPICS_MAX
    )
    copartition_groups: list[StreamsCopartitionGroup] = Field(
        [], max_length=limits.TOPOLOGY_TOPICS_MAX
    )


class StreamsTopology(KafkaMessage):
    epoch: NonNegativeInt32
    subtopologies: list[StreamsSubtopology] = Field(
        [],
        max_length=limits.SUBTOPOLOGIES_MAX,
        description=f"At most {limits.TOPOLOGY_MAX_CHARS} characters of names, regexes and "
        "configs in all.",
    )

    @model_validator(mode="after")
    def _fits(self) -> Self:
        # The group's topology is kept in one item (limits.py).
        total = sum(_chars(s) for s in self.subtopologies)
        if total > limits.TOPOLOGY_MAX_CHARS:
            raise ValueError(
                f"subtopologies: {total} characters of names, regexes and configs in all; the "
                f"limit is {limits.TOPOLOGY_MAX_CHARS}"
            )
        return self


def _info_chars(t: StreamsTopicInfo) -> int:
    return len(t.name) + sum(len(c.key) + len(c.value) for c in t.topic_configs)


def _chars(s: StreamsSubtopology) -> int:
    return (
        len(s.subtopology_id)
        + sum(map(len, s.source_topics))
        + sum(map(len, s.source_topic_regex))
        + sum(map(len, s.repartition_sink_topics))
        + sum(_info_chars(t) for t in (*s.state_changelog_topics, *s.repartition_source_topics))
    )


# --- a member's tasks, offsets, endpoint and tags ---


class StreamsTaskIds(KafkaMessage):
    subtopology_id: SubtopologyId
    partitions: list[Int32] = Field([], max_length=limits.TOPIC_PARTITIONS_DEFAULT_MAX)


class StreamsTaskOffset(KafkaMessage):
    subtopology_id: SubtopologyId
    partition: Int32
    offset: Int64


class StreamsEndpoint(KafkaMessage):
    host: Host
    port: Port


class StreamsKeyValue(KafkaMessage):
    key: TagText
    value: TagText


class StreamsGroupHeartbeatRequest(KafkaMessage):
    group_id: GroupId
    member_id: MemberId = Field(description="Chosen by the client, kept for the process's life.")
    member_epoch: Int32 = Field(
        description="0 to join, -1 to leave, -2 for a static member leaving temporarily; "
        "else the member's current epoch."
    )
    endpoint_information_epoch: Int32 = 0
    instance_id: InstanceId | None = Field(None, description="null = not static or unchanged.")
    rack_id: RackId | None = Field(None, description="null = unchanged.")
    rebalance_timeout_ms: Int32 = Field(-1, description="-1 = unchanged.")
    topology: StreamsTopology | None = Field(None, description="Only when joining (epoch 0).")
    active_tasks: list[StreamsTaskIds] | None = Field(
        None, max_length=limits.SUBTOPOLOGIES_MAX, description="null = unchanged."
    )
    standby_tasks: list[StreamsTaskIds] | None = Field(
        None, max_length=limits.SUBTOPOLOGIES_MAX, description="null = unchanged."
    )
    warmup_tasks: list[StreamsTaskIds] | None = Field(
        None, max_length=limits.SUBTOPOLOGIES_MAX, description="null = unchanged."
    )
    process_id: ProcessId | None = Field(None, description="null = unchanged.")
    user_endpoint: StreamsEndpoint | None = Field(None, description="null = unchanged.")
    client_tags: list[StreamsKeyValue] | None = Field(
        None, max_length=limits.CLIENT_TAGS_MAX, description="null = unchanged."
    )
    task_offsets: list[StreamsTaskOffset] | None = Field(
        None, max_length=limits.TASK_OFFSETS_MAX, description="Cumulative changelog offsets."
    )
    task_end_offsets: list[StreamsTaskOffset] | None = Field(
        None, max_length=limits.TASK_OFFSETS_MAX, description="The changelogs' end offsets."
    )
    shutdown_application: bool = False


class StreamsStatus(KafkaMessage):
    status_code: Int16 = Field(
        description="0 STALE_TOPOLOGY, 1 MISSING_SOURCE_TOPICS, 2 INCORRECTLY_PARTITIONED_TOPICS, "
        "3 MISSING_INTERNAL_TOPICS, 4 SHUTDOWN_APPLICATION, 5 ASSIGNMENT_DELAYED."
    )
    status_detail: str = ""


class StreamsTopicPartitions(KafkaMessage):
    topic: str
    partitions: list[Int32] = []


class StreamsEndpointToPartitions(KafkaMessage):
    user_endpoint: StreamsEndpoint
    active_partitions: list[StreamsTopicPartitions] = []
    standby_partitions: list[StreamsTopicPartitions] = []


class StreamsGroupHeartbeatResponse(MemberHeartbeatResponse):
    acceptable_recovery_lag: Int32 = 0
    task_offset_interval_ms: Int32 = 0
    status: list[StreamsStatus] | None = None
    active_tasks: list[StreamsTaskIds] | None = Field(None, description="null = unchanged.")
    standby_tasks: list[StreamsTaskIds] | None = Field(None, description="null = unchanged.")
    warmup_tasks: list[StreamsTaskIds] | None = Field(None, description="null = unchanged.")
    endpoint_information_epoch: Int32 = 0
    partitions_by_user_endpoint: list[StreamsEndpointToPartitions] | None = None


# --- streams-group-describe ---


class StreamsGroupDescribeRequest(KafkaMessage):
    group_ids: list[GroupId] = Field(max_length=limits.GROUPS_PER_REQUEST_MAX)
    include_authorized_operations: bool = False


class StreamsDescribedAssignment(KafkaMessage):
    active_tasks: list[StreamsTaskIds] = []
    standby_tasks: list[StreamsTaskIds] = []
    warmup_tasks: list[StreamsTaskIds] = []


class StreamsDescribedMember(KafkaMessage):
    member_id: str
    member_epoch: Int32 = 0
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    topology_epoch: Int32 = 0
    process_id: str = ""
    user_endpoint: StreamsEndpoint | None = None
    client_tags: list[StreamsKeyValue] = []
    task_offsets: list[StreamsTaskOffset] = []
    task_end_offsets: list[StreamsTaskOffset] = []
    assignment: StreamsDescribedAssignment = Field(default_factory=StreamsDescribedAssignment)
    target_assignment: StreamsDescribedAssignment = Field(
        default_factory=StreamsDescribedAssignment
    )
    is_classic: bool = False


class StreamsDescribedSubtopology(KafkaMessage):
    subtopology_id: str
    source_topics: list[str] = []
    repartition_sink_topics: list[str] = []
    state_changelog_topics: list[StreamsTopicInfo] = []
    repartition_source_topics: list[StreamsTopicInfo] = []


class StreamsDescribedTopology(KafkaMessage):
    epoch: Int32 = 0
    subtopologies: list[StreamsDescribedSubtopology] | None = None


class StreamsGroupDescribedGroup(KafkaMessage):
    error_code: Int16 = 0
    error_message: str | None = None
    group_id: str
    group_state: str = Field("", description="Empty, NotReady, Assigning, Reconciling or Stable.")
    group_epoch: Int32 = 0
    assignment_epoch: Int32 = 0
    topology: StreamsDescribedTopology | None = None
    members: list[StreamsDescribedMember] = []
    authorized_operations: Int32 = UNKNOWN_AUTHORIZED_OPERATIONS


class StreamsGroupDescribeResponse(KafkaResponse):
    groups: list[StreamsGroupDescribedGroup] = []
