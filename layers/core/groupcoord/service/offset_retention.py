"""Offset retention (offsets.retention.minutes, default 7 days), as Kafka applies it.

- A classic group's offsets expire `retention` after the group became Empty; while it has
  members they never expire.
- A consumer group's offsets of topics it does not subscribe to expire `retention` after their
  commit; subscribed topics never expire (an Empty group subscribes to nothing).
- An empty group whose offsets have all expired is deleted.

Reads are exact: offset-fetch hides an expired offset at once. Storage is cleaned by the
sweeper: a group's first commit arms a `retention` item in the deadline index, and each check
deletes what expired and schedules the next check (at the next expiry, or within an hour).
"""

from __future__ import annotations

from typing import Any

from ..core.classic.model import simple_group
from ..store import schema
from ..store.offsets import CommittedOffset
from ..store.retention import KIND
from ..store.store import Store
from ..sweeper import completes
from .context import ApiContext
from .group_admin import delete_group_items

# However far the next expiry, look again within this long: a group may have emptied since.
MAX_CHECK_INTERVAL_MS = 3_600_000


def expires_at(group: dict[str, Any], offset: CommittedOffset, retention_ms: int) -> int | None:
    """When `offset` expires, or None while it cannot (the group holds on to it)."""
    if group.get("groupType") == "consumer":
        if offset.topic in set(group.get("subscribedTopics") or ()):
            return None
        return offset.commit_timestamp_ms + retention_ms
    if int(group.get("memberCount", 0)) > 0 or group.get("emptySinceMs") is None:
        return None
    return int(group["emptySinceMs"]) + retention_ms


def is_expired(group: dict[str, Any] | None, offset: CommittedOffset, ctx: ApiContext) -> bool:
    if group is None:
        return False
    at = expires_at(group, offset, ctx.settings.offsets_retention)
    return at is not None and ctx.now_ms >= at


def arm(ctx: ApiContext, group: dict[str, Any] | None, group_id: str) -> None:
    """After a group's first commit: put its retention check in the deadline index."""
    if group is not None and group.get("retentionArmed"):
        return
    first_check = ctx.now_ms + min(ctx.settings.offsets_retention, MAX_CHECK_INTERVAL_MS)
    ctx.store.retention.arm(group_id, first_check)


@completes(KIND)
def check_retention(store: Store, index_item: dict[str, Any], now_ms: int) -> None:
    group_id = index_item["groupId"]
    retention = store.settings.offsets_retention
    offsets = store.offsets
    group = store.conversions.read_group_item(group_id, consistent=True)
    committed = offsets.fetch_all(group_id)
    # Every delete below is conditioned on what was just read: an offset committed, or a group
    # changed, since this read keeps its offsets (a commit racing the expiry is never lost).
    if group is None:
        # Offsets with no group item (a group deleted while a commit raced it): they expire
        # by their commit time.
        expiries = {o: o.commit_timestamp_ms + retention for o in committed}
    else:
        expiries = {o: expires_at(group, o, retention) for o in committed}
    expired = [o for o, at in expiries.items() if at is not None and at <= now_ms]
    if not offsets.delete_expired(group_id, expired, group):
        return  # the group moved: its check stays due and decides again at the next sweep
    remaining = [at for at in expiries.values() if at is None or at > now_ms]
    empty = group is None or int(group.get("memberCount", 0)) == 0
    # The group item goes only while it is as read (a member joining or a commit re-creating
    # it keeps it; the check then looks again later).
    if (
        not remaining
        and empty
        and (group is None or store.retention.delete_group_if_unchanged(group))
    ):
        if group is not None:
            delete_group_items(store, group, offsets=False)
        if not offsets.fetch_all(group_id):
            store.retention.disarm(group_id, index_item[schema.DEADLINE])
            return
        # A commit landed after the read, before the group item went: its offsets are kept,
        # under a simple group again (offset-fetch reads a group's offsets only while it has a
        # group item), and expire from now on.
        store.retention.recreate_group(simple_group(group_id, store.settings.member_shards, now_ms))
        remaining = [now_ms + retention]
    upcoming = [at for at in remaining if at is not None]
    next_check = min([now_ms + min(retention, MAX_CHECK_INTERVAL_MS), *upcoming])
    store.retention.schedule_check(group_id, next_check)
