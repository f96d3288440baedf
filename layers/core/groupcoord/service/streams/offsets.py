"""Offset fencing for streams groups (core/streams/offsets.py; docs/streams.md): the rule's
reads (the member, and the topology's topics only for an older epoch's commit) and its
guard at the write, the member still at the epoch judged by (as a consumer member's)."""

from __future__ import annotations

import functools

from ...core.streams.configuration import readable_counts, resolve_sources
from ...core.streams.member import StreamsGroupMember
from ...core.streams.offsets import streams_commit_error
from ...errors import Errors
from ...models.offsets import OffsetCommitRequest, OffsetFetchRequestGroup
from ...store.offsets import ConsumerMemberAtEpoch
from ...store.stored_group import StoredGroup
from ..context import ApiContext
from ..fence import Fence


def _member(ctx: ApiContext, item: StoredGroup, member_id: str) -> StreamsGroupMember | None:
    if not member_id:
        return None
    return ctx.store.streams.member(item.streams(), member_id, consistent=True)


def _readers(ctx: ApiContext, group_id: str) -> dict[str, set[str]]:
    """Topic name -> the sub-topologies whose tasks read it."""
    topology = ctx.store.streams.topology(group_id)
    if topology is None:
        return {}
    regexes = any(s.source_topic_regex for s in topology.subtopologies)
    counts = readable_counts(ctx.store.topics.list()) if regexes else {}
    internal = topology.internal_topics()
    readers: dict[str, set[str]] = {}
    for s in topology.subtopologies:
        topics = {*s.source_topics, *s.repartition_source_names}
        topics.update(resolve_sources(s, internal, counts))
        for topic in topics:
            readers.setdefault(topic, set()).add(s.subtopology_id)
    return readers


def streams_fence(ctx: ApiContext, item: StoredGroup, request: OffsetCommitRequest) -> Fence:
    member = _member(ctx, item, request.member_id)
    if member is not None and not ctx.caller.may_act_as(member.principal):
        return Fence(error=Errors.GROUP_AUTHORIZATION_FAILED)
    group = item.streams()
    readers = functools.cache(lambda: _readers(ctx, group.group_id))
    partitions = (
        (topic.name, p.partition_index) for topic in request.topics for p in topic.partitions
    )
    error = streams_commit_error(
        member,
        request.generation_id_or_member_epoch,
        partitions,
        lambda topic: readers().get(topic, ()),
    )
    if error is not None:
        return Fence(error=error)
    assert member is not None
    return Fence(
        guard=ConsumerMemberAtEpoch(
            group.group_id, member.member_id, group.member_shards, member.epoch
        )
    )


def streams_fetch_check(
    ctx: ApiContext, item: StoredGroup, request: OffsetFetchRequestGroup
) -> Errors:
    """A member's fetch needs its exact epoch (113) and its membership (25); a fetch from
    outside the group (an admin's) is always allowed."""
    if request.member_id is None or (request.member_id == "" and request.member_epoch < 0):
        return Errors.NONE
    member = _member(ctx, item, request.member_id)
    if member is None:
        return Errors.UNKNOWN_MEMBER_ID
    if request.member_epoch != member.epoch:
        return Errors.STALE_MEMBER_EPOCH
    return Errors.NONE
