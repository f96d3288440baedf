"""The deadline index: every item with a due time (member sessions, rebalance timers, topic
changes, retention checks) is in it, spread over `deadline_shards` index partitions, and the
sweeper reads what is overdue from it (docs/table-layout.md), a page at a time
(`OverdueScan`). An item whose completion fails is put back later in its shard, or after
repeated failures into the quarantine partition (`record_failure`, rules in core/sweeping.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..core.sweeping import Attempt
from . import schema
from .dynamo import ConditionFailed, Dynamo, Update

# Index entries one Query of a shard reads: a few KB of projected attributes, so a sweep that
# stops on its budget has read little it did not use.
PAGE_SIZE = 100

# What the sweeper keeps on an item whose completion failed.
FAILURES = "sweepFailures"  # failures in a row
RETRY_AT = "sweepRetryAt"  # the deadline the last failure set
HOME_SHARD = "sweepShard"  # a quarantined item's own deadline shard, to put it back
LAST_ERROR = "sweepError"  # what the last failure raised
ERROR_MAX_CHARS = 300


@dataclass(frozen=True)
class Overdue:
    """An item of the deadline index whose time came: what it stands for (`kind`), the group
    it belongs to, if any, and when it was due. `item` is the stored item, for the store."""

    kind: str
    group_id: str | None
    due_ms: int
    item: dict[str, Any] = field(repr=False, compare=False)

    @property
    def key(self) -> dict[str, Any]:
        return {schema.PK: self.item[schema.PK], schema.SK: self.item[schema.SK]}


def _overdue(item: dict[str, Any]) -> Overdue:
    return Overdue(
        kind=item.get("kind", ""),
        group_id=item.get("groupId"),
        due_ms=int(item[schema.DEADLINE]),
        item=item,
    )


class OverdueScan:
    """The items due at or before `now_ms`, read lazily: a shard is queried (one Query,
    Limit `page_size`, from where its previous page ended) only when the items read from it
    are used up, so a caller that stops early has read little more than it used. The shards
    take turns an item at a time, so that a crowded shard does not hold up the others;
    within a shard, soonest first. Iterate it once; `read_ahead` is how many items it read
    from the index and has not handed out yet."""

    def __init__(self, dynamo: Dynamo, shards: int, now_ms: int, page_size: int) -> None:
        self.dynamo = dynamo
        self.shards = shards
        self.now_ms = now_ms
        self.page_size = page_size
        self.read_ahead = 0

    def __iter__(self) -> Iterator[Overdue]:
        read: dict[int, deque[dict[str, Any]]] = {s: deque() for s in range(self.shards)}
        # The shards with pages left to read, and where each next page starts.
        starts: dict[int, dict[str, Any] | None] = dict.fromkeys(range(self.shards))
        turns = deque(range(self.shards))
        while turns:
            shard = turns.popleft()
            items = read[shard]
            if not items and shard in starts:
                page, last = self._page(shard, starts[shard])
                if last is None:
                    del starts[shard]
                else:
                    starts[shard] = last
                items.extend(page)
                self.read_ahead += len(page)
            if items:
                self.read_ahead -= 1
                yield _overdue(items.popleft())
                turns.append(shard)
            elif shard in starts:
                turns.append(shard)  # an empty page that was not the last

    def _page(
        self, shard: int, start: dict[str, Any] | None
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        return self.dynamo.query_page(
            "#shard = :shard AND #dl <= :now",
            {":shard": f"DL#{shard}", ":now": self.now_ms},
            names={"#shard": schema.DEADLINE_SHARD, "#dl": schema.DEADLINE},
            index=schema.DEADLINE_INDEX,
            limit=self.page_size,
            start=start,
        )


class DeadlineIndex:
    def __init__(self, dynamo: Dynamo, shards: int) -> None:
        self.dynamo = dynamo
        self.shards = shards

    def overdue(self, now_ms: int, page_size: int = PAGE_SIZE) -> OverdueScan:
        """Every item due at or before `now_ms`, a page at a time (see OverdueScan)."""
        return OverdueScan(self.dynamo, self.shards, now_ms, page_size)

    def record_failure(
        self, due: Overdue, decide: Callable[[int], Attempt], error: str
    ) -> Attempt | None:
        """Count a failed completion of `due` and put the item back as `decide` says, given
        its failures in a row (this one included): later in its shard, or, quarantined, into
        schema.QUARANTINE_SHARD with its deadline and data as they are. One strongly
        consistent read and one conditional write. None: the item is gone or its deadline
        moved since it was read (a request or another sweep wrote it), and nothing is held
        against its new state."""
        key = due.key
        shard = due.item[schema.DEADLINE_SHARD]
        current = self.dynamo.get(key, consistent=True)
        if (
            current is None
            or current.get(schema.DEADLINE) != due.due_ms
            or current.get(schema.DEADLINE_SHARD) != shard
        ):
            return None
        # Failures are in a row while the item is where the last one put it; any other write
        # of its deadline (a request, a rescheduled check, an operator) starts a new count.
        in_a_row = int(current.get(FAILURES, 0)) if current.get(RETRY_AT) == due.due_ms else 0
        attempt = decide(in_a_row + 1)
        names = {
            "#dl": schema.DEADLINE,
            "#shard": schema.DEADLINE_SHARD,
            "#failures": FAILURES,
            "#error": LAST_ERROR,
            "#retry": RETRY_AT,
        }
        values: dict[str, Any] = {
            ":due": due.due_ms,
            ":shard": shard,
            ":failures": attempt.failures,
            ":error": error[:ERROR_MAX_CHARS],
        }
        if attempt.retry_at_ms is None:
            # Without its last retry time, the item starts a new count once put back.
            expression = (
                "SET #shard = :quarantine, #home = :shard, #failures = :failures, "
                "#error = :error REMOVE #retry"
            )
            names["#home"] = HOME_SHARD
            values[":quarantine"] = schema.QUARANTINE_SHARD
        else:
            expression = "SET #dl = :retry, #retry = :retry, #failures = :failures, #error = :error"
            values[":retry"] = attempt.retry_at_ms
        try:
            self.dynamo.update(
                Update(
                    key,
                    expression,
                    names=names,
                    values=values,
                    condition="#dl = :due AND #shard = :shard",
                )
            )
        except ConditionFailed:
            return None
        return attempt
