"""Group admin: list-groups, a page at a time (store/groups.py). As Kafka: DESCRIBE on the cluster
lists every group; otherwise the groups the caller may not DESCRIBE are left out, silently.

A plain cursor spells out the last group id read in each shard, the left-out ones included; a
caller whose listing is filtered gets a sealed cursor instead, which names nothing
(docs/authorization.md)."""

from __future__ import annotations

from ..core.acls import AclOperation
from ..errors import BadRequest
from ..models.groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from ..store.groups import InvalidCursor, ListingCursor, is_sealed
from .context import ApiContext


def list_groups(request: ListGroupsRequest, ctx: ApiContext) -> ListGroupsResponse:
    directory = ctx.store.groups
    principal = ctx.caller.principal
    cursor = ListingCursor.start()
    if request.cursor is not None:
        try:
            if is_sealed(request.cursor):
                cursor = directory.unseal(request.cursor, principal, ctx.now_ms)
            else:
                cursor = ListingCursor.decode(request.cursor)
        except InvalidCursor as refused:
            raise BadRequest("cursor", str(refused)) from None
    listed, following = directory.page(cursor, request.limit)
    # The filters apply to the page read: the cursor moves on over what they leave out.
    # Kafka's filters ignore case; a streams group's NotReady is also named not_ready.
    states = {_state_key(s) for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    everything = ctx.caller.may_on_cluster(AclOperation.DESCRIBE)
    groups = [
        ListedGroup(
            group_id=g.group_id,
            protocol_type=g.protocol_type,
            group_state=g.group_state,
            group_type=g.group_type,
        )
        for g in listed
        if (not states or _state_key(g.group_state) in states)
        and (not types or g.group_type.lower() in types)
        # Like the filters, this applies to the page read: the cursor still moves past them.
        and (everything or ctx.caller.may_on_group(AclOperation.DESCRIBE, g.group_id))
    ]
    next_cursor = None
    if following is not None:
        next_cursor = (
            following.encode() if everything else directory.seal(following, principal, ctx.now_ms)
        )
    return ListGroupsResponse(groups=groups, next_cursor=next_cursor)


def _state_key(state: str) -> str:
    return state.lower().replace("_", "")
