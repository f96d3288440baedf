"""Offset fencing for consumer groups (KIP-1251; docs/offsets.md).

A member committing with its current epoch may commit any partition; a newer epoch than the
coordinator's is 113 STALE_MEMBER_EPOCH; an older one is accepted only for partitions assigned
to it (or pending revocation) since an epoch no later than the client's. The member item keeps
each held partition's assignment epoch (`assignedAt`); a record without them reads as "all
assigned at the member epoch", as KIP-1251 reads legacy records.
"""

from __future__ import annotations

from typing import Any

from ..core.consumer.member import ConsumerGroupMember
from ..errors import Errors
from ..models.offsets import OffsetCommitRequest, OffsetFetchRequestGroup
from ..store.consumer_groups import group_from_item
from ..store.offsets import ConsumerMemberAtEpoch
from .context import ApiContext
from .offset_fencing import Fence, fences_commits_of_type
from .offsets import checks_fetches_of_type, resolve_topic

GROUP_TYPE = "consumer"


def _member(ctx: ApiContext, item: dict[str, Any], member_id: str) -> ConsumerGroupMember | None:
    return (
        ctx.store.consumer.member(group_from_item(item), member_id, consistent=True)
        if member_id
        else None
    )


@fences_commits_of_type(GROUP_TYPE)
def _consumer_fence(ctx: ApiContext, item: dict[str, Any], request: OffsetCommitRequest) -> Fence:
    member = _member(ctx, item, request.member_id)
    if member is None:
        return Fence(error=Errors.UNKNOWN_MEMBER_ID)
    client_epoch = request.generation_id_or_member_epoch
    member_epoch = member.assignment.epoch
    if member.classic is not None and client_epoch != member_epoch:
        # A classic-protocol member (of a mixed group) keeps the strict generation rule.
        return Fence(error=Errors.ILLEGAL_GENERATION)
    if client_epoch > member_epoch:
        return Fence(error=Errors.STALE_MEMBER_EPOCH)
    if client_epoch < member_epoch:
        # KIP-1251: an older epoch may commit only partitions it held since then.
        for i, topic in enumerate(request.topics):
            record, _ = resolve_topic(ctx, topic.name, topic.topic_id, f"topics[{i}]")
            for partition in topic.partitions:
                since = member.assignment.assignment_epoch(
                    record.topic_id if record else "", partition.partition_index
                )
                if since is None or since > client_epoch:
                    return Fence(error=Errors.STALE_MEMBER_EPOCH)
    group = group_from_item(item)
    # Checked again at the write: the member still exists at the epoch we judged by.
    return Fence(
        guard=ConsumerMemberAtEpoch(
            group.group_id, member.member_id, group.member_shards, member_epoch
        )
    )


@checks_fetches_of_type(GROUP_TYPE)
def _consumer_fetch_check(
    ctx: ApiContext, item: dict[str, Any], request: OffsetFetchRequestGroup
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
