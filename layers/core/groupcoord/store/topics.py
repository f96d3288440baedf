"""The topic registry: topics by name and by id, and the groups subscribed to each topic.

A topic change (creation, growth, deletion) must reach every group subscribed to it, even if
the process dies half-way. So the change is written in one transaction together with a
`topic-change` item that carries a deadline in the deadline index; the registry then bumps
`topicChanges` on each affected group item and deletes the change item. If it dies first, the
sweeper finds the change item past its deadline and notifies again (a second bump is harmless:
at worst one extra rebalance).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..core.kinesis.binding import InitialPosition, KinesisBinding
from ..core.topics import TopicRecord, regex_matches
from . import schema
from .deadlines import Overdue
from .dynamo import (
    ConditionFailed,
    Delete,
    Dynamo,
    Put,
    StoreError,
    TransactionCanceled,
    TransactItem,
    Update,
)
from .errors import Conflict

# How long a topic change may stay un-notified before the sweeper redoes it.
NOTIFY_GRACE_MS = 5000
TOPIC_CHANGES_PK = "TOPIC-CHANGES"


# The kind of the deadline-index item of a topic change not yet told to every group.
KIND_TOPIC_CHANGE = "topic-change"


class TopicAlreadyExists(Exception):
    pass


class TopicChanged(Conflict):
    """The topic was changed or deleted by someone else since it was read."""


@dataclass(frozen=True)
class BumpedGroup:
    """A group told of a topic change, as the bump left its item: what the push channel
    decides on (core/push.topic_change_notice_due)."""

    group_id: str
    group_type: str
    state: str
    member_count: int


@dataclass(frozen=True)
class TopicChange:
    """A pending notification of the groups subscribed to `topic`."""

    key: dict[str, str]
    topic: str


def _record(item: dict) -> TopicRecord:
    return TopicRecord(
        name=item["sk"],
        topic_id=item["topicId"],
        partitions=int(item["partitions"]),
        replication_factor=int(item.get("replicationFactor", -1)),
        created_at_ms=int(item.get("createdAt", 0)),
        kinesis=_binding(item),
        shard_sync_at_ms=int(item.get("shardSyncAt", 0)),
    )


def _binding(item: dict) -> KinesisBinding | None:
    arn = item.get("kinesisStream")
    if arn is None:
        return None
    position = InitialPosition.decode(item.get("kinesisStart", "")) or InitialPosition()
    return KinesisBinding(arn, position, int(item.get("kinesisStreamCreated", 0)))


def _binding_attributes(record: TopicRecord) -> dict:
    binding = record.kinesis
    if binding is None:
        return {}
    return {
        "kinesisStream": binding.stream_arn,
        "kinesisStart": binding.initial_position.encode(),
        "kinesisStreamCreated": binding.stream_created_ms,
        "shardSyncAt": record.shard_sync_at_ms,
    }


class TopicRegistry:
    def __init__(self, dynamo: Dynamo, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards

    # --- reads ---

    def get(self, name: str, *, consistent: bool = True) -> TopicRecord | None:
        item = self.dynamo.get(schema.topic_key(name), consistent=consistent)
        return _record(item) if item else None

    def get_by_id(self, topic_id: str, *, consistent: bool = True) -> TopicRecord | None:
        pointer = self.dynamo.get(schema.topic_id_key(topic_id), consistent=consistent)
        if not pointer:
            return None
        record = self.get(pointer["name"], consistent=consistent)
        return record if record and record.topic_id == topic_id else None

    def list(self, *, consistent: bool = True) -> list[TopicRecord]:
        items = self.dynamo.query("pk = :pk", {":pk": schema.TOPICS_PK}, consistent=consistent)
        return [_record(i) for i in items]

    def get_many(self, names: Iterable[str], *, consistent: bool = True) -> list[TopicRecord]:
        """The topics of these names that exist (in batches): a read that costs what the
        caller names, not what the registry holds. Every topic is on one partition key, so a
        caller that reads on every join of a burst reads eventually consistently (half the
        units; the key's read limit is 3,000 units a second)."""
        keys = [schema.topic_key(n) for n in names]
        items = self.dynamo.batch_get(keys, consistent=consistent)
        return sorted((_record(i) for i in items), key=lambda r: r.name)

    def list_from(self, start: str | None, *, batch: int) -> Iterator[TopicRecord]:
        """The topics in name order from `start` on (inclusive; None: from the first), read
        `batch` at a time as the caller advances: a caller that stops early has read at most
        `batch` topics more than it took."""
        condition, values = "pk = :pk", {":pk": schema.TOPICS_PK}
        if start is not None:
            condition, values = "pk = :pk AND sk >= :start", {**values, ":start": start}
        while True:
            items = list(self.dynamo.query(condition, values, consistent=True, limit=batch))
            yield from (_record(i) for i in items)
            if len(items) < batch:
                return
            condition = "pk = :pk AND sk > :after"
            values = {":pk": schema.TOPICS_PK, ":after": items[-1][schema.SK]}

    def names_of_ids(self, topic_ids: Iterable[str]) -> dict[str, str]:
        """The names of the topics with these ids that exist (one strongly consistent read of
        each id's pointer, in batches)."""
        keys = [schema.topic_id_key(i) for i in dict.fromkeys(topic_ids)]  # no duplicate keys
        pointers = self.dynamo.batch_get(keys, consistent=True)
        return {p[schema.SK]: p["name"] for p in pointers}

    # --- changes ---

    def create(
        self,
        record: TopicRecord,
        now_ms: int,
        *,
        sync_due: tuple[int, str] | None = None,
    ) -> list[BumpedGroup]:
        """Create the topic; `sync_due`, for a Kinesis-backed one: when its first scheduled
        shard sync is due and its deadline shard (the topic item sits in the deadline index).
        Returns the groups told (as `change`)."""
        topic_item = {
            **schema.topic_key(record.name),
            "kind": schema.KIND_TOPIC,
            "topicId": record.topic_id,
            "partitions": record.partitions,
            "replicationFactor": record.replication_factor,
            "createdAt": record.created_at_ms,
            **_binding_attributes(record),
        }
        if sync_due is not None:
            topic_item[schema.DEADLINE], topic_item[schema.DEADLINE_SHARD] = sync_due
        id_item = {
            **schema.topic_id_key(record.topic_id),
            "kind": schema.KIND_TOPIC_ID,
            "name": record.name,
        }
        return self.change(
            record.name,
            now_ms,
            [
                Put(topic_item, condition="attribute_not_exists(pk)"),
                Put(id_item, condition="attribute_not_exists(pk)"),
            ],
            TopicAlreadyExists,
        )

    def grow(self, record: TopicRecord, new_count: int, now_ms: int) -> list[BumpedGroup]:
        """Raise the partition count; fails with TopicChanged if the topic moved meanwhile."""
        update = Update(
            schema.topic_key(record.name),
            "SET #partitions = :new",
            names={"#partitions": "partitions"},
            values={":new": new_count, ":id": record.topic_id},
            # Counts only grow, whatever raced us.
            condition="topicId = :id AND #partitions < :new",
        )
        return self.change(record.name, now_ms, [update], TopicChanged)

    def delete(self, record: TopicRecord, now_ms: int) -> list[BumpedGroup]:
        deletes = [
            Delete(
                schema.topic_key(record.name),
                condition="topicId = :id",
                values={":id": record.topic_id},
            ),
            Delete(schema.topic_id_key(record.topic_id)),
        ]
        return self.change(record.name, now_ms, deletes, TopicChanged)

    def change(
        self, topic: str, now_ms: int, writes: list[TransactItem], refused: type[Exception]
    ) -> list[BumpedGroup]:
        """The writes and a pending topic-change item in one transaction, then the groups
        are told; returns them (none when that was left to the sweeper). `refused` is
        raised when the first write's condition fails."""
        change = self._change_item(topic, now_ms)
        try:
            self.dynamo.transact([*writes, Put(change)])
        except TransactionCanceled as cancel:
            if 0 in cancel.failed_conditions():
                raise refused(topic) from None
            raise
        return self._notify_or_leave_to_sweeper(TopicChange(key=_key_of(change), topic=topic))

    def _change_item(self, topic: str, now_ms: int) -> dict:
        key = {schema.PK: TOPIC_CHANGES_PK, schema.SK: f"{topic}#{uuid.uuid4().hex}"}
        return {
            **key,
            "kind": KIND_TOPIC_CHANGE,
            "topic": topic,
            schema.DEADLINE_SHARD: schema.deadline_shard_value(
                key[schema.SK], self.deadline_shards
            ),
            schema.DEADLINE: now_ms + NOTIFY_GRACE_MS,
        }

    # --- subscriptions (per topic, the groups subscribing to it) ---

    def subscribe(self, topic: str, group_id: str) -> None:
        self.dynamo.put(subscription_put(topic, group_id).item)

    def unsubscribe(self, topic: str, group_id: str) -> None:
        self.dynamo.delete(subscription_delete(topic, group_id).key)

    def subscribers(self, topic: str) -> list[str]:
        items = self.dynamo.query(
            "pk = :pk", {":pk": schema.topic_subscribers_pk(topic)}, consistent=True
        )
        return [i["sk"] for i in items]

    def set_regex(self, group_id: str, pattern: str | None) -> None:
        """Record (or, with None, forget) a group's subscribedTopicRegex."""
        key = schema.regex_subscriber_key(group_id)
        if pattern is None:
            self.dynamo.delete(key)
        else:
            self.dynamo.put({**key, "kind": schema.KIND_REGEX_SUBSCRIBER, "regex": pattern})

    def regex_subscribers(self) -> list[tuple[str, str]]:
        items = self.dynamo.query("pk = :pk", {":pk": schema.regex_subscriber_key("")[schema.PK]})
        return [(i["sk"], i["regex"]) for i in items]

    def groups_affected_by(self, topic: str) -> set[str]:
        groups = set(self.subscribers(topic))
        groups.update(g for g, pattern in self.regex_subscribers() if regex_matches(pattern, topic))
        return groups

    # --- notification ---

    def _notify_or_leave_to_sweeper(self, change: TopicChange) -> list[BumpedGroup]:
        """The change is committed: a failure to tell the groups now must not fail the
        request (a retry would see 36 TOPIC_ALREADY_EXISTS); the sweeper redoes it."""
        try:
            return self.notify(change)
        except StoreError:
            logging.getLogger(__name__).warning(
                "topic change notification deferred to the sweeper", exc_info=True
            )
            return []

    def notify(self, change: TopicChange) -> list[BumpedGroup]:
        """Bump `topicChanges` on every group affected by the change; returns them."""
        bumped = self.bump_groups(self.groups_affected_by(change.topic))
        self.dynamo.delete(change.key)
        return bumped

    def bump_groups(self, group_ids: Iterable[str]) -> list[BumpedGroup]:
        """ADD 1 to each group's `topicChanges`; the groups bumped, as the bump left them."""
        bumped = []
        for group_id in sorted(group_ids):
            try:
                item = self.dynamo.update(
                    Update(
                        schema.group_key(group_id),
                        "ADD topicChanges :one",
                        values={":one": 1},
                        condition="attribute_exists(pk)",
                    ),
                    return_new=True,
                )
            except ConditionFailed:
                continue  # The group is gone; its subscriptions are cleaned up with it.
            bumped.append(_bumped(group_id, item or {}))
        return bumped

    def renotify(self, due: Overdue) -> list[BumpedGroup]:
        """Tell the groups of an overdue topic-change item (one whose groups were not all told
        when it was written); returns them."""
        # The sort key is "<topic>#<nonce>"; topic names never contain '#'.
        item = due.item
        change = TopicChange(key=_key_of(item), topic=item[schema.SK].rsplit("#", 1)[0])
        return self.notify(change)


def _bumped(group_id: str, item: dict) -> BumpedGroup:
    # A classic group's item written before group types were recorded has none.
    return BumpedGroup(
        group_id=group_id,
        group_type=str(item.get("groupType") or "classic"),
        state=str(item.get("groupState", "")),
        member_count=int(item.get("memberCount", 0)),
    )


def _key_of(item: dict) -> dict[str, str]:
    return {schema.PK: item[schema.PK], schema.SK: item[schema.SK]}


# The registrations as writes, for a transaction or a staged conversion.


def subscription_put(topic: str, group_id: str) -> Put:
    key = schema.topic_subscriber_key(topic, group_id)
    return Put({**key, "kind": schema.KIND_TOPIC_SUBSCRIBER, "groupId": group_id})


def subscription_delete(topic: str, group_id: str) -> Delete:
    return Delete(schema.topic_subscriber_key(topic, group_id))


def regex_delete(group_id: str) -> Delete:
    return Delete(schema.regex_subscriber_key(group_id))
