"""Committed offsets: offset-commit (Kafka OffsetCommit v10), offset-fetch (OffsetFetch v10,
the batched `groups` form) and offset-delete (OffsetDelete v0).

Kafka's latest versions name topics by `topicId` only (OffsetDelete by `name` only); groupcoord lets
a request topic carry `name`, `topicId` or both (the core checks that they agree), and every
response topic carries both.
"""

from __future__ import annotations

from typing import Self

from pydantic import ConfigDict, Field, model_validator

from ..topic_ids import ZERO_UUID
from . import limits
from .base import (
    GroupId,
    InstanceId,
    Int16,
    Int32,
    Int64,
    KafkaMessage,
    KafkaResponse,
    MemberId,
    TopicId,
    TopicName,
    bounded,
)
from .sink_writes import IdempotencyKey, SinkWrite

# A list of partitions of one topic never names more than a topic may have.
_PARTITIONS = limits.TOPIC_PARTITIONS_DEFAULT_MAX


class _TopicRef(KafkaMessage):
    """A request topic: by name, by id, or both (docs/offsets.md)."""

    model_config = ConfigDict(
        json_schema_extra={"anyOf": [{"required": ["name"]}, {"required": ["topicId"]}]}
    )

    name: TopicName | None = Field(None, description="The topic name; name and/or topicId.")
    topic_id: TopicId | None = Field(None, description="The topic id; name and/or topicId.")

    @model_validator(mode="after")
    def _named(self) -> Self:
        if self.name is None and self.topic_id is None:
            raise ValueError("a topic needs a name or a topicId")
        return self


class _TopicResult(KafkaMessage):
    """A response topic: both its name and its id (Kafka's defaults when unknown)."""

    name: str = ""
    topic_id: TopicId = ZERO_UUID


# --- Kinesis positions (groupcoord extension, docs/kinesis.md) ---

_SEQUENCE = r"^(0|[1-9][0-9]{0,128})$"
ShardId = bounded(limits.KINESIS_SHARD_ID_MAX_CHARS)


class KinesisPosition(KafkaMessage):
    """A checkpoint in a Kinesis shard: after the record at (sequenceNumber,
    subSequenceNumber), or the shard's end."""

    sequence_number: str | None = Field(
        None,
        max_length=129,
        pattern=_SEQUENCE,
        description="The last record processed: Kinesis' sequence number, a decimal string "
        "of up to 129 digits. Required unless shardEnd.",
    )
    sub_sequence_number: int = Field(
        0,
        ge=0,
        le=2**63 - 1,
        description="The record's place in a KPL aggregate (0 for a record not aggregated).",
    )
    shard_end: bool = Field(
        False,
        description="The shard is processed to its end (GetRecords gave no next iterator): "
        "its children may start. Accepted for a shard the coordinator knows is closed, or "
        "with childShardIds.",
    )
    child_shard_ids: list[ShardId] = Field(  # type: ignore[valid-type]
        [],
        max_length=2,
        description="With shardEnd: the ChildShards GetRecords named (2 after a split, 1 "
        "after a merge); the coordinator syncs the topic's shards if it does not know them.",
    )
    at_timestamp_ms: Int64 | None = Field(
        None,
        ge=0,
        le=limits.KINESIS_TIMESTAMP_MAX_MS,
        description="An admin's reset to a time (`groupcoord offsets reset --to-datetime`; "
        "alone, only from outside the group): the group's next read of the shard starts at "
        "its first record that arrived at or after this time (ms since the epoch; Kinesis' "
        "AT_TIMESTAMP). A member's commit of it answers 42.",
    )

    @model_validator(mode="after")
    def _placed(self) -> Self:
        if self.at_timestamp_ms is not None:
            if self.sequence_number is not None or self.shard_end or self.child_shard_ids:
                raise ValueError("atTimestampMs stands alone: no sequenceNumber, no shardEnd")
            return self
        if self.sequence_number is None and not self.shard_end:
            raise ValueError("a position needs a sequenceNumber, shardEnd or atTimestampMs")
        return self


# --- offset-commit ---


class OffsetCommitRequestPartition(KafkaMessage):
    partition_index: Int32
    committed_offset: Int64 = Field(
        description="Kafka's offset; kept as sent for a Kinesis-backed topic, whose "
        "checkpoint is kinesisPosition."
    )
    committed_leader_epoch: Int32 = -1
    committed_metadata: bounded(limits.OFFSET_METADATA_MAX_BYTES_CEILING) | None = Field(  # type: ignore[valid-type]
        None,
        description="Over offset.metadata.max.bytes (4096) this partition answers 12 "
        "OFFSET_METADATA_TOO_LARGE, as in Kafka.",
    )
    kinesis_position: KinesisPosition | None = Field(
        None,
        description="groupcoord extension: a Kinesis-backed topic's checkpoint (required "
        "there, refused 42 elsewhere). It never moves back (1 OFFSET_OUT_OF_RANGE), but for "
        "a commit from outside the group (an admin's reset, while the group is empty); a "
        "shardEnd of a shard not known closed and without childShardIds answers 42.",
    )


class OffsetCommitRequestTopic(_TopicRef):
    partitions: list[OffsetCommitRequestPartition] = Field([], max_length=_PARTITIONS)


class OffsetCommitRequest(KafkaMessage):
    group_id: GroupId
    generation_id_or_member_epoch: Int32 = Field(
        -1,
        description="The generation (classic group) or member epoch (consumer group); "
        "-1 for a commit from outside the group.",
    )
    member_id: MemberId = ""
    group_instance_id: InstanceId | None = None
    topics: list[OffsetCommitRequestTopic] = Field([], max_length=limits.TOPICS_PER_REQUEST_MAX)
    writes: list[SinkWrite] | None = Field(
        None,
        max_length=limits.SINK_WRITES_MAX,
        description="groupcoord's extension (docs/exactly-once.md): DynamoDB writes on sink "
        "tables, applied in ONE transaction with the offsets and the commit's fence: all or "
        "nothing. At most 98 writes + distinct partitions; needs idempotencyKey.",
    )
    idempotency_key: IdempotencyKey | None = None


class FailedWrite(KafkaMessage):
    """Which of the request's writes made DynamoDB cancel the transaction, and why."""

    index: Int32 = Field(description="The write's position in the request's `writes`.")
    reason: str = Field(description="DynamoDB's cancellation reason, e.g. ConditionalCheckFailed.")


class OffsetCommitResponsePartition(KafkaMessage):
    partition_index: Int32
    error_code: Int16 = 0
    error_message: str | None = Field(
        None,
        description="groupcoord's extension: why this partition was refused where the code "
        "alone does not say (42 on a Kinesis-backed topic: an offset where a kinesisPosition "
        "is needed, a position on a topic that is not Kinesis-backed, the end of an open "
        "shard); null otherwise.",
    )


class OffsetCommitResponseTopic(_TopicResult):
    partitions: list[OffsetCommitResponsePartition] = []


class OffsetCommitResponse(KafkaResponse):
    error_code: Int16 = Field(
        0,
        description="groupcoord's extension: the verdict on the commit as a whole. 0 when it "
        "was applied (as far as it could be: a partition's own code, 29, 3, 100 or 12, says "
        "which were not); else the code that refused all of it (30, 53, 25, 22, 27, 113, 48 "
        "...), which every partition also answers. A commit of `writes` alone has no "
        "partition to carry it: this is its answer.",
    )
    topics: list[OffsetCommitResponseTopic] = []
    failed_write: FailedWrite | None = Field(
        None,
        description="groupcoord's extension: set when one of the request's `writes` failed "
        "(its condition, or DynamoDB refused it); every partition then answers 48 "
        "INVALID_TXN_STATE and nothing was written.",
    )


# --- offset-fetch ---


class OffsetFetchRequestTopics(_TopicRef):
    partition_indexes: list[Int32] = Field([], max_length=_PARTITIONS)


class OffsetFetchRequestGroup(KafkaMessage):
    group_id: GroupId
    member_id: MemberId | None = Field(
        None, description="Set by a consumer-group member; else null."
    )
    member_epoch: Int32 = Field(-1, description="The member epoch; -1 for a fetch from outside.")
    topics: list[OffsetFetchRequestTopics] | None = Field(
        None,
        max_length=limits.TOPICS_PER_REQUEST_MAX,
        description="null = every topic with a committed offset.",
    )


class OffsetFetchRequest(KafkaMessage):
    groups: list[OffsetFetchRequestGroup] = Field(
        max_length=limits.GROUPS_PER_REQUEST_MAX,
        description=f"At most {limits.ALL_TOPICS_FETCHES_PER_REQUEST_MAX} of them with "
        "`topics: null` (every topic reads all of the group's offset shards).",
    )
    require_stable: bool = False

    @model_validator(mode="after")
    def _bounded_reads(self) -> Self:
        every_topic = sum(1 for g in self.groups if g.topics is None)
        if every_topic > limits.ALL_TOPICS_FETCHES_PER_REQUEST_MAX:
            raise ValueError(
                f"groups: {every_topic} groups with topics null; at most "
                f"{limits.ALL_TOPICS_FETCHES_PER_REQUEST_MAX} per request"
            )
        return self


class OffsetFetchResponsePartitions(KafkaMessage):
    partition_index: Int32
    committed_offset: Int64 = Field(0, description="-1 when nothing is committed.")
    committed_leader_epoch: Int32 = -1
    metadata: str | None = None
    error_code: Int16 = 0
    kinesis_position: KinesisPosition | None = Field(
        None,
        description="groupcoord extension: the committed position in a Kinesis-backed "
        "topic's shard (childShardIds empty); null when none is committed.",
    )


class OffsetFetchResponseTopics(_TopicResult):
    partitions: list[OffsetFetchResponsePartitions] = []


class OffsetFetchResponseGroup(KafkaMessage):
    group_id: str
    topics: list[OffsetFetchResponseTopics] = []
    error_code: Int16 = 0


class OffsetFetchResponse(KafkaResponse):
    groups: list[OffsetFetchResponseGroup] = []


# --- offset-delete ---


class OffsetDeleteRequestPartition(KafkaMessage):
    partition_index: Int32


class OffsetDeleteRequestTopic(_TopicRef):
    partitions: list[OffsetDeleteRequestPartition] = Field([], max_length=_PARTITIONS)


class OffsetDeleteRequest(KafkaMessage):
    group_id: GroupId
    topics: list[OffsetDeleteRequestTopic] = Field([], max_length=limits.TOPICS_PER_REQUEST_MAX)


class OffsetDeleteResponsePartition(KafkaMessage):
    partition_index: Int32
    error_code: Int16 = 0


class OffsetDeleteResponseTopic(_TopicResult):
    partitions: list[OffsetDeleteResponsePartition] = []


class OffsetDeleteResponse(KafkaResponse):
    error_code: Int16 = 0
    topics: list[OffsetDeleteResponseTopic] = []
