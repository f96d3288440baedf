"""Lazy and swept timers of groups, whatever their type.

A group item carries in `dl` (the deadline index) the next time something about it may be due:
a member's session, a join or sync barrier, a rebalance timeout. Any request that reads the
group and finds `dl <= now` runs the group type's expiry; the sweeper does the same for groups
that get no traffic. Each protocol registers its expiry with `expires_groups_of_type`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..plugins import Registry
from ..store import schema
from ..store.store import Store
from ..sweeper import completes

# (store, group item as read, now_ms) -> None. Must be idempotent and safe under races.
GroupExpiry = Callable[[Store, dict[str, Any], int], None]

_EXPIRIES: Registry[GroupExpiry] = Registry("timer expiry of a group type")
expires_groups_of_type = _EXPIRIES.register


def run_group_expiry(store: Store, group_item: dict[str, Any], now_ms: int) -> None:
    expiry = _EXPIRIES.get(group_item.get("groupType", ""))
    if expiry is not None:
        expiry(store, group_item, now_ms)


@completes(schema.KIND_GROUP)
def _sweep_group(store: Store, index_item: dict[str, Any], now_ms: int) -> None:
    group = store.conversions.read_group_item(index_item["groupId"], consistent=True)
    if group is not None and int(group.get(schema.DEADLINE, now_ms + 1)) <= now_ms:
        run_group_expiry(store, group, now_ms)
