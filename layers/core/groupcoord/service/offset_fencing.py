"""Who may commit offsets to a group (PROTOCOL.md "Offsets"), as DynamoDB fence items.

A fence is the list of ConditionCheck / conditional Update items that go into every commit
transaction, so that the rule is checked at the moment of the write, not just when read. Each
group type registers its fencer; a missing group and an empty group are handled here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.classic.model import COMPLETING_REBALANCE, GROUP_TYPE, ClassicGroup
from ..errors import Errors
from ..models.offsets import OffsetCommitRequest
from ..plugins import Registry
from ..settings import Settings
from ..store import schema
from ..store.classic_groups import ClassicGroupStore, group_from_item, group_to_item
from ..store.dynamo import Check, Put, TransactItem, Update
from .context import ApiContext


@dataclass
class Fence:
    """Either an error for the whole request, or the items that guard the write."""

    error: Errors | None = None
    items: list[TransactItem] = field(default_factory=list)


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


def simple_group_item(group_id: str, settings: Settings, now_ms: int) -> dict[str, Any]:
    """The group item of a "simple" group: Kafka's group for commits from outside any group
    (an Empty classic group with no members)."""
    simple = ClassicGroup(
        group_id=group_id,
        member_shards=settings.member_shards,
        created_at_ms=now_ms,
        empty_since_ms=now_ms,
        version=1,
    )
    return group_to_item(simple, settings.deadline_shards)


def commit_fence(
    ctx: ApiContext, item: dict[str, Any] | None, request: OffsetCommitRequest
) -> Fence:
    if item is None:
        if request.generation_id_or_member_epoch < 0 and not request.member_id:
            # Kafka creates a "simple" group for commits from outside any group.
            put = Put(
                simple_group_item(request.group_id, ctx.settings, ctx.now_ms),
                condition="attribute_not_exists(pk)",
            )
            return Fence(items=[put])
        return Fence(error=Errors.GROUP_ID_NOT_FOUND)
    empty = int(item.get("memberCount", 0)) == 0
    if empty and request.generation_id_or_member_epoch < 0 and not request.member_id:
        # An admin (or self-assigning) commit: accepted while the group stays empty.
        return Fence(
            items=[
                Check(
                    schema.group_key(request.group_id),
                    "memberCount = :zero",
                    values={":zero": 0},
                )
            ]
        )
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
    groups = ClassicGroupStore(ctx.store.dynamo, ctx.settings.deadline_shards)
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
    key = schema.member_key(group.group_id, member.member_id, group.member_shards)
    # The generation check rides on the member item alone (DESIGN.md 4b: a check on the group
    # item would bill its key for every commit). `memberGeneration` is stamped on every member
    # when a barrier closes with it, so a commit of generation g is admitted exactly while the
    # member is still in g: during the next rebalance too, as in Kafka, and never after it.
    # The state check (27 while the assignment is awaited) needs no condition: a generation
    # never goes back to CompletingRebalance once Stable.
    return Fence(
        items=[
            Update(
                key,
                "SET sessionDeadline = expiryMs + :now",
                values={":now": ctx.now_ms, ":false": False, ":g": group.generation},
                condition="attribute_exists(pk) AND pending = :false AND memberGeneration = :g",
            ),
        ]
    )
