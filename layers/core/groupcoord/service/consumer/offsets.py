"""Offset fencing for consumer groups (KIP-1251; docs/offsets.md).

A member committing with its current epoch may commit any partition; a newer epoch than the
coordinator's is 113 STALE_MEMBER_EPOCH; an older one is accepted only for partitions assigned
to it (or pending revocation) since an epoch no later than the client's. The member item keeps
each held partition's assignment epoch (`assignedAt`); a record without them reads as "all
assigned at the member epoch", as KIP-1251 reads legacy records.
"""

from __future__ import annotations

from collections.abc import Iterator

from ...core.consumer.member import ConsumerGroupMember
from ...core.offsets import consumer_commit_error
from ...errors import Errors
from ...models.offsets import OffsetCommitRequest, OffsetFetchRequestGroup
from ...store.offsets import ConsumerMemberAtEpoch
from ...store.stored_group import StoredGroup
from ..context import ApiContext
from ..fence import Fence
from ..topic_lookup import resolve_topic


def _member(ctx: ApiContext, item: StoredGroup, member_id: str) -> ConsumerGroupMember | None:
    return (
        ctx.store.consumer.member(item.consumer(), member_id, consistent=True)
        if member_id
        else None
    )


def _partitions(ctx: ApiContext, request: OffsetCommitRequest) -> Iterator[tuple[str, int]]:
    """The request's partitions as (topic id, index); "" for a topic the registry lacks."""
    for i, topic in enumerate(request.topics):
        record, _ = resolve_topic(ctx, topic.name, topic.topic_id, f"topics[{i}]")
        topic_id = record.topic_id if record else ""
        yield from ((topic_id, p.partition_index) for p in topic.partitions)


def consumer_fence(ctx: ApiContext, item: StoredGroup, request: OffsetCommitRequest) -> Fence:
    member = _member(ctx, item, request.member_id)
    if member is not None and not ctx.caller.may_act_as(member.principal):
        return Fence(error=Errors.GROUP_AUTHORIZATION_FAILED)
    # Resolved only if the rule looks at them (an older epoch's commit): a generator.
    partitions = _partitions(ctx, request)
    error = consumer_commit_error(member, request.generation_id_or_member_epoch, partitions)
    if error is not None:
        return Fence(error=error)
    assert member is not None
    group = item.consumer()
    # Checked again at the write: the member still exists at the epoch we judged by.
    return Fence(
        guard=ConsumerMemberAtEpoch(
            group.group_id, member.member_id, group.member_shards, member.assignment.epoch
        )
    )


def consumer_fetch_check(
    ctx: ApiContext, item: StoredGroup, request: OffsetFetchRequestGroup
) -> Errors:
    """OffsetFetch stays strict for members (113 / 25); a fetch from outside is always allowed."""
    if request.member_id is None or (request.member_id == "" and request.member_epoch < 0):
        return Errors.NONE
    member = _member(ctx, item, request.member_id)
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID
    if request.member_epoch != member.assignment.epoch:
        return Errors.STALE_MEMBER_EPOCH
    return Errors.NONE
