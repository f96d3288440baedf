"""The endpoints map's own item (store/streams/endpoints.py) on DynamoDB Local: one write per
endpoint epoch, never replaced by an earlier epoch, split into chunks past one item's size,
the chunks of a replaced map deleted."""

from __future__ import annotations

import pytest

from groupcoord.store import schema
from groupcoord.store.store import Store
from groupcoord.store.streams import endpoints as module
from tests.support.consumer import unique


def _chunks(store: Store, group: str) -> list[str]:
    pk = schema.streams_endpoints_key(group)[schema.PK]
    items = store.dynamo.query("pk = :pk", {":pk": pk}, consistent=True)
    return sorted(i[schema.SK] for i in items if i[schema.SK].startswith("STREAMS-ENDPOINTS#"))


def test_a_map_is_written_once_per_epoch_and_never_by_an_earlier_one(store: Store) -> None:
    endpoints, group = store.streams.endpoints, unique("g")
    assert endpoints.read(group, endpoints.head(group), 0) is None
    endpoints.write(group, 2, {"v": "two"}, None)
    head = endpoints.head(group)
    assert endpoints.read(group, head, 2) == {"v": "two"}
    assert endpoints.read(group, head, 3) is None  # behind the group's epoch: rebuilt
    endpoints.write(group, 1, {"v": "one"}, head)  # a slower builder of an earlier epoch
    endpoints.write(group, 2, {"v": "again"}, head)  # a second builder of the same epoch
    assert endpoints.read(group, endpoints.head(group), 2) == {"v": "two"}
    # The group deleted and created again under its id: its predecessor's map is not its own.
    assert endpoints.read(group, endpoints.head(group), 2, born=5) is None
    endpoints.write(group, 1, {"v": "new group"}, endpoints.head(group), born=5)
    assert endpoints.read(group, endpoints.head(group), 1, born=5) == {"v": "new group"}


def test_a_large_map_is_chunked_and_a_replaced_ones_chunks_deleted(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "CHUNK_CHARS", 1000)
    endpoints, group = store.streams.endpoints, unique("g")
    big = {"entries": [{"m": f"member-{i}", "p": 7000 + i} for i in range(200)]}
    endpoints.write(group, 1, big, None)
    head = endpoints.head(group)
    assert head is not None and int(head["chunks"]) > 3
    assert len(_chunks(store, group)) == int(head["chunks"]) - 1
    assert endpoints.read(group, head, 1) == big
    endpoints.write(group, 2, {"entries": []}, head)
    assert endpoints.read(group, endpoints.head(group), 2) == {"entries": []}
    assert _chunks(store, group) == []
    # A builder that lost the race leaves none of its chunks behind.
    endpoints.write(group, 2, big, endpoints.head(group))
    assert _chunks(store, group) == []
