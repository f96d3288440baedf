"""store/partition_reads.py: a group's shards read side by side give what reading them in turn
gives (every item, each key's in its order), and count the same requests and units against the
request that asked (bench.cost's figures)."""

from __future__ import annotations

import threading
import time

from groupcoord.store import capacity
from groupcoord.store.dynamo import Dynamo, Item
from groupcoord.store.partition_reads import query_partitions

PKS = [f"G#reads#M{shard}" for shard in range(8)]


def _fill(dynamo: Dynamo) -> None:
    for shard, pk in enumerate(PKS):
        for n in range(shard % 3):  # some shards empty, as a small group's are
            dynamo.put({"pk": pk, "sk": f"member-{n}", "payload": "x" * (200 * shard)})


def _in_turn(dynamo: Dynamo) -> list[list[Item]]:
    return [list(dynamo.query("pk = :pk", {":pk": pk}, consistent=True)) for pk in PKS]


def test_shards_read_side_by_side_give_and_cost_what_reading_them_in_turn_does(
    dynamo: Dynamo,
) -> None:
    _fill(dynamo)
    with capacity.metered() as in_turn_usage:
        in_turn = _in_turn(dynamo)
    with capacity.metered() as side_by_side_usage:
        side_by_side = query_partitions(dynamo, PKS, consistent=True)
    assert side_by_side == in_turn
    assert sum(map(len, side_by_side)) == 7
    assert side_by_side_usage.requests == in_turn_usage.requests == len(PKS)
    assert side_by_side_usage.read_units == in_turn_usage.read_units
    assert side_by_side_usage.by_operation == {"query": len(PKS)}


class _Watched(Dynamo):
    """The real adapter, noting how many of its queries were in flight at once."""

    def __init__(self, dynamo: Dynamo) -> None:
        super().__init__(dynamo.client, dynamo.table_name)
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = 0

    def query_page(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(0.05)  # a network's round trip, so that overlaps show on any machine
            return super().query_page(*args, **kwargs)
        finally:
            with self.lock:
                self.in_flight -= 1


def test_the_shards_are_read_side_by_side(dynamo: Dynamo) -> None:
    _fill(dynamo)
    watched = _Watched(dynamo)
    assert query_partitions(watched, PKS, consistent=True) == _in_turn(dynamo)
    assert watched.most_in_flight > 1


def test_a_projected_read_is_billed_as_its_whole_items(dynamo: Dynamo) -> None:
    """DynamoDB bills a projection on the items it read, not on what it returned."""
    _fill(dynamo)
    with capacity.metered() as whole:
        query_partitions(dynamo, PKS, consistent=True)
    with capacity.metered() as projected:
        found = query_partitions(dynamo, PKS, consistent=True, projection=("sk",))
    assert [[i["sk"] for i in items] for items in found] == [
        [i["sk"] for i in items] for items in _in_turn(dynamo)
    ]
    assert all(set(i) == {"sk"} for items in found for i in items)
    assert projected.read_units == whole.read_units
