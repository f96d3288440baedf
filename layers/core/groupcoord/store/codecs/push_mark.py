"""A member item's push mark (core/modern/model.py's push_connection, push_until_ms): written
by `$connect` and cleared by `$disconnect` (store/push.py), carried by every write of the member
so that a whole-item put keeps it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.modern.model import ModernGroupMember

PUSH_CONNECTION = "pushConn"
PUSH_UNTIL = "pushUntil"


def push_mark_attributes(m: ModernGroupMember) -> dict[str, Any]:
    """The mark's attributes of `m`'s item (none without a connection)."""
    if not m.push_connection:
        return {}
    return {PUSH_CONNECTION: m.push_connection, PUSH_UNTIL: m.push_until_ms}


def push_mark_fields(item: Mapping[str, Any]) -> dict[str, Any]:
    """The member model's fields of the mark on `item`."""
    return {
        "push_connection": str(item.get(PUSH_CONNECTION) or ""),
        "push_until_ms": int(item.get(PUSH_UNTIL, 0)),
    }
