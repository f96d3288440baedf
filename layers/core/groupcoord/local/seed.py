"""Groups written directly with the store's own code, as the protocol leaves them, for the
benchmarks and the tests that need a group of many members without driving every join or
heartbeat: test equipment both may import (bench/ imports nothing from tests/), which the Lambda
layer leaves out with the rest of local/.

Importing it has no side effects (unlike bench/common.py, which sets up the environment of a
benchmark run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from groupcoord import runtime
from groupcoord.core.classic.model import STABLE, ClassicGroup, ClassicMember
from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.consumer.model import ConsumerGroup
from groupcoord.core.consumer.reconciliation import MemberAssignment
from groupcoord.service.consumer.common import reload
from groupcoord.store import capacity, schema
from groupcoord.store.classic.transition import ClassicTransition
from groupcoord.store.codecs.classic import member_items
from groupcoord.store.codecs.consumer import member_to_item
from groupcoord.store.store import Store

# --- classic groups ---


def write_classic_group(
    store: Store,
    group_id: str,
    members: Sequence[ClassicMember],
    *,
    protocol: str,
    rebalance_timeout_ms: int,
    next_check_ms: int,
    generation: int = 1,
    state: str = STABLE,
    sync_deadline_ms: int | None = None,
    subscribed_topics: tuple[str, ...] = (),
    created_at_ms: int = 0,
) -> ClassicGroup:
    """A group of `members` (the first one its leader, all on `protocol`) in `state` at
    `generation`: its member and payload items (BatchWriteItem), then the group item."""
    group = ClassicGroup(
        group_id=group_id,
        state=state,
        generation=generation,
        protocol_type="consumer",
        protocol_name=protocol,
        leader=members[0].member_id,
        member_count=len(members),
        protocol_counts={protocol: len(members)},
        rebalance_timeout_ms=rebalance_timeout_ms,
        sync_deadline_ms=sync_deadline_ms,
        subscribed_topics=subscribed_topics,
        member_shards=store.settings.member_shards,
        next_check_ms=next_check_ms,
        created_at_ms=created_at_ms,
    )
    store.dynamo.batch_write(puts=[i for m in members for i in member_items(group, m)])
    store.classic.commit(ClassicTransition(group=group, expected_version=None))
    return group


# --- consumer-protocol groups (the scale test and bench/scale.py: the real install code over
# --- the in-memory DynamoDB stand-in) ---


def largest_items(store: Store, group_id: str) -> tuple[int, int]:
    """The largest member item and the group item of a group, in bytes (DynamoDB's rules)."""
    group = reload(store.consumer, group_id)
    assert group is not None
    largest = 0
    for pk in schema.member_pks(group_id, group.member_shards):
        for item in store.dynamo.query("pk = :pk", {":pk": pk}):
            largest = max(largest, capacity.item_size(item))
    group_item = store.dynamo.get(schema.group_key(group_id), consistent=True)
    assert group_item is not None
    return largest, capacity.item_size(group_item)


def add_joined_members(
    store: Store,
    group_id: str,
    count: int,
    topics: list[str],
    *,
    session_ms: int,
    rebalance_timeout_ms: int,
    ids: Sequence[str] | None = None,
) -> list[str]:
    """`count` members that joined (epoch bumped, member written) while no install ran yet:
    what a burst of joins leaves for the next install. Their ids: `ids`, else joined-<n>."""
    cs = store.consumer
    group = reload(cs, group_id)
    assert group is not None
    now = runtime.now_ms()
    ids = list(ids) if ids is not None else [f"joined-{i:06d}" for i in range(count)]
    members = [
        ConsumerGroupMember(
            member_id=mid,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=tuple(topics),
            assignment=MemberAssignment(epoch=group.target_epoch),
            session_deadline=now + session_ms,
        )
        for mid in ids
    ]
    put_consumer_members(
        store,
        group,
        members,
        group_epoch=group.group_epoch + count,
        member_count=group.member_count + count,
    )
    return ids


def put_consumer_members(
    store: Store, group: ConsumerGroup, members: Sequence[ConsumerGroupMember], **changes: Any
) -> ConsumerGroup:
    """`members` written as a burst of joins leaves them (their member items, BatchWriteItem),
    then the group with `changes` (one conditional write on the version read): the group as
    written."""
    store.dynamo.batch_write(
        puts=[member_to_item(group.group_id, group.member_shards, m) for m in members]
    )
    return store.consumer.update_group(group, replace(group, **changes))
