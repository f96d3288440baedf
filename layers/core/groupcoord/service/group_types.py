"""The group types, side by side: what the shared code (timers and the sweeper,
delete-groups, offsets) calls for a group of each type. The table is the only place that names
both protocols' modules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.classic.model import GROUP_TYPE as CLASSIC
from ..errors import Errors
from ..models.offsets import OffsetCommitRequest, OffsetFetchRequestGroup
from ..store.store import Store
from ..store.stored_group import StoredGroup
from .classic.common import delete_classic_group_items, expire_classic_group
from .classic.offsets import classic_fence
from .consumer.common import GROUP_TYPE as CONSUMER
from .consumer.expiry import delete_consumer_group_items, expire_consumer_group
from .consumer.offsets import consumer_fence, consumer_fetch_check
from .context import ApiContext
from .fence import Fence
from .streams.common import GROUP_TYPE as STREAMS
from .streams.expiry import delete_streams_group_items, expire_streams_group
from .streams.offsets import streams_fence, streams_fetch_check


@dataclass(frozen=True)
class GroupType:
    # (store, group as read, now_ms): run the group's due timers. Idempotent, race-safe.
    expire: Callable[[Store, StoredGroup, int], object]
    # (store, group as read): delete everything of a deleted group but its group item.
    clean_up: Callable[[Store, StoredGroup], None]
    # The commit rule for a group with members, or a commit that names a member.
    fence_commit: Callable[[ApiContext, StoredGroup, OffsetCommitRequest], Fence]
    # The offset-fetch rule for a member's fetch (None: every fetch is allowed).
    check_fetch: Callable[[ApiContext, StoredGroup, OffsetFetchRequestGroup], Errors] | None


GROUP_TYPES: dict[str, GroupType] = {
    CLASSIC: GroupType(
        expire=expire_classic_group,
        clean_up=delete_classic_group_items,
        fence_commit=classic_fence,
        check_fetch=None,
    ),
    CONSUMER: GroupType(
        expire=expire_consumer_group,
        clean_up=delete_consumer_group_items,
        fence_commit=consumer_fence,
        check_fetch=consumer_fetch_check,
    ),
    STREAMS: GroupType(
        expire=expire_streams_group,
        clean_up=delete_streams_group_items,
        fence_commit=streams_fence,
        check_fetch=streams_fetch_check,
    ),
}


def group_type_of(found: StoredGroup) -> GroupType | None:
    return GROUP_TYPES.get(found.group_type)
