"""create-topics for a Kinesis-backed topic: the stream is read (its creation time, its
shards, and for an AT_TIMESTAMP before now the shards open then) before anything is written,
and the topic starts with one partition per shard, in lineage order (core/kinesis/shards.py),
each closed one dated before or after its groups' start (core/kinesis/start_set.py)."""

from __future__ import annotations

from ...core.kinesis.binders import SETTING as BINDERS_SETTING
from ...core.kinesis.binders import may_bind
from ...core.kinesis.binding import BindingAsked, KinesisBinding
from ...core.kinesis.shards import Shard, ShardRow, plan_registry
from ...core.kinesis.start_set import closed_before_start, start_listing_ms
from ...core.topics import Refusal, TopicRecord
from ...errors import Errors
from ...observability import logger
from ...store.kinesis.streams import StreamError, StreamForbidden, StreamNotFound
from ...topic_ids import new_topic_id
from ..context import ApiContext

# Streams whose shards can be listed: a CREATING stream has none yet, a DELETING one is going.
_LISTABLE = ("ACTIVE", "UPDATING")


def kinesis_topic(
    name: str, asked: BindingAsked, ctx: ApiContext
) -> tuple[TopicRecord, tuple[ShardRow, ...]] | Refusal:
    """The topic bound to the stream asked for, with its first registry rows, or why not (29
    TOPIC_AUTHORIZATION_FAILED for a caller who may not bind the stream, before Kinesis is
    asked anything; 40
    INVALID_CONFIG for a stream that is not there or not active, 37 INVALID_PARTITIONS for
    more shards than groupcoord.topic.max.partitions, 7 REQUEST_TIMED_OUT when Kinesis does
    not answer: worth a retry)."""
    arn = asked.stream_arn
    refused = _binding_refusal(arn, ctx)
    if refused is not None:
        return refused
    limit = ctx.settings.topic_max_partitions
    try:
        summary = ctx.store.kinesis.describe(arn)
        if summary.status not in _LISTABLE:
            return Refusal(
                Errors.INVALID_CONFIG, f"Kinesis stream {arn} is {summary.status}, not ACTIVE."
            )
        listed = ctx.store.kinesis.list_shards(arn, limit)
    except StreamNotFound:
        return Refusal(Errors.INVALID_CONFIG, f"Kinesis stream {arn} does not exist.")
    except StreamForbidden:
        return Refusal(
            Errors.INVALID_CONFIG,
            f"This coordinator may not list Kinesis stream {arn} (the template's "
            "KinesisStreamArns).",
        )
    except StreamError as error:
        return Refusal(Errors.REQUEST_TIMED_OUT, f"Kinesis did not answer ({error}); retry.")
    closed_before = _closed_before_start(asked, listed, ctx)
    plan = plan_registry((), listed, limit, ctx.now_ms, closed_before)
    if plan.left_out:
        return Refusal(
            Errors.INVALID_PARTITIONS,
            f"Kinesis stream {arn} has more than {limit} shards (groupcoord.topic.max.partitions).",
        )
    record = TopicRecord(
        name=name,
        topic_id=new_topic_id(),
        partitions=len(plan.added),
        created_at_ms=ctx.now_ms,
        kinesis=KinesisBinding(arn, asked.initial_position, summary.created_ms),
        shard_sync_at_ms=ctx.now_ms,
    )
    return record, plan.added


def _closed_before_start(
    asked: BindingAsked, listed: list[Shard], ctx: ApiContext
) -> frozenset[str]:
    """The listed shards that closed before the topic's groups start: for an AT_TIMESTAMP
    before now, the ancestors of the shards Kinesis says were open then (one filtered
    ListShards). A Kinesis that does not answer it leaves every closed shard dated now: read
    from the timestamp (maybe nothing, then its end), never skipped."""
    at_ms = start_listing_ms(asked.initial_position, ctx.now_ms)
    if at_ms is None or not any(shard.closed for shard in listed):
        return frozenset()
    try:
        open_then = ctx.store.kinesis.open_at(
            asked.stream_arn, at_ms, ctx.settings.topic_max_partitions
        )
    except StreamError as error:
        logger.warning(
            "ListShards AT_TIMESTAMP failed: the closed shards are read from the timestamp",
            extra={"stream": asked.stream_arn, "error": str(error)},
        )
        return frozenset()
    return closed_before_start(listed, open_then)


def _binding_refusal(arn: str, ctx: ApiContext) -> Refusal | None:
    """Why the caller may not bind a topic to stream `arn` (core/kinesis/binders.py): with the
    authorizer on, only a super user or a principal `groupcoord.kinesis.stream.binders` allows
    may."""
    caller = ctx.caller
    if not caller.checked or caller.principal in ctx.settings.super_user_principals:
        return None
    if may_bind(caller.principal, arn, ctx.settings.kinesis_binders):
        return None
    return Refusal(
        Errors.TOPIC_AUTHORIZATION_FAILED,
        f"{caller.principal} may not bind a topic to Kinesis stream {arn} ({BINDERS_SETTING}).",
    )
