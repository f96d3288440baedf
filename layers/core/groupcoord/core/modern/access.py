"""The group a member-based heartbeat acts on (Kafka's getOrMaybeCreate*Group): each family
passes its `Conversion`, what it does with a classic group found under its id."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...errors import Errors
from .refusal import Refusal

CLASSIC = "classic"


class GroupAccess(Enum):
    USE = "use"  # a group of the family's type: settle what is due and go on
    CREATE = "create"  # none yet: a join creates it
    # An empty classic group: a join replaces it (its offsets kept, keyed by the group id).
    REPLACE = "replace"
    UPGRADE = "upgrade"  # a classic group with members: a join upgrades it first


@dataclass(frozen=True)
class Conversion:
    """A family's rule for the group types it meets: its own `group_type`, how its refusal
    names it (`kind`), and whether a join upgrades a classic group with members (the
    consumer protocol's online migration) or is refused."""

    group_type: str
    kind: str
    upgrades_classic: bool


def plan_group_access(
    group_id: str, group_type: str | None, member_count: int, member_epoch: int, rule: Conversion
) -> GroupAccess | Refusal:
    """`group_type` is the item's (None: no group). A missing group, or an empty classic one,
    is created (replaced) only by a join; a classic group with members only upgraded by one,
    where the family upgrades; anything else is 69."""
    if group_type == rule.group_type:
        return GroupAccess.USE
    if group_type is None or (group_type == CLASSIC and member_count == 0):
        if member_epoch != 0:
            return Refusal(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        return GroupAccess.CREATE if group_type is None else GroupAccess.REPLACE
    if rule.upgrades_classic and member_epoch == 0 and group_type == CLASSIC:
        return GroupAccess.UPGRADE
    return Refusal(Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a {rule.kind}.")
