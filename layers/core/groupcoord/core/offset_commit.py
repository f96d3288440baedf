"""offset-commit's decisions, pure (service/offsets.py reads and writes): which partitions of
a request can be committed, what the whole commit does next, and the answer.

Kafka's rule: a rejected commit rejects the whole request (every partition answers the code);
only a topic the caller may not read (29), an unknown topic or partition (3 / 100) and metadata
over `offset.metadata.max.bytes` (12) are answered per partition. A commit that carries
`writes` (docs/exactly-once.md) is all or nothing: one refused partition refuses all (48).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from ..errors import Errors
from ..models.offsets import (
    FailedWrite,
    KinesisPosition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from ..topic_ids import ZERO_UUID
from .kinesis.positions import Position
from .offsets import CommittedOffset
from .topics import TopicRecord


@dataclass(frozen=True)
class ResolvedTopic:
    """One topic of the request as the service found it: its record (None: not found, or not
    looked up) and the lookup's own code (29, 3, 100, or NONE)."""

    record: TopicRecord | None
    error: Errors


@dataclass(frozen=True)
class CommitPlan:
    """Per topic of the request: the name and id to answer with, and a code per partition
    (NONE: to be committed); the offsets to write; the topics denied (29), which the group's
    rule does not judge."""

    names: list[tuple[str, str]]
    codes: list[list[Errors]]
    offsets: list[CommittedOffset]
    denied: frozenset[int]
    # Why a refused partition was refused, where its code alone does not say: by (topic's,
    # partition's position in the request).
    messages: Mapping[tuple[int, int], str] = field(default_factory=dict)

    @property
    def any_refused(self) -> bool:
        return any(c != Errors.NONE for row in self.codes for c in row)


def plan_partitions(
    request: OffsetCommitRequest,
    resolved: Sequence[ResolvedTopic],
    *,
    now_ms: int,
    metadata_max_bytes: int,
) -> CommitPlan:
    names: list[tuple[str, str]] = []
    codes: list[list[Errors]] = []
    offsets: list[CommittedOffset] = []
    denied: set[int] = set()
    for i, (topic, found) in enumerate(zip(request.topics, resolved, strict=True)):
        record = found.record
        if found.error == Errors.TOPIC_AUTHORIZATION_FAILED:
            denied.add(i)
        names.append(
            (record.name, record.topic_id)
            if record
            else (topic.name or "", topic.topic_id or ZERO_UUID)
        )
        row: list[Errors] = []
        for partition in topic.partitions:
            code = found.error
            if record is not None and not 0 <= partition.partition_index < record.partitions:
                code = Errors.UNKNOWN_TOPIC_OR_PARTITION
            metadata = partition.committed_metadata or ""
            if code == Errors.NONE and len(metadata.encode()) > metadata_max_bytes:
                code = Errors.OFFSET_METADATA_TOO_LARGE
            if code == Errors.NONE and record is not None:
                offsets.append(
                    CommittedOffset(
                        topic=record.name,
                        topic_id=record.topic_id,
                        partition=partition.partition_index,
                        offset=partition.committed_offset,
                        leader_epoch=partition.committed_leader_epoch,
                        metadata=partition.committed_metadata,
                        commit_timestamp_ms=now_ms,
                        position=_position(partition.kinesis_position),
                    )
                )
            row.append(code)
        codes.append(row)
    return CommitPlan(names, codes, offsets, frozenset(denied))


def _position(asked: KinesisPosition | None) -> Position | None:
    if asked is None:
        return None
    return Position.of(asked)


def judged_request(request: OffsetCommitRequest, plan: CommitPlan) -> OffsetCommitRequest:
    """As in Kafka, the group's rule judges only the topics the caller may read (a consumer
    member's older-epoch commit looks at each partition's assignment)."""
    if not plan.denied:
        return request
    kept = [t for i, t in enumerate(request.topics) if i not in plan.denied]
    return request.model_copy(update={"topics": kept})


class Next(Enum):
    """What a commit does once its partitions are planned."""

    WRITE = "write"  # the fence's verdict, then the offsets (and writes) in its transaction
    CHECK = "check"  # nothing to write: the fence's verdict alone


def next_step(request: OffsetCommitRequest, plan: CommitPlan, with_writes: bool) -> Next | Errors:
    """The step after the plan, or the error that refuses the whole commit now."""
    if not request.group_id:
        return Errors.INVALID_GROUP_ID  # Kafka's answer to a commit to the empty group id
    if with_writes and plan.any_refused:
        return Errors.INVALID_TXN_STATE  # all or nothing: one refused partition refuses all
    return Next.WRITE if plan.offsets or with_writes else Next.CHECK


def commit_answer(
    request: OffsetCommitRequest,
    plan: CommitPlan,
    error: Errors,
    failed_write: FailedWrite | None = None,
) -> OffsetCommitResponse:
    """The answer: a whole-commit `error` is every committable partition's code too."""
    codes = plan.codes
    if error != Errors.NONE:
        codes = [[error if c == Errors.NONE else c for c in row] for row in codes]
    return OffsetCommitResponse(
        error_code=error,
        failed_write=failed_write,
        topics=[
            OffsetCommitResponseTopic(
                name=name,
                topic_id=topic_id,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=c,
                        error_message=plan.messages.get((t, i)) if c != Errors.NONE else None,
                    )
                    for i, (p, c) in enumerate(zip(topic.partitions, row, strict=True))
                ],
            )
            for t, (topic, (name, topic_id), row) in enumerate(
                zip(request.topics, plan.names, codes, strict=True)
            )
        ],
    )


def refused_answer(request: OffsetCommitRequest, error: Errors) -> OffsetCommitResponse:
    """Kafka's error response: every partition answers `error`, its topic as the request named
    it (nothing read)."""
    unread = CommitPlan(
        names=[(t.name or "", t.topic_id or ZERO_UUID) for t in request.topics],
        codes=[[Errors.NONE] * len(t.partitions) for t in request.topics],
        offsets=[],
        denied=frozenset(),
    )
    return commit_answer(request, unread, error)
