"""Offset retention (offsets.retention.minutes, default 7 days), as Kafka applies it.

- A classic group's offsets expire `retention` after the group became Empty; while it has
  members they never expire.
- A consumer group's offsets of topics it does not subscribe to expire `retention` after their
  commit; subscribed topics never expire (an Empty group subscribes to nothing).
- An empty group whose offsets have all expired is deleted.

The rules are core/offsets.py's (expires_at, plan_retention); this module reads and writes.

The rules are core/offsets.py's (expires_at, plan_retention); this module reads and writes.

Reads are exact: offset-fetch hides an expired offset at once. Storage is cleaned by the
sweeper: a group's first commit arms a `retention` item in the deadline index, and each check
deletes what expired and schedules the next check (at the next expiry, or within an hour).
"""

from __future__ import annotations

from ..core.classic.model import simple_group
from ..core.offsets import (
    MAX_RETENTION_CHECK_INTERVAL_MS,
    CommittedOffset,
    expires_at,
    plan_retention,
)
from ..store.deadlines import Overdue
from ..store.retention import retaining_group
from ..store.store import Store
from ..store.stored_group import StoredGroup
from .context import ApiContext
from .group_admin import delete_group_items


def is_expired(group: StoredGroup | None, offset: CommittedOffset, ctx: ApiContext) -> bool:
    """Whether offset-fetch hides `offset` of the group item `group` (as read) now."""
    if group is None:
        return False
    at = expires_at(retaining_group(group), offset, ctx.settings.offsets_retention)
    return at is not None and ctx.now_ms >= at


def arm(ctx: ApiContext, group: StoredGroup | None, group_id: str) -> None:
    """After a group's first commit: put its retention check in the deadline index."""
    if group is not None and group.header.retention_armed:
        return
    first_check = ctx.now_ms + min(ctx.settings.offsets_retention, MAX_RETENTION_CHECK_INTERVAL_MS)
    ctx.store.retention.arm(group_id, first_check)


def check_retention(store: Store, due: Overdue, now_ms: int) -> None:
    group_id = due.group_id
    assert group_id is not None
    retention = store.settings.offsets_retention
    offsets = store.offsets
    group = store.conversions.read_group(group_id, consistent=True)
    plan = plan_retention(
        retaining_group(group) if group is not None else None,
        offsets.fetch_all(group_id),
        now_ms,
        retention,
    )
    # Every delete below is conditioned on what was just read: an offset committed, or a group
    # changed, since this read keeps its offsets (a commit racing the expiry is never lost).
    if not offsets.delete_expired(group_id, plan.expired, group):
        return  # the group moved: its check stays due and decides again at the next sweep
    next_check = plan.next_check_ms
    # The group item goes only while it is as read (a member joining or a commit re-creating
    # it keeps it; the check then looks again later).
    if plan.delete_group and (
        group is None or store.groups.delete_if_unchanged(group.group_id, group.version)
    ):
        if group is not None:
            delete_group_items(store, group, offsets=False)
        if not offsets.fetch_all(group_id):
            store.retention.disarm(group_id, due.due_ms)
            return
        # A commit landed after the read, before the group item went: its offsets are kept,
        # under a simple group again (offset-fetch reads a group's offsets only while it has a
        # group item), and expire from now on.
        store.retention.recreate_group(simple_group(group_id, store.settings.member_shards, now_ms))
        next_check = min(next_check, now_ms + retention)
    store.retention.schedule_check(group_id, next_check)
