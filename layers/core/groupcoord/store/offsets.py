"""Committed offsets: one item per (group, topic, partition), sharded per group.

A commit is written in TransactWriteItems of at most 100 items whose first item is its guard
(the fencing rule the service decided the commit by, as a condition on the group or member
item) and the rest the offset puts: the rule is checked at the moment of the write, so a
commit admitted on a state that moved before the write is refused (docs/offsets.md).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.classic.model import ClassicGroup
from ..core.kinesis.positions import Position
from ..core.offsets import CommittedOffset
from . import schema
from .codecs.classic import group_to_item
from .dynamo import (
    Check,
    ConditionFailed,
    Delete,
    Dynamo,
    Put,
    TransactionCanceled,
    TransactItem,
    Update,
)
from .errors import Conflict
from .sink_writes import SinkBatch, judge_cancellation, transaction_items
from .stored_group import StoredGroup

MAX_TRANSACTION_ITEMS = 100


# --- what a commit is admitted on (checked again at its write) ---


@dataclass(frozen=True)
class CreatesGroup:
    """A commit from outside any group to a group that does not exist: it creates `group`
    (Kafka's simple group), unless a group of that id appeared meanwhile."""

    group: ClassicGroup


@dataclass(frozen=True)
class WhileEmpty:
    """A commit from outside to an existing group: admitted while it has no members."""

    group_id: str


@dataclass(frozen=True)
class ClassicMemberInGeneration:
    """A classic member's commit: the member is still joined (not pending) and in
    `generation`; the commit restarts its session, as a heartbeat would."""

    group_id: str
    member_id: str
    member_shards: int
    generation: int
    now_ms: int


@dataclass(frozen=True)
class ConsumerMemberAtEpoch:
    """A consumer-protocol member's commit: the member is still at the epoch judged by."""

    group_id: str
    member_id: str
    member_shards: int
    epoch: int


CommitGuard = CreatesGroup | WhileEmpty | ClassicMemberInGeneration | ConsumerMemberAtEpoch


def _guard_item(guard: CommitGuard, deadline_shards: int) -> TransactItem:
    match guard:
        case CreatesGroup(group):
            return Put(group_to_item(group, deadline_shards), condition="attribute_not_exists(pk)")
        case WhileEmpty(group_id):
            return Check(schema.group_key(group_id), "memberCount = :zero", values={":zero": 0})
        case ClassicMemberInGeneration(group_id, member_id, shards, generation, now_ms):
            # On the member item alone: a condition on the group item would bill its key for
            # every commit. `memberGeneration` is stamped on every member when a barrier closes
            # with it, so a commit of generation g is admitted exactly while the member is
            # still in g: during the next rebalance too, as in Kafka, and never after it.
            return Update(
                schema.member_key(group_id, member_id, shards),
                "SET sessionDeadline = expiryMs + :now",
                values={":now": now_ms, ":false": False, ":g": generation},
                condition="attribute_exists(pk) AND pending = :false AND memberGeneration = :g",
            )
        case ConsumerMemberAtEpoch(group_id, member_id, shards, epoch):
            return Check(
                schema.member_key(group_id, member_id, shards),
                "memberEpoch = :epoch",
                values={":epoch": epoch},
            )
    raise TypeError(f"not a commit guard: {guard!r}")


class Fenced(Conflict):
    """A fence item of the transaction failed: the group or member moved since it was read."""

    def __init__(self, failed: list[int]) -> None:
        super().__init__(f"fence items {failed} failed")
        self.failed = failed


def distinct(offsets: Iterable[CommittedOffset]) -> list[CommittedOffset]:
    """One offset per partition, the last one named (what a commit writes)."""
    return list({(o.topic, o.partition): o for o in offsets}.values())


class PositionRaced(Conflict):
    """A Kinesis position was moved past the one committed since it was read."""


def _put(group_id: str, offset: CommittedOffset, forward_only: bool) -> Put:
    """An offset's put; a Kinesis position's, with `forward_only`, conditioned on not moving
    the stored one back (its order string: core/kinesis/positions.py)."""
    item = _item(group_id, offset)
    if offset.position is None or not forward_only:
        return Put(item)
    return Put(
        item,
        condition="attribute_not_exists(korder) OR korder <= :order",
        values={":order": item["korder"]},
    )


def _item(group_id: str, offset: CommittedOffset) -> dict[str, Any]:
    item: dict[str, Any] = {
        **schema.offset_key(group_id, offset.topic, offset.partition),
        "kind": schema.KIND_OFFSET,
        "groupId": group_id,
        "topic": offset.topic,
        "topicId": offset.topic_id,
        "partition": offset.partition,
        "offset": offset.offset,
        "leaderEpoch": offset.leader_epoch,
        "commitTimestamp": offset.commit_timestamp_ms,
    }
    if offset.metadata is not None:
        item["metadata"] = offset.metadata
    position = offset.position
    if position is not None:
        item["korder"] = position.order()
        item["ksub"] = position.sub_sequence
        item["kend"] = position.shard_end
        if position.sequence is not None:
            item["kseq"] = position.sequence
        if position.timestamp_ms is not None:
            item["kat"] = position.timestamp_ms
    return item


def _position(item: dict[str, Any]) -> Position | None:
    if "korder" not in item:
        return None
    at = item.get("kat")
    return Position(
        item.get("kseq"),
        int(item.get("ksub", 0)),
        bool(item.get("kend", False)),
        int(at) if at is not None else None,
    )


def _offset(item: dict[str, Any]) -> CommittedOffset:
    return CommittedOffset(
        topic=item["topic"],
        topic_id=item.get("topicId", ""),
        partition=int(item["partition"]),
        offset=int(item["offset"]),
        leader_epoch=int(item.get("leaderEpoch", -1)),
        metadata=item.get("metadata"),
        commit_timestamp_ms=int(item.get("commitTimestamp", 0)),
        position=_position(item),
    )


class OffsetStore:
    def __init__(self, dynamo: Dynamo, deadline_shards: int) -> None:
        self.dynamo = dynamo
        self.deadline_shards = deadline_shards

    def commit(
        self,
        group_id: str,
        offsets: Sequence[CommittedOffset],
        guard: CommitGuard,
        sink: SinkBatch | None = None,
        *,
        forward_only: bool = True,
    ) -> None:
        """Write the offsets, each chunk in one transaction with the guard.

        A commit of up to 99 partitions is all-or-nothing. A larger one is split; every chunk
        is guarded at its own write, so a chunk written after the guard failed is rejected
        (Fenced) while earlier chunks, admitted at their moment, stay. A commit with `sink`
        writes is one transaction (the service checked that it fits): its cancellation raises
        AlreadyApplied, KeyReused or SinkWriteFailed (store/sink_writes.py), else Fenced.
        """
        fence = [_guard_item(guard, self.deadline_shards)]
        room = MAX_TRANSACTION_ITEMS - len(fence)
        # A partition named twice is committed once, at its last offset (Kafka writes both
        # records; the last one wins): one transaction cannot write an item twice.
        puts = [_put(group_id, o, forward_only) for o in distinct(offsets)]
        if sink is not None:
            extra = transaction_items(group_id, sink)
            items = [*fence, *extra, *puts]
            if len(items) > MAX_TRANSACTION_ITEMS:
                raise ValueError(f"a commit with writes is one transaction: {len(items)} items")
            try:
                self.dynamo.transact(items)
            except TransactionCanceled as cancel:
                marker = len(fence)
                old_marker = cancel.old_items[marker] if len(cancel.old_items) > marker else None
                failed = [i for i in cancel.failed_conditions() if i < len(fence)]
                judge_cancellation(
                    sink, marker + 1, cancel.reasons, cancel.messages, old_marker, bool(failed)
                )
                if failed:
                    raise Fenced(failed) from None
                if any(i >= len(items) - len(puts) for i in cancel.failed_conditions()):
                    raise PositionRaced(group_id) from None
                raise
            return
        for start in range(0, max(len(puts), 1), room):
            chunk = puts[start : start + room]
            try:
                self.dynamo.transact([*fence, *chunk])
            except TransactionCanceled as cancel:
                failed = [i for i in cancel.failed_conditions() if i < len(fence)]
                if failed:
                    raise Fenced(failed) from None
                if cancel.failed_conditions():
                    raise PositionRaced(group_id) from None
                raise

    def fetch(
        self, group_id: str, partitions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], CommittedOffset]:
        keys = [schema.offset_key(group_id, t, p) for t, p in dict.fromkeys(partitions)]
        found = self.dynamo.batch_get(keys, consistent=True)
        return {(o.topic, o.partition): o for o in map(_offset, found)}

    def fetch_all(self, group_id: str) -> list[CommittedOffset]:
        found: list[CommittedOffset] = []
        for pk in schema.offset_pks(group_id):
            found.extend(map(_offset, self.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)))
        return sorted(found, key=lambda o: (o.topic, o.partition))

    def delete(self, group_id: str, partitions: Iterable[tuple[str, int]]) -> None:
        unique = dict.fromkeys(partitions)  # a batch may not name one key twice
        self.dynamo.batch_write(deletes=[schema.offset_key(group_id, t, p) for t, p in unique])

    def delete_expired(
        self, group_id: str, expired: Sequence[CommittedOffset], found: StoredGroup | None
    ) -> bool:
        """Delete offsets a retention check found expired, but none committed again since it
        read them (each delete is conditioned on the commit timestamp it read), and only while
        the group item is as it read it (`group`: None if it was absent), so that the decision
        stands on the state it was made on. False when the group moved: that chunk deleted
        nothing, and the next check decides again."""
        key = schema.group_key(group_id)
        group = found.raw if found is not None else None
        if group is None:
            guard = Check(key, "attribute_not_exists(pk)")
        elif "version" in group:
            guard = Check(key, "#v = :v", names={"#v": "version"}, values={":v": group["version"]})
        else:
            guard = Check(
                key, "attribute_exists(pk) AND attribute_not_exists(#v)", {"#v": "version"}
            )
        return self._delete_unchanged(group_id, expired, guard)

    def delete_committed_before(self, group_id: str, before_ms: int) -> int:
        """Delete a deleted group's offsets: those committed at or before `before_ms` (the
        deletion), each only while it is as read. A commit that re-created the group since
        keeps its offsets. Returns how many were found to delete."""
        stale = [o for o in self.fetch_all(group_id) if o.commit_timestamp_ms <= before_ms]
        self._delete_unchanged(group_id, stale, None)
        return len(stale)

    def _delete_unchanged(
        self, group_id: str, offsets: Sequence[CommittedOffset], guard: Check | None
    ) -> bool:
        """Delete `offsets`, each conditioned on the commit timestamp read, in transactions
        with `guard` (False, deleting nothing more, when the guard fails); an offset committed
        again meanwhile is kept."""
        deletes = [
            Delete(
                schema.offset_key(group_id, o.topic, o.partition),
                condition="commitTimestamp = :ts",
                values={":ts": o.commit_timestamp_ms},
            )
            for o in {(o.topic, o.partition): o for o in offsets}.values()
        ]
        fence = [guard] if guard is not None else []
        room = MAX_TRANSACTION_ITEMS - len(fence)
        for start in range(0, len(deletes), room):
            chunk = deletes[start : start + room]
            try:
                self.dynamo.transact([*fence, *chunk])
            except TransactionCanceled as cancel:
                if fence and 0 in cancel.failed_conditions():
                    return False
                # Some were committed again meanwhile: delete the others one by one.
                for delete in chunk:
                    with contextlib.suppress(ConditionFailed):
                        self.dynamo.delete(
                            delete.key, condition=delete.condition, values=delete.values
                        )
        return True

    def delete_all(self, group_id: str) -> int:
        offsets = self.fetch_all(group_id)
        self.delete(group_id, [(o.topic, o.partition) for o in offsets])
        return len(offsets)
