"""Group admin: list-groups, a page at a time (store/groups.py)."""

from __future__ import annotations

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
    ]
    return ListGroupsResponse(
        groups=groups, next_cursor=following.encode() if following is not None else None
    )
