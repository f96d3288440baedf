"""The classic group's commit rule: a known member of the current generation, not while the
group waits for the leader's assignment (Kafka's ClassicGroup.validateOffsetCommit)."""

from __future__ import annotations

from ...core.offsets import classic_commit_error
from ...errors import Errors
from ...models.offsets import OffsetCommitRequest
from ...store.offsets import ClassicMemberInGeneration
from ...store.stored_group import StoredGroup
from ..context import ApiContext
from ..fence import Fence, has_member_info
from .common import claimed_instance_owner


def classic_fence(ctx: ApiContext, item: StoredGroup, request: OffsetCommitRequest) -> Fence:
    """The strict rule: a known member of the current generation, not while the group waits
    for the leader's assignment (27)."""
    if not has_member_info(request):
        return Fence(error=Errors.UNKNOWN_MEMBER_ID)
    group = item.classic()
    member = ctx.store.classic.member(group, request.member_id)
    if member is not None and not ctx.caller.may_act_as(member.principal):
        return Fence(error=Errors.GROUP_AUTHORIZATION_FAILED)
    instance = request.group_instance_id
    owner = claimed_instance_owner(ctx.store, group, member, instance)
    error = classic_commit_error(
        group, member, request.member_id, instance, owner, request.generation_id_or_member_epoch
    )
    if error is not None:
        return Fence(error=error)
    assert member is not None
    # The state check (27 while the assignment is awaited) needs no condition at the write: a
    # generation never goes back to CompletingRebalance once Stable.
    return Fence(
        guard=ClassicMemberInGeneration(
            group.group_id, member.member_id, group.member_shards, group.generation, ctx.now_ms
        )
    )
