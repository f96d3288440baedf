"""Who may commit offsets to a group (docs/offsets.md), and the guard each commit is written
under, so that the rule is checked at the moment of the write, not just when read. Each group
type registers its fencer; a missing group and an empty group are handled here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.classic.model import COMPLETING_REBALANCE, GROUP_TYPE, simple_group
from ..errors import Errors
from ..models.offsets import OffsetCommitRequest
from ..plugins import Registry
from ..store.classic_groups import group_from_item
from ..store.offsets import ClassicMemberInGeneration, CommitGuard, CreatesGroup, WhileEmpty
from .context import ApiContext


@dataclass(frozen=True)
class Fence:
    """Either an error for the whole request, or the guard the commit is written under."""

    error: Errors | None = None
    guard: CommitGuard | None = None


# (ctx, group item, request) -> Fence, for a non-empty group or a commit with member info.
CommitFencer = Callable[[ApiContext, dict[str, Any], OffsetCommitRequest], Fence]
_FENCERS: Registry[CommitFencer] = Registry("offset commit fence of a group type")
fences_commits_of_type = _FENCERS.register


def _has_member_info(request: OffsetCommitRequest) -> bool:
    return (
        bool(request.member_id)
        or request.group_instance_id is not None
        or request.generation_id_or_member_epoch >= 0
    )


def commit_fence(
    ctx: ApiContext, item: dict[str, Any] | None, request: OffsetCommitRequest
) -> Fence:
    if item is None:
        if request.generation_id_or_member_epoch < 0 and not request.member_id:
            # Kafka creates a "simple" group for commits from outside any group.
            group = simple_group(request.group_id, ctx.settings.member_shards, ctx.now_ms)
            return Fence(guard=CreatesGroup(group))
        return Fence(error=Errors.GROUP_ID_NOT_FOUND)
    empty = int(item.get("memberCount", 0)) == 0
    if empty and request.generation_id_or_member_epoch < 0 and not request.member_id:
        # An admin (or self-assigning) commit: accepted while the group stays empty.
        return Fence(guard=WhileEmpty(request.group_id))
    fencer = _FENCERS.get(item.get("groupType", ""))
    if fencer is None:
        return Fence(error=Errors.UNKNOWN_MEMBER_ID)
    return fencer(ctx, item, request)


@fences_commits_of_type(GROUP_TYPE)
def _classic_fence(ctx: ApiContext, item: dict[str, Any], request: OffsetCommitRequest) -> Fence:
    """The strict rule: a known member of the current generation, not while the group waits
    for the leader's assignment (27)."""
    if not _has_member_info(request):
        return Fence(error=Errors.UNKNOWN_MEMBER_ID)
    group = group_from_item(item)
    groups = ctx.store.classic
    member = groups.member(group, request.member_id)
    instance = request.group_instance_id
    if member is None or member.pending:
        owner = groups.instance_owner(group.group_id, instance) if instance else None
        fenced = owner is not None and owner != request.member_id
        return Fence(error=Errors.FENCED_INSTANCE_ID if fenced else Errors.UNKNOWN_MEMBER_ID)
    if instance and member.instance_id != instance:
        return Fence(error=Errors.FENCED_INSTANCE_ID)
    if request.generation_id_or_member_epoch != group.generation:
        return Fence(error=Errors.ILLEGAL_GENERATION)
    if group.state == COMPLETING_REBALANCE:
        return Fence(error=Errors.REBALANCE_IN_PROGRESS)
    # The state check (27 while the assignment is awaited) needs no condition at the write: a
    # generation never goes back to CompletingRebalance once Stable.
    return Fence(
        guard=ClassicMemberInGeneration(
            group.group_id, member.member_id, group.member_shards, group.generation, ctx.now_ms
        )
    )
