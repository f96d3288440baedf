"""offset-commit's reads for Kinesis-backed topics: the shards of the partitions committed and
the group's positions in them, for core/kinesis_commits.py to judge; and, once a shard's end
naming children the registry does not know is committed, the topic's shard sync (the sync
"on a member's shard-end report")."""

from __future__ import annotations

from collections.abc import Iterable

from ...core.kinesis.binding import StartingPoint
from ...core.kinesis.done import start_ms
from ...core.kinesis.shards import ShardRow
from ...core.kinesis_commits import (
    ends_committed,
    judge_positions,
    needs_judging,
    parents_of,
    unknown_children,
)
from ...core.offset_commit import CommitPlan, ResolvedTopic
from ...errors import Errors
from ...models.offsets import OffsetCommitRequest
from ...observability import logger
from ...store.kinesis.registry import SyncLeaseLost
from ...store.kinesis.streams import StreamError
from ..context import ApiContext
from ..push import notify_topic_change
from .lineage import group_created_ms
from .sync import sync_topic


def judged_plan(
    request: OffsetCommitRequest, resolved: list[ResolvedTopic], plan: CommitPlan, ctx: ApiContext
) -> tuple[CommitPlan, set[str]]:
    """The plan with the Kinesis partitions' positions judged, and the topics to sync once the
    commit lands. Reads only for a commit that touches a Kinesis topic or names a position:
    the rows of the partitions named and their committed positions (two batched reads)."""
    if not needs_judging(request, resolved):
        return plan, set()
    rows: dict[str, dict[int, ShardRow]] = {}
    named: list[tuple[str, int]] = []
    for topic, found, codes in zip(request.topics, resolved, plan.codes, strict=True):
        record = found.record
        if record is None or record.kinesis is None:
            continue
        indexes = [
            p.partition_index
            for p, code in zip(topic.partitions, codes, strict=True)
            if code == Errors.NONE
        ]
        rows.setdefault(record.name, {}).update(ctx.store.shards.rows_at(record, indexes))
        named += [(record.name, i) for i in indexes]
    parents = parents_of(rows)
    named += parents
    _add_parent_rows(rows, parents, resolved, ctx)
    committed = ctx.store.offsets.fetch(request.group_id, named) if named else {}
    positions = {key: offset.position for key, offset in committed.items()}
    # When the group started matters only for a closed shard (one closed before the start is
    # done): the group's item is read for that alone, and only for a LATEST topic.
    closed = any(r.closed_at_ms is not None for found in rows.values() for r in found.values())
    started = _started(request.group_id, resolved, ctx) if closed else {}
    judged = judge_positions(request, resolved, plan, rows, positions, started)
    return judged, unknown_children(request, resolved, rows)


def _add_parent_rows(
    rows: dict[str, dict[int, ShardRow]],
    parents: list[tuple[str, int]],
    resolved: list[ResolvedTopic],
    ctx: ApiContext,
) -> None:
    """The parents' rows beside the named ones (one batched read per topic with parents):
    a parent is done also when expired or closed before the group started."""
    records = {r.record.name: r.record for r in resolved if r.record is not None}
    for name in sorted({topic for topic, _ in parents}):
        wanted = [i for topic, i in parents if topic == name and i not in rows[name]]
        if wanted:
            rows[name].update(ctx.store.shards.rows_at(records[name], wanted))


def _started(
    group_id: str, resolved: list[ResolvedTopic], ctx: ApiContext
) -> dict[str, int | None]:
    """Per Kinesis topic of the commit, when the group started for lineage's sake; the
    group's item is read only for a topic starting at LATEST."""
    created: int | None = None
    started: dict[str, int | None] = {}
    for found in resolved:
        record = found.record
        if record is None or record.kinesis is None:
            continue
        position = record.kinesis.initial_position
        if created is None and position.point is StartingPoint.LATEST:
            created = group_created_ms(ctx.store, group_id)
        started[record.name] = start_ms(position, created or 0)
    return started


def after_shard_ends(
    request: OffsetCommitRequest, plan: CommitPlan, topics: Iterable[str], ctx: ApiContext
) -> None:
    """Once a commit finishing shards landed: sync the topics whose shard ends named children
    not in their registry (a Kinesis that does not answer fails no commit: the sweeper syncs
    later), and tell the group, whose children may now be assigned (a topic change: its
    epoch is bumped at its next heartbeat), and its members over the push channel."""
    if not ends_committed(plan):
        return
    for name in sorted(topics):
        record = ctx.store.topics.get(name)
        if record is None or record.kinesis is None:
            continue
        try:
            sync_topic(ctx.store, record, ctx.now_ms)
        except (StreamError, SyncLeaseLost) as error:
            logger.warning("shard-end sync failed", extra={"topic": name, "error": str(error)})
    notify_topic_change(ctx.store, ctx.store.topics.bump_groups([request.group_id]))
