"""The deadline index: every item with a due time (member sessions, rebalance timers, topic
changes, retention checks) is in it, spread over `deadline_shards` index partitions, and the
sweeper reads what is overdue from it (docs/table-layout.md)."""

from __future__ import annotations

from typing import Any

from . import schema
from .dynamo import Dynamo


class DeadlineIndex:
    def __init__(self, dynamo: Dynamo, shards: int) -> None:
        self.dynamo = dynamo
        self.shards = shards

    def overdue(self, now_ms: int) -> list[dict[str, Any]]:
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
        return sorted(found, key=lambda i: i[schema.DEADLINE])
