"""describe-groups (classic groups; a missing or non-classic group answers 69). A group the
caller may not DESCRIBE answers 30 alone, unread; the others are described."""

from __future__ import annotations

from ...core.acls import AclOperation
from ...core.classic.model import STABLE
from ...errors import Errors
from ...models.groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from ..classic_group import NotClassic, load, settle
from ..context import ApiContext
from ..refusals import group_operations

# Reads of the group and its members until they agree (see _describe).
SNAPSHOT_ATTEMPTS = 3


def describe_groups(request: DescribeGroupsRequest, ctx: ApiContext) -> DescribeGroupsResponse:
    asked = request.include_authorized_operations
    return DescribeGroupsResponse(
        groups=[_describe(group_id, ctx, asked) for group_id in request.groups]
    )


def _describe(group_id: str, ctx: ApiContext, asked: bool) -> DescribedGroup:
    if not ctx.caller.may_on_group(AclOperation.DESCRIBE, group_id):
        # Kafka's DescribeGroupsResponse.groupError: the code, no state, no message.
        return DescribedGroup(group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    try:
        group = load(ctx.store, group_id)
    except NotClassic:
        group = None
    if group is None:
        return DescribedGroup(
            group_id=group_id,
            error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} not found.",
            group_state="Dead",
        )
    group = settle(ctx.store, group, ctx.now_ms)
    # The group item and the member items are separate reads: a transition committed between
    # them (a member expired, another joined) would show the old state with the new members,
    # e.g. Stable with a member gone and the old assignments. The member count tells; read
    # both again (a bounded number of times: under a join storm, the last read is shown).
    for attempt in range(SNAPSHOT_ATTEMPTS):
        listed = ctx.store.classic.members(group, payloads=group.state == STABLE)
        joined = [m for m in listed if not m.pending]
        if len(joined) == group.member_count or attempt == SNAPSHOT_ATTEMPTS - 1:
            break
        try:
            fresh = load(ctx.store, group_id)
        except NotClassic:
            fresh = None
        if fresh is None:
            break
        group = fresh
    stable = group.state == STABLE
    members = [
        DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            principal=m.principal,
            # Kafka shows metadata and assignments only in Stable.
            member_metadata=m.metadata_for(group.protocol_name) if stable else b"",
            member_assignment=(
                m.assignment if stable and m.assignment_generation == group.generation else b""
            ),
        )
        # Metadata and assignments (on the payload items) are read only when shown.
        for m in sorted(joined, key=lambda m: m.member_id)
    ]
    return DescribedGroup(
        group_id=group_id,
        group_state=group.state,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=members,
        # Only a described group has them (Kafka's): a 69 keeps the "not asked" value.
        authorized_operations=group_operations(ctx, group_id, asked),
    )
