"""Group admin: list-groups."""

from __future__ import annotations

from ..models.groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from .context import ApiContext


def list_groups(request: ListGroupsRequest, ctx: ApiContext) -> ListGroupsResponse:
    states = {s.lower() for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    groups = [
        ListedGroup(
            group_id=g.group_id,
            protocol_type=g.protocol_type,
            group_state=g.group_state,
            group_type=g.group_type,
        )
        for g in ctx.store.groups.list()
        if (not states or g.group_state.lower() in states)
        and (not types or g.group_type.lower() in types)
    ]
    return ListGroupsResponse(groups=groups)
