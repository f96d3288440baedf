"""Who may commit offsets to a group (docs/offsets.md), and the guard each commit is written
under, so that the rule is checked at the moment of the write, not just when read. A missing
group and an empty group are decided here; a group with members by its type's rule
(group_types.py)."""

from __future__ import annotations

from ..core.classic.model import simple_group
from ..errors import Errors
from ..models.offsets import OffsetCommitRequest
from ..store.offsets import CreatesGroup, WhileEmpty
from ..store.stored_group import StoredGroup
from .context import ApiContext
from .fence import Fence
from .group_types import group_type_of


def commit_fence(ctx: ApiContext, item: StoredGroup | None, request: OffsetCommitRequest) -> Fence:
    if item is None:
        if request.generation_id_or_member_epoch < 0 and not request.member_id:
            # Kafka creates a "simple" group for commits from outside any group.
            group = simple_group(request.group_id, ctx.settings.member_shards, ctx.now_ms)
            return Fence(guard=CreatesGroup(group))
        return Fence(error=Errors.GROUP_ID_NOT_FOUND)
    empty = item.header.member_count == 0
    if empty and request.generation_id_or_member_epoch < 0 and not request.member_id:
        # An admin (or self-assigning) commit: accepted while the group stays empty.
        return Fence(guard=WhileEmpty(request.group_id))
    group_type = group_type_of(item)
    if group_type is None:
        return Fence(error=Errors.UNKNOWN_MEMBER_ID)
    return group_type.fence_commit(ctx, item, request)
