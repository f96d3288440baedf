"""Reading several partition keys side by side: a group's member (or connection) items lie
under one partition key per shard (schema.member_pks), and a group read whole is one Query
per shard. In turn, that is a round trip per shard (8 by default) on every install, expiry
check, settled state and release notice; side by side, about one.

Each Query runs on a worker thread in a copy of the caller's context (its clock, deadline and
fault scope), with its usage counted apart and added to the caller's on the caller's thread.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence

from ..thread_pools import LazyPool
from . import capacity
from .dynamo import Dynamo, Item

# Queries in flight at once, all requests of the process together (`serve` answers many
# at a time; a Lambda one). Within the DynamoDB client's connection pool (make_client).
READ_WORKERS = 16
_readers = LazyPool(READ_WORKERS, "reads")


def query_partitions(
    dynamo: Dynamo,
    pks: Sequence[str],
    *,
    consistent: bool,
    projection: Sequence[str] | None = None,
) -> list[list[Item]]:
    """Every item under each of `pks`, in the order of `pks` (with `projection`, only those
    attributes of each)."""
    if len(pks) <= 1:
        return [_query(dynamo, pk, consistent, projection) for pk in pks]

    def read(pk: str) -> tuple[list[Item], capacity.Usage]:
        with capacity.apart() as usage:
            return _query(dynamo, pk, consistent, projection), usage

    contexts = [contextvars.copy_context() for _ in pks]
    futures = [_readers.get().submit(c.run, read, pk) for c, pk in zip(contexts, pks, strict=True)]
    results = [f.result() for f in futures]
    caller = capacity.current()
    if caller is not None:
        for _, usage in results:
            caller.add(usage)
    return [items for items, _ in results]


def _query(
    dynamo: Dynamo, pk: str, consistent: bool, projection: Sequence[str] | None
) -> list[Item]:
    return list(dynamo.query("pk = :pk", {":pk": pk}, consistent=consistent, projection=projection))
