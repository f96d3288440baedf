"""offset-fetch's answers, pure (service/offsets.py reads): what each group's answer holds,
from the offsets read and the topics asked for.

Kafka's rules: a group the caller may not describe, or whose member the fetch does not admit,
answers only its code; with `topics` null every committed topic the caller may describe is
answered (the others left out, silently); a named topic the caller may not describe answers 29
per partition, an unknown topic id 100, and a partition with nothing committed -1."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import Errors
from ..models.offsets import (
    KinesisPosition,
    OffsetFetchRequestTopics,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)
from ..topic_ids import ZERO_UUID
from .kinesis.positions import Position
from .offsets import CommittedOffset
from .topics import TopicRecord

# The lookup codes a named topic is answered with per partition; any other answers normally.
_ANSWERED = (Errors.UNKNOWN_TOPIC_ID, Errors.TOPIC_AUTHORIZATION_FAILED)


@dataclass(frozen=True)
class WantedTopic:
    name: str
    topic_id: str
    partitions: list[int]
    code: Errors  # NONE: looked up


def wanted_topic(
    topic: OffsetFetchRequestTopics, record: TopicRecord | None, error: Errors
) -> WantedTopic:
    """One named topic as the service resolved it (record, and the lookup's code)."""
    return WantedTopic(
        name=record.name if record else (topic.name or ""),
        topic_id=record.topic_id if record else (topic.topic_id or ZERO_UUID),
        partitions=list(topic.partition_indexes),
        code=error if error in _ANSWERED else Errors.NONE,
    )


def fetchable(wanted: Sequence[WantedTopic]) -> list[tuple[str, int]]:
    """The (topic, partition) pairs worth reading."""
    return [(w.name, p) for w in wanted if w.code == Errors.NONE for p in w.partitions]


def fetch_refused(group_id: str, error: Errors) -> OffsetFetchResponseGroup:
    return OffsetFetchResponseGroup(group_id=group_id, error_code=error)


def _fetched(offset: CommittedOffset) -> OffsetFetchResponsePartitions:
    return OffsetFetchResponsePartitions(
        partition_index=offset.partition,
        committed_offset=offset.offset,
        committed_leader_epoch=offset.leader_epoch,
        metadata=offset.metadata if offset.metadata is not None else "",
        kinesis_position=_shown(offset.position),
    )


def _shown(position: Position | None) -> KinesisPosition | None:
    if position is None:
        return None
    return KinesisPosition(
        sequence_number=position.sequence,
        sub_sequence_number=position.sub_sequence,
        shard_end=position.shard_end,
        at_timestamp_ms=position.timestamp_ms,
    )


def answer_all(group_id: str, visible: Iterable[CommittedOffset]) -> OffsetFetchResponseGroup:
    """Every topic of `visible` (what is committed, unexpired, that the caller may describe),
    by topic, in name order."""
    by_topic: dict[tuple[str, str], list[CommittedOffset]] = {}
    for offset in visible:
        by_topic.setdefault((offset.topic, offset.topic_id), []).append(offset)
    return OffsetFetchResponseGroup(
        group_id=group_id,
        topics=[
            OffsetFetchResponseTopics(
                name=name, topic_id=topic_id, partitions=[_fetched(o) for o in offsets]
            )
            for (name, topic_id), offsets in sorted(by_topic.items())
        ],
    )


def answer_named(
    group_id: str,
    wanted: Sequence[WantedTopic],
    found: Mapping[tuple[str, int], CommittedOffset],
) -> OffsetFetchResponseGroup:
    """The topics asked for, each partition from `found` (unexpired offsets read) or -1 with
    the topic's code."""
    return OffsetFetchResponseGroup(
        group_id=group_id,
        topics=[
            OffsetFetchResponseTopics(
                name=w.name,
                topic_id=w.topic_id,
                partitions=[
                    _fetched(found[(w.name, p)])
                    if (w.name, p) in found
                    else OffsetFetchResponsePartitions(
                        partition_index=p, committed_offset=-1, error_code=w.code
                    )
                    for p in w.partitions
                ],
            )
            for w in wanted
        ],
    )
