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

import contextlib
from typing import Any

from ..store import schema
from ..store.dynamo import ConditionFailed, Update
from ..store.offsets import CommittedOffset, OffsetStore
from ..store.store import Store
from ..sweeper import completes
from .context import ApiContext
from .group_admin import delete_group_items
from .offset_fencing import simple_group_item

KIND = "offset-retention"
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
    ctx.store.dynamo.put(_check_item(group_id, first_check, ctx.settings.deadline_shards))
    with contextlib.suppress(ConditionFailed):
        ctx.store.dynamo.update(
            Update(
                schema.group_key(group_id),
                "SET retentionArmed = :armed",
                values={":armed": True},
                condition="attribute_exists(pk)",
            )
        )


def _recreate_simple_group(store: Store, group_id: str, now_ms: int) -> None:
    with contextlib.suppress(ConditionFailed):  # a commit re-created it already
        store.dynamo.put(
            simple_group_item(group_id, store.settings, now_ms),
            condition="attribute_not_exists(pk)",
        )


def _check_item(group_id: str, at_ms: int, shards: int) -> dict[str, Any]:
    return {
        **schema.retention_key(group_id),
        "kind": KIND,
        "groupId": group_id,
        schema.DEADLINE: at_ms,
        schema.DEADLINE_SHARD: schema.deadline_shard_value(f"{group_id}/retention", shards),
    }


@completes(KIND)
def check_retention(store: Store, index_item: dict[str, Any], now_ms: int) -> None:
    group_id = index_item["groupId"]
    retention = store.settings.offsets_retention
    offsets = OffsetStore(store.dynamo)
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
    if not remaining and (group is None or int(group.get("memberCount", 0)) == 0):
        with contextlib.suppress(ConditionFailed):
            if group is not None:
                store.dynamo.delete(
                    schema.group_key(group_id),
                    condition="#version = :version AND memberCount = :zero",
                    names={"#version": "version"},
                    values={":version": group.get("version", 0), ":zero": 0},
                )
                delete_group_items(store, group, offsets=False)
            if not offsets.fetch_all(group_id):
                # Unless a commit re-armed it meanwhile (a new check item: another `dl`).
                with contextlib.suppress(ConditionFailed):
                    store.dynamo.delete(
                        schema.retention_key(group_id),
                        condition="#dl = :dl",
                        names={"#dl": schema.DEADLINE},
                        values={":dl": index_item[schema.DEADLINE]},
                    )
                return
            # A commit landed after the read, before the group item went: its offsets are
            # kept, under a simple group again (offset-fetch reads a group's offsets only
            # while it has a group item), and expire from now on.
            _recreate_simple_group(store, group_id, now_ms)
            remaining = [now_ms + retention]
    upcoming = [at for at in remaining if at is not None]
    next_check = min([now_ms + min(retention, MAX_CHECK_INTERVAL_MS), *upcoming])
    store.dynamo.put(_check_item(group_id, next_check, store.settings.deadline_shards))
