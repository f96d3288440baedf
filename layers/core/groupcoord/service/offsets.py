"""offset-commit, offset-fetch and offset-delete.

With the authorizer on, Kafka's checks come first (KafkaApis): READ on the group to commit
(else every partition answers 30), DESCRIBE on it to fetch (30 for that group), DELETE on it to
delete offsets (30 for the request); then READ on each topic to commit or delete its offsets,
DESCRIBE to fetch them (29 for that topic's partitions; left out when every topic is fetched).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.acls import AclOperation, ResourceType
from ..core.kinesis_commits import is_admin_commit
from ..core.offset_commit import (
    Next,
    ResolvedTopic,
    commit_answer,
    judged_request,
    next_step,
    plan_partitions,
    refused_answer,
)
from ..core.offset_fetch import answer_all, answer_named, fetch_refused, fetchable, wanted_topic
from ..core.offsets import CommittedOffset
from ..core.topics import TopicRecord
from ..errors import BadRequest, Errors
from ..models import limits
from ..models.offsets import (
    FailedWrite,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
)
from ..store.errors import SinkWritesRefused
from ..store.offsets import Fenced, PositionRaced, distinct
from ..store.sink_writes import (
    AlreadyApplied,
    KeyReused,
    SinkBatch,
    SinkWriteFailed,
    fingerprint,
    transaction_element,
)
from ..store.stored_group import StoredGroup
from ..topic_ids import ZERO_UUID
from .context import ApiContext
from .group_types import group_type_of
from .kinesis.commits import after_shard_ends, judged_plan
from .offset_fencing import commit_fence
from .offset_retention import arm, is_expired
from .races import retry_on_race
from .topic_lookup import resolve_topic


def _authorized_topic(
    ctx: ApiContext,
    operation: AclOperation,
    name: str | None,
    topic_id: str | None,
    field: str,
) -> tuple[TopicRecord | None, Errors]:
    """resolve_topic behind Kafka's check of `operation` on the topic (29 when denied). A topic
    named in the request is checked before it is read, so whether a denied topic exists stays
    private; one given by id alone is read first (ids are not secret: an unknown id is 100)."""
    if name is not None and not ctx.caller.may_on_topic(operation, name):
        return None, Errors.TOPIC_AUTHORIZATION_FAILED
    try:
        record, error = resolve_topic(ctx, name, topic_id, field)
    except BadRequest:
        if ctx.caller.checked and name is not None and topic_id not in (None, ZERO_UUID):
            # The id may be another topic the caller may not describe: do not name it.
            raise BadRequest(field, f"topicId {topic_id} is not topic {name!r}") from None
        raise
    if record is not None and name is None and not ctx.caller.may_on_topic(operation, record.name):
        return None, Errors.TOPIC_AUTHORIZATION_FAILED
    return record, error


# --- offset-commit ---


def offset_commit(request: OffsetCommitRequest, ctx: ApiContext) -> OffsetCommitResponse:
    """Read what the commit's decision needs (ACLs, topics, the group and its fence), ask
    core/offset_commit.py, write (core/offset_commit.py says what Kafka answers per partition)."""
    if not ctx.caller.may_on_group(AclOperation.READ, request.group_id):
        return refused_answer(request, Errors.GROUP_AUTHORIZATION_FAILED)
    # WRITE on every table named before any is looked up: whether a name is a sink table is
    # told only to whoever may write it.
    if not all(
        ctx.caller.may(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, table)
        for table in _sink_tables(request)
    ):
        return refused_answer(request, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    sink = _sink_batch(request, ctx) if request.writes else None
    resolved = [
        ResolvedTopic(
            *_authorized_topic(ctx, AclOperation.READ, topic.name, topic.topic_id, f"topics[{i}]")
        )
        for i, topic in enumerate(request.topics)
    ]
    plan = plan_partitions(
        request,
        resolved,
        now_ms=ctx.now_ms,
        metadata_max_bytes=ctx.settings.offset_metadata_max_bytes,
    )
    planned = plan
    plan, to_sync = judged_plan(request, resolved, plan, ctx)
    if plan.codes != planned.codes:
        # A Kinesis position refused. The member is judged first, as Kafka does: a zombie's
        # position is behind its successor's, and it must learn that it is fenced (and give
        # its shards up), not that its position went back.
        fenced = _check_only(judged_request(request, planned), ctx)
        if fenced != Errors.NONE:
            return commit_answer(request, planned, fenced)
    if sink is not None:
        _check_fits(plan.offsets, sink)
    step = next_step(request, plan, sink is not None)
    if isinstance(step, Errors):
        return commit_answer(request, plan, step)
    judged = judged_request(request, plan)
    if step is Next.CHECK:
        return commit_answer(request, plan, _check_only(judged, ctx))
    error, failed_write = _commit(judged, ctx, plan.offsets, sink)
    if error == Errors.NONE:
        after_shard_ends(request, plan, to_sync, ctx)
    return commit_answer(request, plan, error, failed_write)


def _group_item(ctx: ApiContext, group_id: str) -> StoredGroup | None:
    return ctx.store.conversions.read_group(group_id, consistent=True)


def _check_only(request: OffsetCommitRequest, ctx: ApiContext) -> Errors:
    """Nothing to write: the request still gets the fencing verdict."""
    fence = commit_fence(ctx, _group_item(ctx, request.group_id), request)
    return fence.error or Errors.NONE


def _commit(
    request: OffsetCommitRequest,
    ctx: ApiContext,
    offsets: Sequence[CommittedOffset],
    sink: SinkBatch | None = None,
) -> tuple[Errors, FailedWrite | None]:
    store = ctx.store.offsets

    def once(_: int) -> tuple[Errors, FailedWrite | None]:
        item = _group_item(ctx, request.group_id)
        fence = commit_fence(ctx, item, request)
        if fence.error is not None:
            return fence.error, None
        try:
            assert fence.guard is not None
            # An admin's commit from outside (to an empty group) may move a position back.
            store.commit(
                request.group_id,
                offsets,
                fence.guard,
                sink,
                forward_only=not is_admin_commit(request),
            )
        except AlreadyApplied:
            pass  # a retry of a commit that landed: answered as it was
        except KeyReused:
            raise BadRequest(
                "idempotencyKey", "already used by a different commit (another key per commit)"
            ) from None
        except SinkWriteFailed as failed:
            if failed.reason != "ConditionalCheckFailed":
                raise BadRequest(
                    f"writes[{failed.index}]", f"DynamoDB refused it: {failed}"
                ) from None
            return Errors.INVALID_TXN_STATE, FailedWrite(index=failed.index, reason=failed.reason)
        except SinkWritesRefused as refused:
            raise BadRequest("writes", f"DynamoDB refused the transaction: {refused}") from None
        arm(ctx, item, request.group_id)
        return Errors.NONE, None

    def busy() -> tuple[Errors, FailedWrite | None]:
        fence = commit_fence(ctx, _group_item(ctx, request.group_id), request)
        return fence.error or Errors.REBALANCE_IN_PROGRESS, None

    # Fenced: the group moved between read and write; decide again on what is there. A
    # position moved past this one meanwhile (the member's own commits racing) is refused
    # alone: 1, as judged on a fresh read.
    try:
        return retry_on_race(ctx.clock, once, lost=(Fenced,), busy=busy)
    except PositionRaced:
        return Errors.OFFSET_OUT_OF_RANGE, None


# --- a commit's sink writes (docs/exactly-once.md) ---


def _sink_tables(request: OffsetCommitRequest) -> list[str]:
    return sorted({write.table for write in request.writes or []})


def _sink_batch(request: OffsetCommitRequest, ctx: ApiContext) -> SinkBatch:
    """The request's writes, once every table they name is a sink of this deployment (the
    coordinator's own table never is: settings.py)."""
    allowed = ctx.settings.sink_table_names
    for i, write in enumerate(request.writes or []):
        if write.table not in allowed:
            raise BadRequest(
                f"writes[{i}].{write.kind}.TableName",
                f"{write.table!r} is not a sink table of this deployment (groupcoord.sink.tables)",
            )
    if request.idempotency_key is None:
        raise BadRequest("idempotencyKey", "required with writes")
    asked = request.to_json_dict()
    # What the commit asks, not who asks it: a retry whose generation or epoch moved is the
    # same commit (it must not apply twice).
    what = {k: asked.get(k) for k in ("groupId", "topics", "writes")}
    for topic in what["topics"] or ():
        for partition in topic["partitions"]:
            if partition.get("kinesisPosition") is None:
                # As fingerprinted before Kinesis positions were a field.
                partition.pop("kinesisPosition", None)
    return SinkBatch(
        writes=[transaction_element(write) for write in request.writes or []],
        idempotency_key=request.idempotency_key,
        fingerprint=fingerprint(what),
        expires_at_s=(ctx.now_ms + ctx.settings.sink_idempotency_ms) // 1000,
    )


def _check_fits(offsets: Sequence[CommittedOffset], sink: SinkBatch) -> None:
    """One transaction holds the fence, the marker, the offsets and the writes."""
    partitions = len(distinct(offsets))
    count = 2 + partitions + len(sink.writes)
    if count > limits.TRANSACTION_ITEMS_MAX:
        raise BadRequest(
            "writes",
            f"a commit with writes is one DynamoDB transaction of at most "
            f"{limits.TRANSACTION_ITEMS_MAX} items: this one needs {count} (the fence, the "
            f"idempotency marker, {partitions} partitions, {len(sink.writes)} writes)",
        )


# --- offset-fetch ---


def offset_fetch(request: OffsetFetchRequest, ctx: ApiContext) -> OffsetFetchResponse:
    return OffsetFetchResponse(groups=[_fetch_group(group, ctx) for group in request.groups])


def _fetch_group(request: OffsetFetchRequestGroup, ctx: ApiContext) -> OffsetFetchResponseGroup:
    """Read what one group's fetch needs (its ACLs, group item, offsets), ask
    core/offset_fetch.py for the answer."""
    group_id = request.group_id
    if not ctx.caller.may_on_group(AclOperation.DESCRIBE, group_id):
        return fetch_refused(group_id, Errors.GROUP_AUTHORIZATION_FAILED)
    store = ctx.store.offsets
    item = _group_item(ctx, group_id)
    group_type = group_type_of(item) if item is not None else None
    check = group_type.check_fetch if group_type is not None else None
    if check is not None and item is not None:
        error = check(ctx, item, request)
        if error != Errors.NONE:
            return fetch_refused(group_id, error)
    if request.topics is None:
        committed = store.fetch_all(group_id) if item is not None else []
        # Kafka leaves out, silently, the topics the caller may not describe.
        return answer_all(
            group_id,
            [
                o
                for o in committed
                if not is_expired(item, o, ctx)
                and ctx.caller.may_on_topic(AclOperation.DESCRIBE, o.topic)
            ],
        )
    wanted = [
        wanted_topic(
            topic,
            *_authorized_topic(
                ctx, AclOperation.DESCRIBE, topic.name, topic.topic_id, f"groups.topics[{i}]"
            ),
        )
        for i, topic in enumerate(request.topics)
    ]
    found = store.fetch(group_id, fetchable(wanted)) if item is not None else {}
    return answer_named(
        group_id, wanted, {key: o for key, o in found.items() if not is_expired(item, o, ctx)}
    )


# --- offset-delete ---


def offset_delete(request: OffsetDeleteRequest, ctx: ApiContext) -> OffsetDeleteResponse:
    if not ctx.caller.may_on_group(AclOperation.DELETE, request.group_id):
        return OffsetDeleteResponse(error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    item = _group_item(ctx, request.group_id)
    if item is None:
        return OffsetDeleteResponse(error_code=Errors.GROUP_ID_NOT_FOUND)
    subscribed: set[str] = set()
    found = item.header
    if found.member_count > 0:
        subscribed = set(found.subscribed_topics)
        if found.protocol_type != "consumer":
            # Kafka: a non-empty group that is not a consumer group has opaque subscriptions.
            return OffsetDeleteResponse(error_code=Errors.NON_EMPTY_GROUP)
    results: list[OffsetDeleteResponseTopic] = []
    deletable: list[tuple[str, int]] = []
    for i, topic in enumerate(request.topics):
        record, error = _authorized_topic(
            ctx, AclOperation.READ, topic.name, topic.topic_id, f"topics[{i}]"
        )
        name = record.name if record else (topic.name or "")
        code = error
        if error != Errors.TOPIC_AUTHORIZATION_FAILED and name in subscribed:
            code = Errors.GROUP_SUBSCRIBED_TO_TOPIC
        if code == Errors.NONE:
            deletable += [(name, p.partition_index) for p in topic.partitions]
        results.append(
            OffsetDeleteResponseTopic(
                name=name,
                topic_id=record.topic_id if record else (topic.topic_id or ZERO_UUID),
                partitions=[
                    OffsetDeleteResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in topic.partitions
                ],
            )
        )
    ctx.store.offsets.delete(request.group_id, deletable)
    return OffsetDeleteResponse(topics=results)
