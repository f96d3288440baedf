"""A streams group's endpoints map (interactive queries), one item per endpoint epoch.

Every member behind the group's endpoint epoch is answered the map of every endpoint's
tasks. Built from the members on each such heartbeat it would cost O(members) reads per
member, O(members^2) per epoch; instead whoever first needs the map at an epoch builds it
and writes it here (a Put conditioned on a lower epoch: a later epoch is never replaced by an
earlier one), and the others read it with one GetItem. A map larger than one item's 400 KB
is split into chunk items written before the head that names them.

A map, once written, is the map of its epoch for good (a write of the same epoch is refused),
so each process keeps the last few it read or wrote (`remember` / `cached`): after a bump, a
function instance reads the map once, not once per member it answers (at 5,000 members a map
is ~0.5 MB: one read per member would be a read hot key on the group's partition).
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import OrderedDict
from typing import Any

from .. import schema
from ..dynamo import ConditionFailed, Dynamo

# Characters of JSON per item: at most 4 bytes each in UTF-8, under DynamoDB's 400 KB.
CHUNK_CHARS = 90_000
# Maps kept per process: a few groups' latest epochs, and at most about this many endpoints in
# all (decoded, ~3 KB each: a 5,000-member map is ~14 MB; the latest map is kept whatever its size).
CACHED_MAPS = 8
CACHED_LINES = 20_000


class EndpointsStore:
    def __init__(self, dynamo: Dynamo) -> None:
        self.dynamo = dynamo
        self._cache: OrderedDict[tuple[str, int, int], tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def cached(self, group_id: str, epoch: int, born: int) -> Any | None:
        """What `remember` kept for the map of `epoch` (of the group created at `born`)."""
        with self._lock:
            found = self._cache.get((group_id, epoch, born))
            if found is None:
                return None
            self._cache.move_to_end((group_id, epoch, born))
            return found[0]

    def remember(self, group_id: str, epoch: int, born: int, value: Any, lines: int) -> None:
        """Keep `value` (the stored map of `epoch`, of `lines` endpoints, in any form the
        caller likes), dropping the least recently used beyond CACHED_MAPS / CACHED_LINES."""
        with self._lock:
            self._cache[(group_id, epoch, born)] = (value, lines)
            self._cache.move_to_end((group_id, epoch, born))
            total = sum(n for _, n in self._cache.values())
            while len(self._cache) > 1 and (len(self._cache) > CACHED_MAPS or total > CACHED_LINES):
                _, (_, n) = self._cache.popitem(last=False)
                total -= n

    def head(self, group_id: str) -> dict[str, Any] | None:
        return self.dynamo.get(schema.streams_endpoints_key(group_id), consistent=True)

    def read(
        self, group_id: str, head: dict[str, Any] | None, epoch: int, born: int = 0
    ) -> Any | None:
        """The map written at `epoch` for the group created at `born` (`head` as read; a
        group deleted and created again under its id may find its predecessor's map), None if
        there is none (or a chunk went with a newer write)."""
        if head is None or int(head["epoch"]) != epoch or int(head.get("born", 0)) != born:
            return None
        text = head["data"]
        chunks = int(head.get("chunks", 1))
        if chunks > 1:
            keys = [
                schema.streams_endpoints_chunk_key(group_id, head["writeId"], i)
                for i in range(1, chunks)
            ]
            items = self.dynamo.batch_get(keys, consistent=True)
            found = {int(i["chunk"]): i["data"] for i in items}
            if len(found) < chunks - 1:
                return None
            text += "".join(found[i] for i in range(1, chunks))
        return json.loads(text)

    def write(
        self,
        group_id: str,
        epoch: int,
        data: Any,
        previous: dict[str, Any] | None,
        born: int = 0,
    ) -> bool:
        """The map of `epoch`, unless one of this epoch or later of the same group is there
        already (False); the chunks of `previous` (the head read) are deleted once replaced."""
        text = json.dumps(data, separators=(",", ":"))
        parts = [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)] or [""]
        write_id = uuid.uuid4().hex[:12]
        chunks = [
            {**schema.streams_endpoints_chunk_key(group_id, write_id, i), "chunk": i, "data": p}
            for i, p in enumerate(parts[1:], 1)
        ]
        self.dynamo.batch_write(puts=chunks)
        head = {**schema.streams_endpoints_key(group_id), "epoch": epoch, "chunks": len(parts),
                "writeId": write_id, "born": born, "data": parts[0]}  # fmt: skip
        try:
            self.dynamo.put(
                head,
                condition="attribute_not_exists(pk) OR #e < :e OR born <> :born",
                names={"#e": "epoch"},
                values={":e": epoch, ":born": born},
            )
        except ConditionFailed:
            self.dynamo.batch_write(deletes=[schema_key(c) for c in chunks])
            return False
        self.dynamo.batch_write(deletes=chunk_keys(group_id, previous))
        return True


def schema_key(item: dict[str, Any]) -> dict[str, Any]:
    return {schema.PK: item[schema.PK], schema.SK: item[schema.SK]}


def chunk_keys(group_id: str, head: dict[str, Any] | None) -> list[dict[str, str]]:
    """The keys of the chunk items a head names (none for a one-item map)."""
    if head is None:
        return []
    return [
        schema.streams_endpoints_chunk_key(group_id, head["writeId"], i)
        for i in range(1, int(head.get("chunks", 1)))
    ]
