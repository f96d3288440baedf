"""Group admin: list-groups, a page at a time (store/groups.py). As Kafka: DESCRIBE on the cluster
lists every group; otherwise the groups the caller may not DESCRIBE are left out, silently.

A plain cursor spells out the last group id read in each shard, the left-out ones included; a
caller whose listing is filtered gets (and may present) only sealed cursors, which name nothing,
and its pages hold `limit` groups it may see each: neither tells how many others there are
(docs/authorization.md)."""

from __future__ import annotations

from collections.abc import Callable

from ..core.acls import AclOperation
from ..errors import BadRequest
from ..models.groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from ..store.groups import GroupDirectory, GroupListing, InvalidCursor, ListingCursor, is_sealed
from .context import ApiContext

# A filtered listing reads on past the groups it leaves out, in batches of this many a shard,
# and at most this many groups an answer (a bound on one request's work: past it, the answer
# ends early, with a cursor).
_FILTERED_BATCH = 100
FILTERED_SCAN_MAX = 10_000


def list_groups(request: ListGroupsRequest, ctx: ApiContext) -> ListGroupsResponse:
    directory = ctx.store.groups
    principal = ctx.caller.principal
    everything = ctx.caller.may_on_cluster(AclOperation.DESCRIBE)
    cursor = _cursor(request.cursor, directory, ctx, sealed_only=not everything)
    # Kafka's filters ignore case; a streams group's NotReady is also named not_ready.
    states = {_state_key(s) for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}

    def wanted(g: GroupListing) -> bool:
        return (not states or _state_key(g.group_state) in states) and (
            not types or g.group_type.lower() in types
        )

    if everything:
        listed, following = directory.page(cursor, request.limit)
        # The filters apply to the page read: the cursor moves on over what they leave out.
        listed = [g for g in listed if wanted(g)]
    else:
        listed, following = _filtered_page(
            directory,
            cursor,
            request.limit,
            lambda g: wanted(g) and ctx.caller.may_on_group(AclOperation.DESCRIBE, g.group_id),
        )
    groups = [
        ListedGroup(
            group_id=g.group_id,
            protocol_type=g.protocol_type,
            group_state=g.group_state,
            group_type=g.group_type,
        )
        for g in listed
    ]
    next_cursor = None
    if following is not None:
        next_cursor = (
            following.encode() if everything else directory.seal(following, principal, ctx.now_ms)
        )
    return ListGroupsResponse(groups=groups, next_cursor=next_cursor)


def _cursor(
    text: str | None, directory: GroupDirectory, ctx: ApiContext, sealed_only: bool
) -> ListingCursor:
    """Where the listing resumes. A caller whose listing the ACLs filter may present only a
    sealed cursor: a plain one spells out group ids, so a forged one would let it probe them."""
    if text is None:
        return ListingCursor.start()
    try:
        if is_sealed(text):
            return directory.unseal(text, ctx.caller.principal, ctx.now_ms)
        if sealed_only:
            raise InvalidCursor("is not a cursor list-groups answered to this caller")
        return ListingCursor.decode(text)
    except InvalidCursor as refused:
        raise BadRequest("cursor", str(refused)) from None


def _filtered_page(
    directory: GroupDirectory,
    cursor: ListingCursor,
    limit: int,
    keep: Callable[[GroupListing], bool],
) -> tuple[list[GroupListing], ListingCursor | None]:
    """Up to `limit` of the groups `keep` lets through, reading on past the others, and the
    cursor right after the last one answered; None when no group it lets through follows. So
    the pages a caller gets depend on the groups it may see alone, never on how many others
    the table holds (up to FILTERED_SCAN_MAX groups read an answer)."""
    found: list[GroupListing] = []
    resume = last = cursor
    batch = min(max(limit + 1, _FILTERED_BATCH), 1000)
    for scanned, (listing, after) in enumerate(directory.entries(cursor, batch)):
        if scanned == FILTERED_SCAN_MAX:
            return found, last
        if keep(listing):
            if len(found) == limit:  # another follows: this page is full, and not the last
                return found, resume
            found.append(listing)
            resume = after
        last = after
    return found, None


def _state_key(state: str) -> str:
    return state.lower().replace("_", "")
