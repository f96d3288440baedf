"""Topic registry APIs: metadata, create-topics, create-partitions, delete-topics."""

from __future__ import annotations

from collections.abc import Callable, Iterable

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
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    MetadataCursor,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from ..store.topics import TopicAlreadyExists, TopicChanged
from ..topic_ids import ZERO_UUID, new_topic_id
from .context import ApiContext
from .races import RACE_ATTEMPTS, back_off

NODE_ID = 0
CLUSTER_ID = "groupcoord"
# Topics the all-topics form of metadata reads per Query, as far as its page needs them.
_LIST_BATCH = 100


def _metadata_topic(record: TopicRecord, first: int, end: int) -> MetadataResponseTopic:
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
            )
            for i in range(first, end)
        ],
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
    cursor = request.cursor
    start_name = cursor.topic_name if cursor is not None else None
    start_partition = cursor.partition_index if cursor is not None else 0
    topics: list[MetadataResponseTopic] = []
    candidates: Iterable[_Candidate]
    if not request.topics:
        candidates = (
            (record.name, lambda record=record: record)
            for record in ctx.store.topics.list_from(
                start_name, batch=min(_LIST_BATCH, request.response_partition_limit + 1)
            )
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
        topics.append(_metadata_topic(found, first, end))
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
    a topicId of another name, an illegal name, neither field), in request order; and the
    others by name (each once, as Kafka answers a topic once), with the topicId asked for."""
    ids = [t.topic_id for t in wanted_topics if t.topic_id not in (None, ZERO_UUID)]
    names_of_ids = ctx.store.topics.names_of_ids(ids) if ids else {}
    unnamed: list[MetadataResponseTopic] = []
    named: dict[str, str | None] = {}
    for wanted in wanted_topics:
        topic_id = wanted.topic_id if wanted.topic_id not in (None, ZERO_UUID) else None
        if topic_id is not None:
            name = names_of_ids.get(topic_id)
            if name is None or (wanted.name is not None and wanted.name != name):
                unnamed.append(_unknown_id(wanted.name, topic_id))
                continue
            if named.get(name) is None:
                named[name] = topic_id
        elif wanted.name is not None:
            if check_topic_name(wanted.name) is not None:
                unnamed.append(_unknown_name(wanted.name))  # never a topic: nothing to read
                continue
            named.setdefault(wanted.name, None)
        else:
            unnamed.append(
                MetadataResponseTopic(error_code=Errors.INVALID_REQUEST, topic_id=ZERO_UUID)
            )
    return unnamed, named


def _read(name: str, topic_id: str | None, ctx: ApiContext) -> TopicRecord | MetadataResponseTopic:
    record = ctx.store.topics.get(name)
    if topic_id is not None and (record is None or record.topic_id != topic_id):
        return _unknown_id(name, topic_id)  # deleted (or recreated) since its id was looked up
    return record if record is not None else _unknown_name(name)


def _unknown_id(name: str | None, topic_id: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=Errors.UNKNOWN_TOPIC_ID, name=name, topic_id=topic_id)


def _unknown_name(name: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID
    )


def create_topics(request: CreateTopicsRequest, ctx: ApiContext) -> CreateTopicsResponse:
    repeated = duplicates([t.name for t in request.topics])
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
        refusal = check_topic_name(topic.name)
        count = partitions_to_create(
            topic.num_partitions,
            topic.replication_factor,
            len(topic.assignments),
            ctx.settings.num_partitions,
            ctx.settings.topic_max_partitions,
        )
        if refusal is None and isinstance(count, Refusal):
            refusal = count
        if refusal is None and ctx.store.topics.get(topic.name) is not None:
            refusal = _already_exists(topic.name)
        if refusal is not None:
            results.append(_create_refused(topic.name, refusal))
            continue
        assert isinstance(count, int)
        record = TopicRecord(
            name=topic.name,
            topic_id=new_topic_id(),
            partitions=count,
            replication_factor=topic.replication_factor,
            created_at_ms=ctx.now_ms,
        )
        if not request.validate_only:
            try:
                ctx.store.topics.create(record, ctx.now_ms)
            except TopicAlreadyExists:
                results.append(_create_refused(topic.name, _already_exists(topic.name)))
                continue
        results.append(
            CreatableTopicResult(
                name=record.name,
                topic_id=ZERO_UUID if request.validate_only else record.topic_id,
                num_partitions=record.partitions,
                replication_factor=record.replication_factor,
            )
        )
    return CreateTopicsResponse(topics=results)


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
    for attempt in range(RACE_ATTEMPTS):
        record = ctx.store.topics.get(name)
        if record is None:
            return Refusal(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        refusal = check_partition_growth(
            record.partitions, count, ctx.settings.topic_max_partitions
        )
        if refusal is not None or validate_only:
            return refusal
        try:
            ctx.store.topics.grow(record, count, ctx.now_ms)
            return None
        except TopicChanged:  # grown or deleted meanwhile: decide again on what is there now
            back_off(attempt)
    return Refusal(Errors.UNKNOWN_SERVER_ERROR, f"The topic '{name}' kept changing; retry.")


def delete_topics(request: DeleteTopicsRequest, ctx: ApiContext) -> DeleteTopicsResponse:
    keys = [t.topic_id if t.topic_id not in (None, ZERO_UUID) else t.name for t in request.topics]
    repeated = duplicates([k for k in keys if k is not None])
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
            refusal, record = _delete(entry.topic_id if by_id else None, entry.name, ctx)
            if record is not None:
                result.name, result.topic_id = record.name, record.topic_id
        if refusal is not None:
            result.error_code, result.error_message = refusal.error, refusal.message
        responses.append(result)
    return DeleteTopicsResponse(responses=responses)


def _delete(
    topic_id: str | None, name: str | None, ctx: ApiContext
) -> tuple[Refusal | None, TopicRecord | None]:
    for attempt in range(RACE_ATTEMPTS):
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
        try:
            ctx.store.topics.delete(record, ctx.now_ms)
            return None, record
        except TopicChanged:
            back_off(attempt)
    return Refusal(Errors.UNKNOWN_SERVER_ERROR, "The topic kept changing; retry."), None
