"""offset-commit on a Kinesis-backed topic (pure): each planned partition's position judged
against the shard it stands for and the group's committed position (kinesis/positions.py); the
plan keeps only the partitions that pass. It stands beside offset_commit.py, whose plan it
judges, rather than in kinesis/, which offset_commit.py imports (positions)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import Errors
from ..models.offsets import OffsetCommitRequest
from .kinesis.done import row_done
from .kinesis.positions import Position, PositionAsked, position_error, refusal_message
from .kinesis.shards import ShardRow
from .offset_commit import CommitPlan, ResolvedTopic


def is_admin_commit(request: OffsetCommitRequest) -> bool:
    """A commit from outside the group (Kafka admits it only while the group is empty)."""
    return request.generation_id_or_member_epoch < 0 and not request.member_id


def needs_judging(request: OffsetCommitRequest, resolved: list[ResolvedTopic]) -> bool:
    """Whether any partition of the commit is on a Kinesis topic or carries a position."""
    return any(r.record is not None and r.record.kinesis is not None for r in resolved) or any(
        p.kinesis_position is not None for t in request.topics for p in t.partitions
    )


def judge_positions(
    request: OffsetCommitRequest,
    resolved: list[ResolvedTopic],
    plan: CommitPlan,
    rows: Mapping[str, Mapping[int, ShardRow]],
    committed: Mapping[tuple[str, int], Position | None],
    started: Mapping[str, int | None] | None = None,
) -> CommitPlan:
    """The plan with each committable partition's position judged: `rows`, per Kinesis topic
    (by name), the shards of the partitions named and of their parents; `committed`, the
    group's positions now; `started`, per topic, when the group started for lineage's sake
    (kinesis/done.start_ms; none: TRIM_HORIZON), which only a closed shard's judgement looks at
    (kinesis/done.before_start): the caller gives it for every topic with a closed row."""
    started = started or {}
    admin = is_admin_commit(request)
    codes: list[list[Errors]] = []
    refused: set[tuple[str, int]] = set()
    messages = dict(plan.messages)
    for t, (topic, found, row_codes) in enumerate(
        zip(request.topics, resolved, plan.codes, strict=True)
    ):
        record = found.record
        shards = rows.get(record.name, {}) if record is not None else {}
        judged: list[Errors] = []
        for i, (partition, code) in enumerate(zip(topic.partitions, row_codes, strict=True)):
            if code == Errors.NONE and record is not None:
                index = partition.partition_index
                asked = partition.kinesis_position
                row = shards.get(index) if record.kinesis is not None else None
                parents = row.parent_indexes if row is not None else ()
                at = committed.get((record.name, index))
                wanted = (
                    None
                    if asked is None
                    else PositionAsked(Position.of(asked), tuple(asked.child_shard_ids))
                )
                code = position_error(
                    row,
                    at,
                    wanted,
                    admin=admin,
                    parents_done=all(
                        _done(
                            shards.get(p), committed.get((record.name, p)), started.get(record.name)
                        )
                        for p in parents
                    ),
                    done=row is not None and _done(row, at, started.get(record.name)),
                )
                if code != Errors.NONE:
                    refused.add((record.name, index))
                    said = refusal_message(code, row, wanted, record.name, index)
                    if said:
                        messages[(t, i)] = said
            judged.append(code)
        codes.append(judged)
    offsets = [o for o in plan.offsets if (o.topic, o.partition) not in refused]
    return CommitPlan(plan.names, codes, offsets, plan.denied, messages)


def _ended(position: Position | None) -> bool:
    return position is not None and position.shard_end


def _done(row: ShardRow | None, position: Position | None, started: int | None) -> bool:
    """A shard done for the group (kinesis/done.py); a parent whose row was not read, by its end."""
    if row is None:
        return _ended(position)
    return row_done(row, _ended(position), started, position is not None)


def parents_of(rows: Mapping[str, Mapping[int, ShardRow]]) -> list[tuple[str, int]]:
    """The parent partitions of the rows read, whose positions the judgement needs too."""
    return [
        (topic, p)
        for topic, found in rows.items()
        for r in found.values()
        for p in r.parent_indexes
    ]


def ends_committed(plan: CommitPlan) -> bool:
    """Whether the commit finishes a shard: its group's assignment may change (children)."""
    return any(o.position is not None and o.position.shard_end for o in plan.offsets)


def unknown_children(
    request: OffsetCommitRequest,
    resolved: list[ResolvedTopic],
    rows: Mapping[str, Mapping[int, ShardRow]],
) -> set[str]:
    """The Kinesis topics whose commit names, at a shard's end, children the registry rows
    read do not hold (a reshard not synced yet): each worth a sync once committed."""
    topics: set[str] = set()
    for topic, found in zip(request.topics, resolved, strict=True):
        record = found.record
        if record is None or record.kinesis is None:
            continue
        for partition in topic.partitions:
            asked = partition.kinesis_position
            if asked is None or not asked.shard_end or not asked.child_shard_ids:
                continue
            row = rows.get(record.name, {}).get(partition.partition_index)
            if row is None or not row.shard.closed:
                topics.add(record.name)
    return topics
