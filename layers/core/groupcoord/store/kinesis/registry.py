"""The shard registry's items: one row per partition of a Kinesis-backed topic (the shard it
stands for, its parents, hash range and sequence numbers), under the topic's id, so that a
topic deleted and created again under the same name never sees the old rows; and the sync
lease on the topic item, which makes a sync single-flight per topic.

A topic's rows are those below its partition count. A sync writes its new rows past the count
first (nobody reads them yet), then flips the count in one conditional write on the topic item
that also ends the lease and schedules the next sync: a sync that dies leaves rows past the
count, which the next one overwrites."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from typing import Any

from ...core.kinesis.shards import RegistryPlan, Shard, ShardRow
from ...core.topics import TopicRecord
from .. import schema
from ..dynamo import ConditionFailed, Dynamo, Update
from ..errors import Conflict
from ..topics import BumpedGroup, TopicChanged, TopicRegistry

KIND_SHARD = "kinesis-shard"
LEASE = "syncLease"
LEASE_UNTIL = "syncLeaseUntil"


class SyncLeaseLost(Conflict):
    """The topic moved (or another sync took over) while this sync ran."""


def row_item(topic_id: str, row: ShardRow) -> dict[str, Any]:
    shard = row.shard
    item: dict[str, Any] = {
        **schema.shard_row_key(topic_id, row.index),
        "kind": KIND_SHARD,
        "shardId": shard.shard_id,
        "parents": list(shard.parents),
        "hashStart": shard.hash_start,
        "hashEnd": shard.hash_end,
        "startSeq": shard.starting_sequence,
    }
    if shard.ending_sequence is not None:
        item["endSeq"] = shard.ending_sequence
    if row.parent_indexes:
        item["parentIdx"] = list(row.parent_indexes)
    if row.closed_at_ms is not None:
        item["closedAt"] = row.closed_at_ms
    if row.expired_at_ms is not None:
        item["expiredAt"] = row.expired_at_ms
    return item


def _row(item: dict[str, Any]) -> ShardRow:
    return ShardRow(
        index=int(item[schema.SK]),
        shard=Shard(
            shard_id=item["shardId"],
            parents=tuple(item.get("parents") or ()),
            hash_start=item["hashStart"],
            hash_end=item["hashEnd"],
            starting_sequence=item["startSeq"],
            ending_sequence=item.get("endSeq"),
        ),
        parent_indexes=tuple(int(i) for i in item.get("parentIdx") or ()),
        closed_at_ms=_closed_at(item),
        expired_at_ms=None if item.get("expiredAt") is None else int(item["expiredAt"]),
    )


def _closed_at(item: dict[str, Any]) -> int | None:
    """A closed row's closedAt; a row closed before the field was written counts as closed
    before any group started (0): the way it was judged before, by committed ends only, is
    kept for TRIM_HORIZON groups, which never use the date. A row that expired before the
    registry saw its end has a closedAt and no endSeq."""
    if item.get("closedAt") is not None:
        return int(item["closedAt"])
    return None if item.get("endSeq") is None else 0


class ShardRegistry:
    def __init__(self, dynamo: Dynamo, topics: TopicRegistry, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.topics = topics
        self.deadline_shards = deadline_shards

    def rows(self, record: TopicRecord, first: int = 0, end: int | None = None) -> list[ShardRow]:
        """The topic's rows with indexes from `first` to before `end` (its partition count at
        most), strongly consistent."""
        end = record.partitions if end is None else min(end, record.partitions)
        if first >= end:
            return []
        items = self.dynamo.query(
            "pk = :pk AND sk BETWEEN :first AND :last",
            {
                ":pk": schema.shard_rows_pk(record.topic_id),
                ":first": schema.shard_row_sk(first),
                ":last": schema.shard_row_sk(end - 1),
            },
            consistent=True,
        )
        return [_row(item) for item in items]

    def rows_at(self, record: TopicRecord, indexes: Iterable[int]) -> dict[int, ShardRow]:
        """The topic's rows of these partitions (below its count), strongly consistent."""
        wanted = sorted({i for i in indexes if 0 <= i < record.partitions})
        keys = [schema.shard_row_key(record.topic_id, i) for i in wanted]
        found = self.dynamo.batch_get(keys, consistent=True) if keys else []
        return {row.index: row for row in map(_row, found)}

    def write_rows(self, topic_id: str, rows: Iterable[ShardRow]) -> None:
        """Put rows (unconditionally: past the topic's count they are nobody's yet, and a
        row below it only ever changes to closed)."""
        self.dynamo.batch_write(puts=[row_item(topic_id, row) for row in rows])

    def delete_rows(self, topic_id: str, count: int) -> None:
        self.dynamo.batch_write(deletes=[schema.shard_row_key(topic_id, i) for i in range(count)])

    def take_lease(self, record: TopicRecord, now_ms: int, lease_ms: int) -> str | None:
        """The topic's sync lease, or None while another sync holds it (single-flight)."""
        token = uuid.uuid4().hex
        try:
            self.dynamo.update(
                Update(
                    schema.topic_key(record.name),
                    f"SET {LEASE} = :token, {LEASE_UNTIL} = :until",
                    values={
                        ":token": token,
                        ":until": now_ms + lease_ms,
                        ":now": now_ms,
                        ":id": record.topic_id,
                    },
                    condition=f"topicId = :id AND (attribute_not_exists({LEASE_UNTIL}) "
                    f"OR {LEASE_UNTIL} < :now)",
                )
            )
        except ConditionFailed:
            return None
        return token

    def release(self, record: TopicRecord, token: str) -> None:
        """End a lease without a sync (it failed): the next may start at once."""
        # Failed: taken over after it ran out, and the taker's now.
        with contextlib.suppress(ConditionFailed):
            self.dynamo.update(
                Update(
                    schema.topic_key(record.name),
                    f"REMOVE {LEASE}, {LEASE_UNTIL}",
                    values={":token": token},
                    condition=f"{LEASE} = :token",
                )
            )

    def finish(
        self,
        record: TopicRecord,
        plan: RegistryPlan,
        token: str,
        now_ms: int,
        next_sync_ms: int,
    ) -> list[BumpedGroup]:
        """Apply a sync's plan under its lease: rows first, then the count, the sync time
        and the next sync's due time, ending the lease. A plan that changed the registry tells
        the topic's groups (a topic change; returns them). SyncLeaseLost if the lease or the
        topic moved."""
        self.write_rows(record.topic_id, [*plan.added, *plan.closed, *plan.expired])
        flip = Update(
            schema.topic_key(record.name),
            f"SET #partitions = :count, shardSyncAt = :now, #dl = :due, #shard = :dlshard "
            f"REMOVE {LEASE}, {LEASE_UNTIL}",
            names={
                "#partitions": "partitions",
                "#dl": schema.DEADLINE,
                "#shard": schema.DEADLINE_SHARD,
            },
            values={
                ":count": record.partitions + len(plan.added),
                ":old": record.partitions,
                ":now": now_ms,
                ":due": next_sync_ms,
                ":dlshard": self.sync_shard(record.name),
                ":token": token,
                ":id": record.topic_id,
            },
            condition=f"topicId = :id AND #partitions = :old AND {LEASE} = :token",
        )
        try:
            if plan.changed:
                return self.topics.change(record.name, now_ms, [flip], TopicChanged)
            self.dynamo.update(flip)
        except (TopicChanged, ConditionFailed):
            raise SyncLeaseLost(record.name) from None
        return []

    def sync_shard(self, topic: str) -> str:
        """The deadline shard of a topic's scheduled sync."""
        return schema.deadline_shard_value(f"{topic}/shard-sync", self.deadline_shards)
