"""Lazy and swept timers of groups, whatever their type.

A group item carries in `dl` (the deadline index) the next time something about it may be due:
a member's session, a join or sync barrier, a rebalance timeout. Any request that reads the
group and finds `dl <= now` runs the group type's expiry; the sweeper does the same for groups
that get no traffic. Each type's expiry is in group_types.py.
"""

from __future__ import annotations

from ..store.deadlines import Overdue
from ..store.store import Store
from ..store.stored_group import StoredGroup
from .group_types import group_type_of


def run_group_expiry(store: Store, found: StoredGroup, now_ms: int) -> None:
    group_type = group_type_of(found)
    if group_type is not None:
        group_type.expire(store, found, now_ms)


def sweep_group(store: Store, due_item: Overdue, now_ms: int) -> None:
    assert due_item.group_id is not None
    group = store.conversions.read_group(due_item.group_id, consistent=True)
    due = group.header.deadline if group is not None else None
    if group is not None and due is not None and due <= now_ms:
        run_group_expiry(store, group, now_ms)
