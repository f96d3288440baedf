"""partitionLags: how far behind a member is on partitions it holds, a groupcoord extension of
consumer-group-heartbeat and of the classic heartbeat (core/lag.py keeps and weighs them)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from . import limits
from .base import Int32, KafkaMessage, NonNegativeInt64, TopicId


class PartitionLag(KafkaMessage):
    partition: Int32
    lag_ms: NonNegativeInt64 = Field(description="How far behind the member is, in ms.")


class TopicPartitionLags(KafkaMessage):
    topic_id: TopicId
    partitions: list[PartitionLag] = Field([], max_length=limits.PARTITION_LAGS_MAX)


PartitionLagsField = Annotated[
    list[TopicPartitionLags] | None, Field(max_length=limits.TOPICS_PER_REQUEST_MAX)
]

PARTITION_LAGS_DESCRIPTION = (
    "groupcoord extension: how far behind the member is on the partitions it holds (a Kinesis "
    f"consumer's MillisBehindLatest), at most {limits.PARTITION_LAGS_MAX} in all; a report "
    "replaces the last one. Shown by describe-group-activity (lagMs); the uniform assignor "
    "moves the partitions least behind. Kept with the member's next write, and written at "
    "once only when a lag crosses a band (1 s, 10 s, 1 min, 10 min, 1 h): reporting costs no "
    "write of its own. null = unchanged."
)


def check_lags_bound(lags: list[TopicPartitionLags] | None) -> None:
    total = sum(len(t.partitions) for t in lags or ())
    if total > limits.PARTITION_LAGS_MAX:
        raise ValueError(
            f"partitionLags: {total} partitions in all; the limit is {limits.PARTITION_LAGS_MAX}"
        )


def reported(lags: list[TopicPartitionLags] | None) -> list[tuple[str, int, int]] | None:
    """(topic id, partition, lag ms) of a request's partitionLags; None when not sent."""
    if lags is None:
        return None
    return [(t.topic_id, p.partition, p.lag_ms) for t in lags for p in t.partitions]
