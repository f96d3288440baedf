"""The deadline index: every item with a due time (member sessions, rebalance timers, topic
changes, retention checks) is in it, spread over `deadline_shards` index partitions, and the
sweeper reads what is overdue from it (docs/table-layout.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import schema
from .dynamo import Dynamo


@dataclass(frozen=True)
class Overdue:
    """An item of the deadline index whose time came: what it stands for (`kind`), the group
    it belongs to, if any, and when it was due. `item` is the stored item, for the store."""

    kind: str
    group_id: str | None
    due_ms: int
    item: dict[str, Any] = field(repr=False, compare=False)


def _overdue(item: dict[str, Any]) -> Overdue:
    return Overdue(
        kind=item.get("kind", ""),
        group_id=item.get("groupId"),
        due_ms=int(item[schema.DEADLINE]),
        item=item,
    )


class DeadlineIndex:
    def __init__(self, dynamo: Dynamo, shards: int) -> None:
        self.dynamo = dynamo
        self.shards = shards

    def overdue(self, now_ms: int) -> list[Overdue]:
        """Every item due at or before `now_ms`, soonest first."""
        found: list[dict[str, Any]] = []
        for shard in range(self.shards):
            found.extend(
                self.dynamo.query(
                    "#shard = :shard AND #dl <= :now",
                    {":shard": f"DL#{shard}", ":now": now_ms},
                    names={"#shard": schema.DEADLINE_SHARD, "#dl": schema.DEADLINE},
                    index=schema.DEADLINE_INDEX,
                )
            )
        return [_overdue(i) for i in sorted(found, key=lambda i: i[schema.DEADLINE])]
