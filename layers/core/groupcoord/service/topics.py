"""Topic registry APIs: metadata, create-topics, create-partitions, delete-topics.

With the authorizer on, each topic is checked as Kafka does (KafkaApis, ControllerApis):
DESCRIBE to see it in metadata, CREATE (on the cluster, or else on the topic) to create it,
ALTER to grow it, DELETE (on the cluster, or else on the topic) to delete it; a denied topic
answers 29 TOPIC_AUTHORIZATION_FAILED before it is read, so that its existence stays private,
and is left out of the all-topics metadata.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..core.acls import AclOperation, ResourceType
from ..core.kinesis.binding import StartingPoint, binding_asked
from ..core.kinesis.shards import ShardRow, listed_in_metadata
from ..core.topics import (
    Refusal,
    TopicRecord,
    check_partition_growth,
    check_topic_name,
    duplicates,
    partitions_to_create,
)
from ..errors import Errors
from ..models.topics import (
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    KinesisHashKeyRange,
    KinesisInitialPosition,
    KinesisShard,
    MetadataCursor,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from ..store.store import Store
from ..store.topics import TopicAlreadyExists, TopicChanged
from ..topic_ids import ZERO_UUID, new_topic_id
from .context import ApiContext
from .kinesis.binding import kinesis_topic
from .kinesis.lineage import gate, group_created_ms
from .push import notify_topic_change
from .races import retry_on_race

NODE_ID = 0
CLUSTER_ID = "groupcoord"
# Topics the all-topics form of metadata reads per Query, as far as its page needs them.
_LIST_BATCH = 100


def _metadata_topic(
    record: TopicRecord,
    first: int,
    end: int,
    shards: dict[int, KinesisShard],
    hidden: frozenset[int] = frozenset(),
    group_started_ms: int | None = None,
) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        name=record.name,
        topic_id=record.topic_id,
        partitions=[
            MetadataResponsePartition(
                partition_index=i,
                leader_id=NODE_ID,
                leader_epoch=0,
                replica_nodes=[NODE_ID],
                isr_nodes=[NODE_ID],
                kinesis_shard=shards.get(i),
            )
            for i in range(first, end)
            if i not in hidden
        ],
        kinesis_stream_arn=record.kinesis.stream_arn if record.kinesis else None,
        kinesis_initial_position=_initial_position(record, group_started_ms),
    )


def _initial_position(
    record: TopicRecord, group_started_ms: int | None
) -> KinesisInitialPosition | None:
    """A Kinesis-backed topic's starting point for a shard without a checkpoint; for LATEST,
    when a group is named and exists, the moment it started (its creation, as the lineage
    gating counts it)."""
    if record.kinesis is None:
        return None
    position = record.kinesis.initial_position
    at_ms = position.timestamp_ms
    if position.point is StartingPoint.LATEST and group_started_ms:
        at_ms = group_started_ms
    return KinesisInitialPosition(type=position.point.value, timestamp_ms=at_ms)


def _kinesis_shards(
    record: TopicRecord, first: int, end: int, ctx: ApiContext
) -> tuple[dict[int, KinesisShard], frozenset[int]]:
    """A Kinesis-backed topic's shards for the partitions of a page (one Query of its
    registry), and the partitions not listed any more (expired past the grace period); none
    for any other topic."""
    if record.kinesis is None:
        return {}, frozenset()
    rows = ctx.store.shards.rows(record, first, end)
    grace = ctx.settings.kinesis_expired_shard_grace_ms
    hidden = frozenset(r.index for r in rows if not listed_in_metadata(r, ctx.now_ms, grace))
    return {row.index: _shown(row) for row in rows if row.index not in hidden}, hidden


class _GroupStart:
    """The named group's creation, read once a request and only for a LATEST topic (one
    eventually consistent GetItem: it never changes)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.read: dict[str, int] = {}

    def of(self, record: TopicRecord, group_id: str | None) -> int | None:
        if group_id is None or record.kinesis is None:
            return None
        if record.kinesis.initial_position.point is not StartingPoint.LATEST:
            return None
        if group_id not in self.read:
            self.read[group_id] = group_created_ms(self.store, group_id)
        return self.read[group_id]  # 0: no such group (yet)


def _assignable(
    record: TopicRecord,
    group_id: str,
    partitions: list[MetadataResponsePartition],
    ctx: ApiContext,
    created_ms: int | None,
) -> list[MetadataResponsePartition]:
    """The partitions of a page that the group may be assigned (a classic leader's view)."""
    subscribed = {record.topic_id: record.partitions}
    blocked, _ = gate(ctx.store, group_id, [record], subscribed, created_ms)
    gated = blocked.get(record.topic_id, frozenset())
    return [p for p in partitions if p.partition_index not in gated]


def _shown(row: ShardRow) -> KinesisShard:
    shard = row.shard
    return KinesisShard(
        shard_id=shard.shard_id,
        parent_shard_ids=list(shard.parents),
        hash_key_range=KinesisHashKeyRange(
            starting_hash_key=shard.hash_start, ending_hash_key=shard.hash_end
        ),
        starting_sequence_number=shard.starting_sequence,
        # An expired shard was closed, even when the registry never saw its end.
        closed=shard.closed or row.expired_at_ms is not None,
    )


# A topic in answer order: its name, and how to read it when the page gets to it (the record,
# or the error entry answered in its place).
_Candidate = tuple[str, Callable[[], TopicRecord | MetadataResponseTopic]]


def metadata(request: MetadataRequest, ctx: ApiContext) -> MetadataResponse:
    """A page of at most responsePartitionLimit partitions (groupcoord's paging, after Kafka's
    DescribeTopicPartitions): topics in name order from the cursor on, the cursor's topic from
    the cursor's partition, a topic cut where the page is full; nextCursor is where the next
    page starts. Reads are bounded by the page: the topics it answers, in the all-topics form
    up to a batch more (the registry is read _LIST_BATCH topics a Query as the page goes), in
    the listed form the pointer of each topicId asked for."""
    if request.group_id is not None and not ctx.caller.may_on_group(
        AclOperation.DESCRIBE, request.group_id
    ):
        return MetadataResponse(cluster_id=CLUSTER_ID, error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    cursor = request.cursor
    start_name = cursor.topic_name if cursor is not None else None
    start_partition = cursor.partition_index if cursor is not None else 0
    topics: list[MetadataResponseTopic] = []
    candidates: Iterable[_Candidate]
    if not request.topics:
        # Filtered before the page is cut: nextCursor never names a topic the caller may not
        # describe.
        candidates = (
            (record.name, lambda record=record: record)
            for record in ctx.store.topics.list_from(
                start_name, batch=min(_LIST_BATCH, request.response_partition_limit + 1)
            )
            if ctx.caller.may_on_topic(AclOperation.DESCRIBE, record.name)
        )
    else:
        unnamed, named = _requested(request.topics, ctx)
        if cursor is None:
            topics += unnamed  # answered without reading a topic: on the first page
        candidates = (
            (name, lambda name=name, topic_id=topic_id: _read(name, topic_id, ctx))
            for name, topic_id in sorted(named.items())
            if start_name is None or name >= start_name
        )
    budget = request.response_partition_limit
    next_cursor: MetadataCursor | None = None
    group_starts = _GroupStart(ctx.store)
    for name, read in candidates:
        first = start_partition if name == start_name else 0
        if budget == 0:
            next_cursor = MetadataCursor(topic_name=name, partition_index=first)
            break
        found = read()
        if isinstance(found, MetadataResponseTopic):
            topics.append(found)
            continue
        if first >= found.partitions:
            continue  # a cursor past this topic's partitions (recreated smaller): nothing left
        end = min(found.partitions, first + budget)
        shards, hidden = _kinesis_shards(found, first, end, ctx)
        group_start = group_starts.of(found, request.group_id)
        topic = _metadata_topic(found, first, end, shards, hidden, group_start)
        if request.group_id is not None and found.kinesis is not None:
            topic.partitions = _assignable(
                found, request.group_id, topic.partitions, ctx, group_start
            )
        if request.include_topic_authorized_operations:
            topic.topic_authorized_operations = ctx.caller.operations(ResourceType.TOPIC, name)
        topics.append(topic)
        budget -= end - first
        if end < found.partitions:
            next_cursor = MetadataCursor(topic_name=name, partition_index=end)
            break
    host, port = ctx.host_and_port
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=NODE_ID, host=host, port=port)],
        cluster_id=CLUSTER_ID,
        controller_id=NODE_ID,
        topics=topics,
        next_cursor=next_cursor,
    )


def _requested(
    wanted_topics: list[MetadataRequestTopic], ctx: ApiContext
) -> tuple[list[MetadataResponseTopic], dict[str, str | None]]:
    """The listed topics: the error entries of those that name no topic (an unknown topicId,
    a topicId of another name, an illegal name, neither field) or that are asked for by a
    topicId of a topic the caller may not describe, in request order; and the others by name
    (each once, as Kafka answers a topic once), with the topicId asked for."""
    ids = [t.topic_id for t in wanted_topics if t.topic_id not in (None, ZERO_UUID)]
    names_of_ids = ctx.store.topics.names_of_ids(ids) if ids else {}
    unnamed: list[MetadataResponseTopic] = []
    named: dict[str, str | None] = {}
    for wanted in wanted_topics:
        topic_id = wanted.topic_id if wanted.topic_id not in (None, ZERO_UUID) else None
        if topic_id is not None:
            name = names_of_ids.get(topic_id)
            if name is not None and not ctx.caller.may_on_topic(AclOperation.DESCRIBE, name):
                # Kafka: ids are not secret, names are; checked before the name is compared
                # with the one asked for, which would tell it apart.
                unnamed.append(_denied(None, topic_id))
                continue
            if name is None or (wanted.name is not None and wanted.name != name):
                unnamed.append(_unknown_id(wanted.name, topic_id))
                continue
            if named.get(name) is None:
                named[name] = topic_id
        elif wanted.name is not None:
            if check_topic_name(wanted.name) is not None:
                # Never a topic: nothing to read. Kafka checks DESCRIBE even so (29 first).
                allowed = ctx.caller.may_on_topic(AclOperation.DESCRIBE, wanted.name)
                unnamed.append(
                    _unknown_name(wanted.name) if allowed else _denied(wanted.name, ZERO_UUID)
                )
                continue
            named.setdefault(wanted.name, None)  # checked when read (_read)
        else:
            unnamed.append(
                MetadataResponseTopic(error_code=Errors.INVALID_REQUEST, topic_id=ZERO_UUID)
            )
    return unnamed, named


def _read(name: str, topic_id: str | None, ctx: ApiContext) -> TopicRecord | MetadataResponseTopic:
    if topic_id is None and not ctx.caller.may_on_topic(AclOperation.DESCRIBE, name):
        # Asked for by name (by id, _requested checked it): 29 whether or not it exists.
        return _denied(name, ZERO_UUID)
    record = ctx.store.topics.get(name)
    if topic_id is not None and (record is None or record.topic_id != topic_id):
        return _unknown_id(name, topic_id)  # deleted (or recreated) since its id was looked up
    return record if record is not None else _unknown_name(name)


def _unknown_id(name: str | None, topic_id: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=Errors.UNKNOWN_TOPIC_ID, name=name, topic_id=topic_id)


def _denied(name: str | None, topic_id: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=Errors.TOPIC_AUTHORIZATION_FAILED, name=name, topic_id=topic_id
    )


def _unknown_name(name: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID
    )


def create_topics(request: CreateTopicsRequest, ctx: ApiContext) -> CreateTopicsResponse:
    repeated = duplicates([t.name for t in request.topics])
    # Kafka: CREATE on the cluster creates any topic; without it, CREATE on each topic.
    may_create_any = ctx.caller.may_on_cluster(AclOperation.CREATE)
    results: list[CreatableTopicResult] = []
    for topic in request.topics:
        if topic.name in repeated:
            results.append(
                _create_refused(
                    topic.name,
                    Refusal(
                        Errors.INVALID_REQUEST,
                        f"Create topics request contains multiple entries for the topic "
                        f"{topic.name}.",
                    ),
                )
            )
            continue
        if not may_create_any and not ctx.caller.may_on_topic(AclOperation.CREATE, topic.name):
            # Before the name and the registry are looked at: existence stays private.
            refusal = Refusal(Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            results.append(_create_refused(topic.name, refusal))
            continue
        planned = _planned(topic, ctx)
        if isinstance(planned, Refusal):
            results.append(_create_refused(topic.name, planned))
            continue
        record, rows = planned
        if not request.validate_only:
            try:
                _write_topic(record, rows, ctx)
            except TopicAlreadyExists:
                results.append(_create_refused(topic.name, _already_exists(topic.name)))
                continue
        created = CreatableTopicResult(
            name=record.name,
            topic_id=ZERO_UUID if request.validate_only else record.topic_id,
            num_partitions=record.partitions,
            replication_factor=record.replication_factor,
        )
        if not ctx.caller.may_on_topic(AclOperation.DESCRIBE_CONFIGS, record.name):
            # Kafka's controller answers a topic's settings only to who may describe its
            # configs: -1 for both counts, and topicConfigErrorCode 29.
            created.num_partitions = created.replication_factor = -1
            created.topic_config_error_code = Errors.TOPIC_AUTHORIZATION_FAILED
        results.append(created)
    return CreateTopicsResponse(topics=results)


def _planned(
    topic: CreatableTopic, ctx: ApiContext
) -> tuple[TopicRecord, tuple[ShardRow, ...]] | Refusal:
    """The topic a create-topics entry makes (with its first shard rows, if Kinesis-backed),
    or why it is refused."""
    refusal = check_topic_name(topic.name)
    if refusal is not None:
        return refusal
    asked = binding_asked(
        [(c.name, c.value) for c in topic.configs],
        topic.num_partitions,
        len(topic.assignments),
        ctx.settings.kinesis_stream_arns,
    )
    if isinstance(asked, Refusal):
        return asked
    count = partitions_to_create(
        topic.num_partitions if asked is None else 1,
        topic.replication_factor,
        len(topic.assignments),
        ctx.settings.num_partitions,
        ctx.settings.topic_max_partitions,
    )
    if isinstance(count, Refusal):
        return count
    if ctx.store.topics.get(topic.name) is not None:
        return _already_exists(topic.name)
    if asked is not None:
        return kinesis_topic(topic.name, asked, ctx)
    record = TopicRecord(
        name=topic.name,
        topic_id=new_topic_id(),
        partitions=count,
        replication_factor=topic.replication_factor,
        created_at_ms=ctx.now_ms,
    )
    return record, ()


def _write_topic(record: TopicRecord, rows: tuple[ShardRow, ...], ctx: ApiContext) -> None:
    """A Kinesis-backed topic's rows go first (under its new id, nobody reads them yet), then
    the topic, with its first scheduled shard sync."""
    if record.kinesis is None:
        notify_topic_change(ctx.store, ctx.store.topics.create(record, ctx.now_ms))
        return
    ctx.store.shards.write_rows(record.topic_id, rows)
    due = ctx.now_ms + ctx.settings.kinesis_shard_sync_interval_ms
    try:
        bumped = ctx.store.topics.create(
            record, ctx.now_ms, sync_due=(due, ctx.store.shards.sync_shard(record.name))
        )
    except TopicAlreadyExists:
        ctx.store.shards.delete_rows(record.topic_id, len(rows))
        raise
    notify_topic_change(ctx.store, bumped)


def _already_exists(name: str) -> Refusal:
    return Refusal(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")


def _create_refused(name: str, refusal: Refusal) -> CreatableTopicResult:
    return CreatableTopicResult(
        name=name,
        topic_id=ZERO_UUID,
        error_code=refusal.error,
        error_message=refusal.message,
    )


def create_partitions(
    request: CreatePartitionsRequest, ctx: ApiContext
) -> CreatePartitionsResponse:
    repeated = duplicates([t.name for t in request.topics])
    results: list[CreatePartitionsTopicResult] = []
    for topic in request.topics:
        if topic.name in repeated:
            refusal: Refusal | None = Refusal(
                Errors.INVALID_REQUEST, f"Duplicate topic name {topic.name} in the request."
            )
        elif not ctx.caller.may_on_topic(AclOperation.ALTER, topic.name):
            # Before the topic is read; Kafka's controller answers it without a message.
            results.append(
                CreatePartitionsTopicResult(
                    name=topic.name, error_code=Errors.TOPIC_AUTHORIZATION_FAILED
                )
            )
            continue
        else:
            refusal = _grow(topic.name, topic.count, request.validate_only, ctx)
        results.append(
            CreatePartitionsTopicResult(
                name=topic.name,
                error_code=refusal.error if refusal else Errors.NONE,
                error_message=refusal.message if refusal else None,
            )
        )
    return CreatePartitionsResponse(results=results)


def _grow(name: str, count: int, validate_only: bool, ctx: ApiContext) -> Refusal | None:
    def once(_: int) -> Refusal | None:
        record = ctx.store.topics.get(name)
        if record is None:
            return Refusal(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        if record.kinesis is not None:
            return Refusal(
                Errors.INVALID_REQUEST,
                f"The topic '{name}' is backed by a Kinesis stream: its partitions follow "
                "the stream's shards.",
            )
        refusal = check_partition_growth(
            record.partitions, count, ctx.settings.topic_max_partitions
        )
        if refusal is not None or validate_only:
            return refusal
        notify_topic_change(ctx.store, ctx.store.topics.grow(record, count, ctx.now_ms))
        return None

    # A topic grown or deleted meanwhile: decide again on what is there now.
    busy = Refusal(Errors.UNKNOWN_SERVER_ERROR, f"The topic '{name}' kept changing; retry.")
    return retry_on_race(ctx.clock, once, lost=(TopicChanged,), busy=lambda: busy)


# ApiError(TOPIC_AUTHORIZATION_FAILED): the error's own message.
_DELETE_DENIED = Refusal(Errors.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")


def delete_topics(request: DeleteTopicsRequest, ctx: ApiContext) -> DeleteTopicsResponse:
    keys = [t.topic_id if t.topic_id not in (None, ZERO_UUID) else t.name for t in request.topics]
    repeated = duplicates([k for k in keys if k is not None])
    # Kafka's controller: DELETE on the cluster deletes (and describes) any topic.
    may_delete_any = ctx.caller.may_on_cluster(AclOperation.DELETE)
    responses: list[DeletableTopicResult] = []
    for entry, key in zip(request.topics, keys, strict=True):
        by_id = entry.topic_id not in (None, ZERO_UUID)
        result = DeletableTopicResult(name=entry.name, topic_id=entry.topic_id or ZERO_UUID)
        if by_id and entry.name is not None:
            refusal: Refusal | None = Refusal(
                Errors.INVALID_REQUEST, "You may not specify both topic name and topic id."
            )
        elif key is None:
            refusal = Refusal(Errors.INVALID_REQUEST, "Neither topic name nor id was given.")
        elif key in repeated:
            refusal = Refusal(Errors.INVALID_REQUEST, f"Duplicate topic {key} in the request.")
        else:
            refusal, record = _delete(
                entry.topic_id if by_id else None, entry.name, may_delete_any, ctx
            )
            if record is not None:
                result.name, result.topic_id = record.name, record.topic_id
        if refusal is not None:
            result.error_code, result.error_message = refusal.error, refusal.message
        responses.append(result)
    return DeleteTopicsResponse(responses=responses)


def _delete(
    topic_id: str | None, name: str | None, may_delete_any: bool, ctx: ApiContext
) -> tuple[Refusal | None, TopicRecord | None]:
    """The refusal, if any, and the topic to answer under: the one deleted, or one asked for by
    id that the caller may describe but not delete (Kafka names it then, and only then)."""

    def may(operation: AclOperation, topic: str) -> bool:
        return may_delete_any or ctx.caller.may_on_topic(operation, topic)

    if topic_id is None:
        assert name is not None
        if not may(AclOperation.DESCRIBE, name):
            return _DELETE_DENIED, None  # before it is read: existence stays private

    def once(_: int) -> tuple[Refusal | None, TopicRecord | None]:
        if topic_id is not None:
            record = ctx.store.topics.get_by_id(topic_id)
            if record is None:
                message = "This server does not host this topic ID."
                return Refusal(Errors.UNKNOWN_TOPIC_ID, message), None
        else:
            assert name is not None
            record = ctx.store.topics.get(name)
            if record is None:
                return (
                    Refusal(
                        Errors.UNKNOWN_TOPIC_OR_PARTITION,
                        "This server does not host this topic-partition.",
                    ),
                    None,
                )
        if not may(AclOperation.DELETE, record.name):
            # Ids are not secret (an unknown one answered 100 above), names are: one asked
            # for by id is named only to who may describe it.
            describable = topic_id is not None and may(AclOperation.DESCRIBE, record.name)
            return _DELETE_DENIED, record if describable else None
        bumped = ctx.store.topics.delete(record, ctx.now_ms)
        if record.kinesis is not None:
            ctx.store.shards.delete_rows(record.topic_id, record.partitions)
        notify_topic_change(ctx.store, bumped)
        return None, record

    busy = Refusal(Errors.UNKNOWN_SERVER_ERROR, "The topic kept changing; retry.")
    return retry_on_race(ctx.clock, once, lost=(TopicChanged,), busy=lambda: (busy, None))
