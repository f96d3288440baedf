"""delete-groups for groups of either type: refused while the group has members (68), and, as
Kafka, for a caller without DELETE on the group (30, the group untouched)."""

from __future__ import annotations

from ..core.acls import AclOperation
from ..errors import Errors
from ..models.groups import DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse
from ..store.deadlines import Overdue
from ..store.store import Store
from ..store.stored_group import StoredGroup
from .context import ApiContext
from .group_timers import run_group_expiry
from .group_types import group_type_of


def delete_groups(request: DeleteGroupsRequest, ctx: ApiContext) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(
        results=[_delete(group_id, ctx) for group_id in request.groups_names]
    )


def _delete(group_id: str, ctx: ApiContext) -> DeletableGroupResult:
    if not ctx.caller.may_on_group(AclOperation.DELETE, group_id):
        return DeletableGroupResult(group_id=group_id, error_code=Errors.GROUP_AUTHORIZATION_FAILED)
    found = ctx.store.conversions.read_group(group_id, consistent=True)
    due = found.header.deadline if found is not None else None
    if found is not None and due is not None and due <= ctx.now_ms:
        run_group_expiry(ctx.store, found, ctx.now_ms)  # dead members do not block deletion
        found = ctx.store.conversions.read_group(group_id, consistent=True)
    if found is None:
        marker = ctx.store.cleanups.read(group_id)
        if marker is not None:  # a deletion that died before its cleanup: the retry finishes it
            finish_deletion(ctx.store, marker.group, marker.deleted_at_ms, late=True)
        return DeletableGroupResult(
            group_id=group_id,
            error_code=Errors.GROUP_ID_NOT_FOUND,
            error_message=f"Group {group_id} not found.",
        )
    if found.header.member_count > 0:
        return DeletableGroupResult(
            group_id=group_id,
            error_code=Errors.NON_EMPTY_GROUP,
            error_message=f"Group {group_id} is not empty.",
        )
    if not ctx.store.cleanups.delete_group(found, ctx.now_ms, CLEANUP_GRACE_MS):
        return DeletableGroupResult(
            group_id=group_id,
            error_code=Errors.NON_EMPTY_GROUP,
            error_message=f"Group {group_id} changed while being deleted; it may not be empty.",
        )
    finish_deletion(ctx.store, found, ctx.now_ms)
    return DeletableGroupResult(group_id=group_id)


# When the sweeper finishes a deletion's cleanup if the request did not (it died): soon, but
# after the request has surely done it (both doing it is harmless: every step is idempotent).
CLEANUP_GRACE_MS = 5_000


def finish_deletion(
    store: Store, deleted: StoredGroup, deleted_at_ms: int, *, late: bool = False
) -> None:
    """What a deleted group leaves behind, then its cleanup marker (store/group_cleanup.py).
    Offsets committed after the deletion (a commit re-created the group) are kept. `late`:
    finishing a deletion a dead request left; if the group id is in use again by then, its
    new items, subscriptions and retention check are the new group's and stay."""
    group_id = deleted.group_id
    if not late or store.conversions.read_group(group_id, consistent=True) is None:
        delete_group_items(store, deleted, offsets=False)
        store.retention.delete_check(group_id)
    store.offsets.delete_committed_before(group_id, deleted_at_ms)
    store.cleanups.done(group_id, deleted_at_ms)


def finish_cleanup(store: Store, due: Overdue, now_ms: int) -> None:
    """The sweeper's completion of a cleanup marker a dead delete-groups left."""
    assert due.group_id is not None
    marker = store.cleanups.read(due.group_id)
    if marker is None:
        return  # finished meanwhile
    finish_deletion(store, marker.group, marker.deleted_at_ms, late=True)


def delete_group_items(store: Store, found: StoredGroup, *, offsets: bool = True) -> None:
    """Everything a deleted group leaves behind: its type's items, its subscriptions in the
    topic registry, its committed offsets and its retention check (`offsets=False`:
    the retention check deletes those itself, conditionally)."""
    deleted = found.header
    group_id = deleted.group_id
    group_type = group_type_of(found)
    if group_type is not None:
        group_type.clean_up(store, found)
    for topic in deleted.subscribed_topics:
        store.topics.unsubscribe(topic, group_id)
    store.topics.set_regex(group_id, None)
    if offsets:
        store.offsets.delete_all(group_id)
        store.retention.delete_check(group_id)
