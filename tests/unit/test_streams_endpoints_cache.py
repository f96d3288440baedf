"""Each process's copies of streams endpoints maps (store/streams/endpoints.py): kept per group,
epoch and creation, the least recently used dropped past a few maps or a bound on their
endpoints in all, the latest always kept."""

from __future__ import annotations

from groupcoord.local.memory import memory_store
from groupcoord.settings import Settings
from groupcoord.store.streams import endpoints as module


def _endpoints() -> module.EndpointsStore:
    return memory_store(Settings.from_mapping({"groupcoord.table.name": "t"})).streams.endpoints


def test_a_map_is_kept_per_group_epoch_and_creation() -> None:
    kept = _endpoints()
    kept.remember("g", 3, 100, "map of 3", lines=2)
    assert kept.cached("g", 3, 100) == "map of 3"
    assert kept.cached("g", 4, 100) is None  # a later epoch: not read yet
    assert kept.cached("g", 3, 200) is None  # the group deleted and created again
    assert kept.cached("other", 3, 100) is None


def test_the_least_recently_used_maps_go_first() -> None:
    kept = _endpoints()
    for epoch in range(module.CACHED_MAPS):
        kept.remember("g", epoch, 0, f"map {epoch}", lines=1)
    assert kept.cached("g", 0, 0) == "map 0"  # used again: now the most recent
    kept.remember("g", 99, 0, "map 99", lines=1)
    assert kept.cached("g", 1, 0) is None
    assert kept.cached("g", 0, 0) == "map 0" and kept.cached("g", 99, 0) == "map 99"


def test_big_maps_are_bounded_by_their_endpoints_but_the_latest_stays() -> None:
    kept = _endpoints()
    half = module.CACHED_LINES // 2
    kept.remember("a", 1, 0, "a", lines=half)
    kept.remember("b", 1, 0, "b", lines=half)
    assert kept.cached("a", 1, 0) == "a"
    kept.remember("c", 1, 0, "c", lines=half)
    assert kept.cached("b", 1, 0) is None  # least recently used, over the bound
    kept.remember("huge", 1, 0, "huge", lines=3 * module.CACHED_LINES)
    assert kept.cached("huge", 1, 0) == "huge"
    assert kept.cached("a", 1, 0) is None and kept.cached("c", 1, 0) is None
