"""The shard sync of a Kinesis-backed topic: list the stream's shards and append the new ones
to the topic's registry. Run at creation (service/kinesis/binding.py), by the sweeper when the
topic's scheduled sync is due (`sync_due_topic`, every groupcoord.kinesis.shard.sync.interval.ms),
and lazily by a consumer group's target install or a classic group's leader joining a
rebalance when the last sync is older than that (`sync_stale`, `sync_stale_named`).
Single-flight per topic: a sync holds the topic's lease (a conditional write on the topic
item), and one that finds it held does nothing. Its cost is bounded: one
DescribeStreamSummary, ListShards pages of 1,000 shards, one Query of the registry, and writes
only for what changed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from enum import StrEnum

from ...core.kinesis.binding import stream_matches
from ...core.kinesis.shards import RegistryPlan, plan_registry, sync_due
from ...core.topics import TopicRecord
from ...observability import logger
from ...store import schema
from ...store.deadlines import Overdue
from ...store.kinesis.registry import SyncLeaseLost
from ...store.kinesis.streams import StreamError
from ...store.store import Store
from ..push import notify_topic_change

# How long a sync may hold its topic's lease: a sync that dies is taken over after this.
SYNC_LEASE_MS = 30_000


class Synced(StrEnum):
    CHANGED = "changed"  # shards added or closed
    UNCHANGED = "unchanged"
    BUSY = "busy"  # another sync holds the lease
    RECREATED = "recreated"  # the stream was deleted and created again: refused


def sync_topic(store: Store, record: TopicRecord, now_ms: int) -> Synced:
    """Sync the topic's registry with its stream's shards, under the topic's lease. Raises
    StreamError when Kinesis cannot answer, SyncLeaseLost when the topic moved meanwhile."""
    binding = record.kinesis
    assert binding is not None, record.name
    token = store.shards.take_lease(record, now_ms, SYNC_LEASE_MS)
    if token is None:
        return Synced.BUSY
    limit = store.settings.topic_max_partitions
    next_sync_ms = now_ms + store.settings.kinesis_shard_sync_interval_ms
    try:
        summary = store.kinesis.describe(binding.stream_arn)
        if not stream_matches(binding, summary.created_ms):
            # Never mixed into the old stream's partitions; the due time moves on.
            logger.warning(
                "Kinesis stream re-created since the topic was bound: shards not synced",
                extra={"topic": record.name, "stream": binding.stream_arn},
            )
            store.shards.finish(record, RegistryPlan(), token, now_ms, next_sync_ms)
            return Synced.RECREATED
        listed = store.kinesis.list_shards(binding.stream_arn, limit)
        plan = plan_registry(store.shards.rows(record), listed, limit, now_ms)
        bumped = store.shards.finish(record, plan, token, now_ms, next_sync_ms)
    except BaseException:
        store.shards.release(record, token)
        raise
    notify_topic_change(store, bumped)
    if plan.left_out:
        logger.warning(
            "Kinesis shards past groupcoord.topic.max.partitions left out",
            extra={"topic": record.name, "leftOut": plan.left_out},
        )
    return Synced.CHANGED if plan.changed else Synced.UNCHANGED


def sync_due_topic(store: Store, due: Overdue, now_ms: int) -> None:
    """The sweeper's completion of a topic item whose scheduled sync is due."""
    record = store.topics.get(due.item[schema.SK])
    if record is None or record.kinesis is None:
        return  # deleted since the index was read (its schedule went with it)
    # Lost: changed meanwhile, and whoever changed it scheduled the next sync.
    with contextlib.suppress(SyncLeaseLost):
        sync_topic(store, record, now_ms)


def sync_stale(store: Store, records: Iterable[TopicRecord], now_ms: int) -> bool:
    """Sync the Kinesis topics among `records` whose last sync is older than the interval (a
    join's lazy sync); whether any registry changed. Kinesis being unreachable fails no
    join: the sweeper tries again."""
    interval = store.settings.kinesis_shard_sync_interval_ms
    changed = False
    for record in records:
        if record.kinesis is None or not sync_due(record.shard_sync_at_ms, now_ms, interval):
            continue
        try:
            changed |= sync_topic(store, record, now_ms) is Synced.CHANGED
        except (StreamError, SyncLeaseLost) as error:
            logger.warning(
                "lazy shard sync failed", extra={"topic": record.name, "error": str(error)}
            )
    return changed


def sync_stale_named(store: Store, names: Iterable[str], now_ms: int) -> bool:
    """`sync_stale` of the topics of these names (a classic leader's join names them): one
    batched read of what the names name, whatever else the registry holds."""
    wanted = sorted(set(names))
    return bool(wanted) and sync_stale(store, store.topics.get_many(wanted), now_ms)
