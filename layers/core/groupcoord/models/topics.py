"""Topic registry APIs: metadata, create-topics, create-partitions, delete-topics.

groupcoord is not a broker: it keeps the registry of topics (name, id, partition count) that
groups subscribe to. Replica and leader fields are answered with this node (id 0) so that
Kafka-shaped clients can read the response.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from . import limits
from .base import (
    UNKNOWN_AUTHORIZED_OPERATIONS,
    Int16,
    Int32,
    Int64,
    KafkaMessage,
    KafkaResponse,
    TopicId,
    bounded,
)

# Topic names in the topic APIs: up to 249 characters are Kafka's legal names; longer ones (to
# this bound) get Kafka's in-band answer (17 INVALID_TOPIC_EXCEPTION, 3 UNKNOWN_TOPIC_OR_PARTITION).
AdminTopicName = bounded(limits.TOPIC_NAME_TO_CREATE_MAX_CHARS)
_PARTITIONS = limits.TOPIC_PARTITIONS_DEFAULT_MAX


# --- metadata (Kafka Metadata v13) ---


class MetadataRequestTopic(KafkaMessage):
    topic_id: TopicId | None = None
    name: AdminTopicName | None = None


class MetadataCursor(KafkaMessage):
    """A position in the metadata listing (groupcoord extension, after the cursor of Kafka's
    DescribeTopicPartitions, KIP-966): topics are answered in name order, each topic's
    partitions in index order."""

    topic_name: str = Field(
        min_length=1,
        max_length=limits.TOPIC_NAME_MAX_CHARS,
        pattern=r"^[a-zA-Z0-9._-]+$",
        description="The topic to start at; a topic that is gone is skipped.",
    )
    partition_index: int = Field(
        ge=0, le=2**31 - 1, description="The first partition of that topic to answer."
    )


class MetadataRequest(KafkaMessage):
    topics: list[MetadataRequestTopic] | None = Field(
        None, description="null, absent or [] returns every topic."
    )
    allow_auto_topic_creation: bool = Field(
        True, description="Accepted for compatibility; groupcoord never creates topics here."
    )
    include_topic_authorized_operations: bool = False
    response_partition_limit: int = Field(
        2000,
        ge=1,
        le=2000,
        description="groupcoord extension (paging, as Kafka's DescribeTopicPartitions): the "
        "most partitions this answer holds, 1 to 2000. A topic whose partitions do not fit is "
        "cut, and nextCursor says where to continue.",
    )
    group_id: bounded(limits.GROUP_ID_MAX_CHARS) | None = Field(  # type: ignore[valid-type]
        None,
        description="groupcoord extension (docs/kinesis.md): a classic group's leader names "
        "its group, and a Kinesis-backed topic's partitions are then only the shards "
        "assignable to that group (not done, every parent done), each with its lineage in "
        "kinesisShard. Needs DESCRIBE on the group (else errorCode 30).",
    )
    cursor: MetadataCursor | None = Field(
        None,
        description="groupcoord extension (paging): where this answer starts, the nextCursor "
        "of the previous answer; null starts at the first topic by name. With `topics`, the "
        "listed topics are answered once each, in name order (one asked for by topicId under "
        "its name); entries that name no topic (an unknown topicId, an illegal name, neither "
        "field, a topicId the caller may not describe) are answered on the first page, ahead "
        "of the others.",
    )


class MetadataResponseBroker(KafkaMessage):
    node_id: Int32
    host: str
    port: Int32
    rack: str | None = None


class KinesisHashKeyRange(KafkaMessage):
    starting_hash_key: str = Field(description="Decimal, as Kinesis gives it.")
    ending_hash_key: str = Field(description="Decimal, inclusive.")


class KinesisShard(KafkaMessage):
    """The shard a partition of a Kinesis-backed topic stands for (groupcoord extension)."""

    shard_id: str
    parent_shard_ids: list[str] = Field(
        description="Its parents: one after a split, two after a merge (parent, then adjacent "
        "parent), none for a shard the stream started with or whose parents expired."
    )
    hash_key_range: KinesisHashKeyRange
    starting_sequence_number: str
    closed: bool = Field(
        description="Split or merged: its records end at its ending sequence number, and its "
        "children carry on."
    )


class KinesisInitialPosition(KafkaMessage):
    """Where a group starts reading a shard it has no checkpoint in (groupcoord extension):
    create-topics' groupcoord.kinesis.initial.position, in GetShardIterator's terms. A child
    of a shard the group finished starts at TRIM_HORIZON whatever this says."""

    type: Literal["TRIM_HORIZON", "LATEST", "AT_TIMESTAMP"] = Field(
        description="GetShardIterator's ShardIteratorType for such a shard."
    )
    timestamp_ms: Int64 | None = Field(
        None,
        description="AT_TIMESTAMP's time, in milliseconds since the epoch (GetShardIterator's "
        "Timestamp). For LATEST in an answer to a metadata request with a groupId of a group "
        "that exists, the group's creation: where LATEST put the group's start (the shards "
        "closed before it are done for the group), so a member reads such a shard "
        "AT_TIMESTAMP of it and nothing put since the group started is skipped. Else null.",
    )


class MetadataResponsePartition(KafkaMessage):
    error_code: Int16 = 0
    partition_index: Int32
    leader_id: Int32 = 0
    leader_epoch: Int32 = -1
    replica_nodes: list[Int32] = []
    isr_nodes: list[Int32] = []
    offline_replicas: list[Int32] = []
    kinesis_shard: KinesisShard | None = Field(
        None,
        description="groupcoord extension: for a topic backed by a Kinesis data stream, the "
        "shard this partition stands for (a partition's shard never changes; indexes follow "
        "the shards' lineage: parents first). null for any other topic.",
    )


class MetadataResponseTopic(KafkaMessage):
    error_code: Int16 = 0
    name: str | None = None
    topic_id: TopicId | None = None
    is_internal: bool = False
    partitions: list[MetadataResponsePartition] = []
    topic_authorized_operations: Int32 = UNKNOWN_AUTHORIZED_OPERATIONS
    kinesis_stream_arn: str | None = Field(
        None,
        description="groupcoord extension: the Kinesis data stream whose shards are this "
        "topic's partitions (create-topics' groupcoord.kinesis.stream.arn); null for any other "
        "topic.",
    )
    kinesis_initial_position: KinesisInitialPosition | None = Field(
        None,
        description="groupcoord extension: for a topic backed by a Kinesis data stream, where a "
        "group starts reading a shard it has no checkpoint in (create-topics' "
        "groupcoord.kinesis.initial.position); null for any other topic.",
    )


class MetadataResponse(KafkaResponse):
    brokers: list[MetadataResponseBroker] = []
    cluster_id: str | None = None
    controller_id: Int32 = -1
    topics: list[MetadataResponseTopic] = []
    error_code: Int16 = 0
    next_cursor: MetadataCursor | None = Field(
        None,
        description="groupcoord extension (paging): send it as `cursor`, with the same "
        "`topics`, for the next answer; null when this answer completes the listing.",
    )


# --- create-topics (Kafka CreateTopics v7) ---


class CreatableReplicaAssignment(KafkaMessage):
    partition_index: Int32
    broker_ids: list[Int32] = Field([], max_length=limits.BROKER_IDS_MAX)


class CreatableTopicConfig(KafkaMessage):
    name: bounded(limits.CONFIG_NAME_MAX_CHARS)  # type: ignore[valid-type]
    value: bounded(limits.CONFIG_VALUE_MAX_CHARS) | None = None  # type: ignore[valid-type]


class CreatableTopic(KafkaMessage):
    name: AdminTopicName
    num_partitions: Int32 = Field(
        -1,
        description="-1 (the default here) uses num.partitions; a topic backed by a Kinesis "
        "stream (config groupcoord.kinesis.stream.arn) takes -1 only: its shards decide.",
    )
    replication_factor: Int16 = Field(
        -1, description="Recorded only; -1 (the default here) means the cluster default."
    )
    assignments: list[CreatableReplicaAssignment] = Field([], max_length=_PARTITIONS)
    configs: list[CreatableTopicConfig] = Field(
        [],
        max_length=limits.CONFIGS_PER_TOPIC_MAX,
        description="Topic configs: groupcoord.kinesis.stream.arn (a Kinesis data stream's "
        "ARN) backs the topic with that stream, its partitions the stream's shards, and "
        "groupcoord.kinesis.initial.position (TRIM_HORIZON, the default, LATEST, or "
        "AT_TIMESTAMP:<epoch ms>) says where a group with no checkpoint starts "
        "(docs/kinesis.md). Other configs are accepted and ignored.",
    )


class CreateTopicsRequest(KafkaMessage):
    topics: list[CreatableTopic] = Field(max_length=limits.TOPICS_PER_REQUEST_MAX)
    timeout_ms: Int32 = 60000
    validate_only: bool = False


class CreatableTopicConfigs(KafkaMessage):
    name: str
    value: str | None = None
    read_only: bool = False
    config_source: int = -1
    is_sensitive: bool = False


class CreatableTopicResult(KafkaMessage):
    name: str
    topic_id: TopicId | None = None
    error_code: Int16 = 0
    error_message: str | None = None
    topic_config_error_code: Int16 = 0
    num_partitions: Int32 = -1
    replication_factor: Int16 = -1
    configs: list[CreatableTopicConfigs] | None = None


class CreateTopicsResponse(KafkaResponse):
    topics: list[CreatableTopicResult] = []


# --- create-partitions (Kafka CreatePartitions v3) ---


class CreatePartitionsAssignment(KafkaMessage):
    broker_ids: list[Int32] = Field([], max_length=limits.BROKER_IDS_MAX)


class CreatePartitionsTopic(KafkaMessage):
    name: AdminTopicName
    count: Int32 = Field(description="The new partition count; it may only grow.")
    assignments: list[CreatePartitionsAssignment] | None = Field(None, max_length=_PARTITIONS)


class CreatePartitionsRequest(KafkaMessage):
    topics: list[CreatePartitionsTopic] = Field(max_length=limits.TOPICS_PER_REQUEST_MAX)
    timeout_ms: Int32 = 60000
    validate_only: bool = False


class CreatePartitionsTopicResult(KafkaMessage):
    name: str
    error_code: Int16 = 0
    error_message: str | None = None


class CreatePartitionsResponse(KafkaResponse):
    results: list[CreatePartitionsTopicResult] = []


# --- delete-topics (Kafka DeleteTopics v6) ---


class DeleteTopicState(KafkaMessage):
    name: AdminTopicName | None = None
    topic_id: TopicId | None = None


class DeleteTopicsRequest(KafkaMessage):
    topics: list[DeleteTopicState] = Field(max_length=limits.TOPICS_PER_REQUEST_MAX)
    timeout_ms: Int32 = 60000


class DeletableTopicResult(KafkaMessage):
    name: str | None = None
    topic_id: TopicId | None = None
    error_code: Int16 = 0
    error_message: str | None = None


class DeleteTopicsResponse(KafkaResponse):
    responses: list[DeletableTopicResult] = []
