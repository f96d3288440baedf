"""Group admin: list-groups, a page at a time (store/groups.py). As Kafka: DESCRIBE on the cluster
lists every group; otherwise the groups the caller may not DESCRIBE are left out, silently."""

from __future__ import annotations

from ..core.acls import AclOperation
from ..errors import BadRequest
from ..models.groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from ..store.groups import InvalidCursor, ListingCursor
from .context import ApiContext


def list_groups(request: ListGroupsRequest, ctx: ApiContext) -> ListGroupsResponse:
    cursor = ListingCursor.start()
    if request.cursor is not None:
        try:
            cursor = ListingCursor.decode(request.cursor)
        except InvalidCursor as refused:
            raise BadRequest("cursor", str(refused)) from None
    listed, following = ctx.store.groups.page(cursor, request.limit)
    # The filters apply to the page read: the cursor moves on over what they leave out.
    states = {s.lower() for s in request.states_filter}
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
        if (not states or g.group_state.lower() in states)
        and (not types or g.group_type.lower() in types)
        # Like the filters, this applies to the page read: the cursor still moves past them.
        and (everything or ctx.caller.may_on_group(AclOperation.DESCRIBE, g.group_id))
    ]
    return ListGroupsResponse(
        groups=groups, next_cursor=following.encode() if following is not None else None
    )
