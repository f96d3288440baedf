"""How one member-based family encodes its items, in one value the shared stores take
(store/member_groups.py, store/install_lease.py): the group item's write as a difference,
its decoding, the member items, and a member's target as an install writes it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .dynamo import Update

G = TypeVar("G")
M = TypeVar("M")


@dataclass(frozen=True)
class FamilyCodec(Generic[G, M]):
    group_type: str
    # (old, new, deadline shards): the group item's write of what changed.
    group_update: Callable[[G, G, int], Update]
    group_from_item: Callable[[Mapping[str, Any]], G]
    is_member: Callable[[Mapping[str, Any]], bool]
    member_from_item: Callable[[Mapping[str, Any]], M]
    # (group id, member shards, member): the member's whole item.
    member_to_item: Callable[[str, int, M], dict[str, Any]]
    # A member write's condition on the member as read: (expression, names, values).
    member_condition: Callable[[M], tuple[str, dict[str, str], dict[str, Any]]]
    # A member's target and whom it waits on, as an install writes them.
    target_values: Callable[[M], tuple[Any, list[Any]]]
