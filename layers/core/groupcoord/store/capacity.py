"""Request and capacity-unit accounting per API call.

DynamoDB reports ConsumedCapacity; moto reports fixed figures (and none for transactions), so
the store also estimates units from item sizes with DynamoDB's sizing rules. On AWS the two
agree; against moto only the estimate means anything. Benchmarks print both.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

READ_UNIT_BYTES = 4096
WRITE_UNIT_BYTES = 1024


@dataclass
class Usage:
    """What one API call cost: DynamoDB requests and capacity units."""

    requests: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    # Total units as the endpoint reported them (meaningless against moto).
    reported_units: float = 0.0
    by_operation: dict[str, int] = field(default_factory=dict)
    # Item writes per partition key (`pk`): which keys a call loads (bench.cost's hot keys).
    writes_by_key: dict[str, int] = field(default_factory=dict)

    def count(self, operation: str) -> None:
        self.requests += 1
        self.by_operation[operation] = self.by_operation.get(operation, 0) + 1

    def wrote(self, partition_key: str) -> None:
        self.writes_by_key[partition_key] = self.writes_by_key.get(partition_key, 0) + 1

    def add(self, other: Usage) -> None:
        self.requests += other.requests
        self.read_units += other.read_units
        self.write_units += other.write_units
        self.reported_units += other.reported_units
        for op, n in other.by_operation.items():
            self.by_operation[op] = self.by_operation.get(op, 0) + n
        for key, n in other.writes_by_key.items():
            self.writes_by_key[key] = self.writes_by_key.get(key, 0) + n


_current: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("usage", default=None)


@contextmanager
def metered() -> Iterator[Usage]:
    """Collect the usage of the store calls made inside the block (nests: outer sees all)."""
    outer = _current.get()
    with apart() as usage:
        try:
            yield usage
        finally:
            if outer is not None:
                outer.add(usage)


@contextmanager
def apart() -> Iterator[Usage]:
    """Collect the usage of the store calls made inside the block, for the caller to add where
    it belongs (`Usage.add`): a read on another thread (store/dynamo.py's query_partitions)
    must not add to a Usage its own request's thread is adding to."""
    usage = Usage()
    token = _current.set(usage)
    try:
        yield usage
    finally:
        _current.reset(token)


def current() -> Usage | None:
    return _current.get()


def attribute_size(value: Any) -> int:
    """Bytes of one attribute value by DynamoDB's item-size rules (python-typed value)."""
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    if isinstance(value, int | float | Decimal):
        # Significant digits: leading and trailing zeros are not stored.
        digits = len(Decimal(str(value)).normalize().as_tuple().digits)
        return 1 + math.ceil(digits / 2)
    if isinstance(value, dict):
        return 3 + sum(len(k.encode("utf-8")) + attribute_size(v) + 1 for k, v in value.items())
    if isinstance(value, list | tuple):
        return 3 + sum(attribute_size(v) + 1 for v in value)
    if isinstance(value, set | frozenset):
        return sum(attribute_size(v) for v in value)
    return len(str(value).encode("utf-8"))


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode("utf-8")) + attribute_size(v) for name, v in item.items())


# The key attributes of the table's sparse GSIs (store/schema.py): an item carrying one is in
# that index, and each write of it is also an index write.
_INDEX_KEYS = ("dlShard", "lsPk")


def index_writes(item: dict[str, Any]) -> int:
    return sum(1 for key in _INDEX_KEYS if key in item)


def read_units(total_bytes: int, consistent: bool, transactional: bool = False) -> float:
    units = max(1, math.ceil(total_bytes / READ_UNIT_BYTES))
    if transactional:
        return units * 2.0
    return float(units) if consistent else units / 2


def write_units(item_bytes: int, transactional: bool = False) -> float:
    units = max(1, math.ceil(item_bytes / WRITE_UNIT_BYTES))
    return float(units * 2 if transactional else units)
