"""Topic registry APIs: metadata, create-topics, create-partitions, delete-topics.

groupcoord is not a broker: it keeps the registry of topics (name, id, partition count) that
groups subscribe to. Replica and leader fields are answered with this node (id 0) so that
Kafka-shaped clients can read the response.
"""

from __future__ import annotations

from pydantic import Field

from .base import Int16, Int32, KafkaMessage, KafkaResponse, TopicId

UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)


# --- metadata (Kafka Metadata v13) ---


class MetadataRequestTopic(KafkaMessage):
    topic_id: TopicId | None = None
    name: str | None = None


class MetadataRequest(KafkaMessage):
    topics: list[MetadataRequestTopic] | None = Field(
        None, description="null, absent or [] returns every topic."
    )
    allow_auto_topic_creation: bool = Field(
        True, description="Accepted for compatibility; groupcoord never creates topics here."
    )
    include_topic_authorized_operations: bool = False


class MetadataResponseBroker(KafkaMessage):
    node_id: Int32
    host: str
    port: Int32
    rack: str | None = None


class MetadataResponsePartition(KafkaMessage):
    error_code: Int16 = 0
    partition_index: Int32
    leader_id: Int32 = 0
    leader_epoch: Int32 = -1
    replica_nodes: list[Int32] = []
    isr_nodes: list[Int32] = []
    offline_replicas: list[Int32] = []


class MetadataResponseTopic(KafkaMessage):
    error_code: Int16 = 0
    name: str | None = None
    topic_id: TopicId | None = None
    is_internal: bool = False
    partitions: list[MetadataResponsePartition] = []
    topic_authorized_operations: Int32 = UNKNOWN_AUTHORIZED_OPERATIONS


class MetadataResponse(KafkaResponse):
    brokers: list[MetadataResponseBroker] = []
    cluster_id: str | None = None
    controller_id: Int32 = -1
    topics: list[MetadataResponseTopic] = []
    error_code: Int16 = 0


# --- create-topics (Kafka CreateTopics v7) ---


class CreatableReplicaAssignment(KafkaMessage):
    partition_index: Int32
    broker_ids: list[Int32] = []


class CreatableTopicConfig(KafkaMessage):
    name: str
    value: str | None = None


class CreatableTopic(KafkaMessage):
    name: str
    num_partitions: Int32 = Field(-1, description="-1 (the default here) uses num.partitions.")
    replication_factor: Int16 = Field(
        -1, description="Recorded only; -1 (the default here) means the cluster default."
    )
    assignments: list[CreatableReplicaAssignment] = []
    configs: list[CreatableTopicConfig] = []


class CreateTopicsRequest(KafkaMessage):
    topics: list[CreatableTopic]
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
    broker_ids: list[Int32] = []


class CreatePartitionsTopic(KafkaMessage):
    name: str
    count: Int32 = Field(description="The new partition count; it may only grow.")
    assignments: list[CreatePartitionsAssignment] | None = None


class CreatePartitionsRequest(KafkaMessage):
    topics: list[CreatePartitionsTopic]
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
    name: str | None = None
    topic_id: TopicId | None = None


class DeleteTopicsRequest(KafkaMessage):
    topics: list[DeleteTopicState]
    timeout_ms: Int32 = 60000


class DeletableTopicResult(KafkaMessage):
    name: str | None = None
    topic_id: TopicId | None = None
    error_code: Int16 = 0
    error_message: str | None = None


class DeleteTopicsResponse(KafkaResponse):
    responses: list[DeletableTopicResult] = []
