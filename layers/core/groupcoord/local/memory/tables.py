"""A table's items and indexes, with DynamoDB's key and item-size rules: each index (the table's
key too) keeps its items by partition key value, sorted by sort key, so that a Query costs
O(log n + items returned)."""

from __future__ import annotations

import bisect
from typing import Any

from ...store import capacity
from .errors import invalid
from .values import MISSING, dynamo_type

ITEM_LIMIT = 400 * 1024
PARTITION_KEY_LIMIT = 2048
SORT_KEY_LIMIT = 1024


def sort_value(entry: tuple[Any, tuple]) -> Any:
    return entry[0]


class Index:
    """An index's items by partition key value, each partition a list of (sort key value,
    table key) kept sorted. The table's own key is an index too (`name` None)."""

    def __init__(
        self,
        name: str | None,
        key_schema: list[dict[str, str]],
        projection: dict[str, Any] | None,
        table_keys: tuple[str, ...],
    ) -> None:
        self.name = name
        self.hash_key = next(k["AttributeName"] for k in key_schema if k["KeyType"] == "HASH")
        ranges = [k["AttributeName"] for k in key_schema if k["KeyType"] == "RANGE"]
        self.range_key: str | None = ranges[0] if ranges else None
        self.key_names: tuple[str, ...] = (self.hash_key, *ranges)
        self.partitions: dict[Any, list[tuple[Any, tuple]]] = {}
        projection = projection or {"ProjectionType": "ALL"}
        self.projected: tuple[str, ...] | None = None  # None: every attribute
        if projection["ProjectionType"] != "ALL":
            extra = projection.get("NonKeyAttributes", [])
            self.projected = tuple(dict.fromkeys([*table_keys, *self.key_names, *extra]))

    def _entry(self, key: tuple, item: dict[str, Any]) -> tuple[Any, tuple[Any, tuple]] | None:
        partition = item.get(self.hash_key, MISSING)
        if partition is MISSING:
            return None
        if self.range_key is None:
            return partition, ((), key)
        sort = item.get(self.range_key, MISSING)
        if sort is MISSING:
            return None  # a sparse index: only the items with its key attributes
        return partition, (sort, key)

    def add(self, key: tuple, item: dict[str, Any]) -> None:
        found = self._entry(key, item)
        if found is not None:
            bisect.insort(self.partitions.setdefault(found[0], []), found[1])

    def remove(self, key: tuple, item: dict[str, Any]) -> None:
        found = self._entry(key, item)
        if found is None:
            return
        partition, entry = found
        entries = self.partitions[partition]
        at = bisect.bisect_left(entries, entry)
        assert entries[at] == entry, (self.name, entry)
        del entries[at]
        if not entries:
            del self.partitions[partition]

    def project(self, item: dict[str, Any]) -> dict[str, Any]:
        if self.projected is None:
            return item
        return {name: item[name] for name in self.projected if name in item}


def too_long(value: Any, sort_key: bool) -> bool:
    """A string or binary key value over DynamoDB's bound (its UTF-8 bytes)."""
    if isinstance(value, str):
        size = len(value.encode("utf-8"))
    elif isinstance(value, bytes | bytearray):
        size = len(value)
    else:
        return False  # a number
    return size > (SORT_KEY_LIMIT if sort_key else PARTITION_KEY_LIMIT)


class Table:
    def __init__(self, definition: dict[str, Any]) -> None:
        self.name: str = definition["TableName"]
        self.definition = definition
        self.types = {
            a["AttributeName"]: a["AttributeType"] for a in definition["AttributeDefinitions"]
        }
        self.primary = Index(None, definition["KeySchema"], None, ())
        self.key_names = self.primary.key_names
        self.indexes: dict[str, Index] = {}
        self.global_indexes: set[str] = set()
        for kind in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            for index in definition.get(kind, []):
                name = index["IndexName"]
                self.indexes[name] = Index(
                    name, index["KeySchema"], index["Projection"], self.key_names
                )
                if kind == "GlobalSecondaryIndexes":
                    self.global_indexes.add(name)
        self.all_indexes = (self.primary, *self.indexes.values())
        self.items: dict[tuple, dict[str, Any]] = {}
        self.sizes: dict[tuple, int] = {}
        self.ttl_attribute: str | None = None

    def key(self, attrs: dict[str, Any]) -> tuple:
        """The key a Key parameter names: exactly the key attributes, typed, not empty."""
        if set(attrs) != set(self.key_names):
            raise invalid("The provided key element does not match the schema")
        for name in self.key_names:
            self._check_key_value(name, attrs[name])
        return tuple(attrs[name] for name in self.key_names)

    @property
    def range_key(self) -> str | None:
        return self.primary.range_key

    def _check_key_value(self, name: str, value: Any, index: str | None = None) -> None:
        expected, actual = self.types[name], dynamo_type(value)
        if actual != expected and index is None:
            raise invalid(
                "One or more parameter values were invalid: Type mismatch for key "
                f"{name} expected: {expected} actual: {actual}"
            )
        if actual != expected:
            raise invalid(
                "One or more parameter values were invalid: Type mismatch for Index Key "
                f"{name} Expected: {expected} Actual: {actual} IndexName: {index}"
            )
        if actual in ("S", "B") and index is None and too_long(value, name == self.range_key):
            raise invalid(
                "Hash primary key values must be under 2048 bytes, and range primary key "
                "values must be under 1024 bytes"
            )
        if actual in ("S", "B") and not value and index is None:
            raise invalid(
                "One or more parameter values are not valid. The AttributeValue for a key "
                f"attribute cannot contain an empty string value. Key: {name}"
            )
        if actual in ("S", "B") and not value:
            raise invalid(
                "One or more parameter values are not valid. A value specified for a secondary "
                "index key is not supported. The AttributeValue for a key attribute cannot "
                f"contain an empty string value. IndexName: {index}, IndexKey: {name}"
            )

    def check(self, item: dict[str, Any], *, updated: bool = False) -> tuple[tuple, int]:
        """An item's key and size, if the table can hold it."""
        for name in self.key_names:
            if name not in item:
                raise invalid(
                    f"One or more parameter values were invalid: Missing the key {name} in the item"
                )
            self._check_key_value(name, item[name])
        for index in self.indexes.values():
            for name in index.key_names:
                if name in item:
                    self._check_key_value(name, item[name], index.name)
        size = capacity.item_size(item)
        if size > ITEM_LIMIT:
            what = "Item size to update" if updated else "Item size"
            raise invalid(f"{what} has exceeded the maximum allowed size")
        return tuple(item[name] for name in self.key_names), size

    def index(self, name: str | None) -> Index:
        if name is None:
            return self.primary
        if name not in self.indexes:
            raise invalid(f"The table does not have the specified index: {name}")
        return self.indexes[name]

    def write(self, key: tuple, item: dict[str, Any] | None, size: int) -> None:
        old = self.items.get(key)
        if old is not None:
            for index in self.all_indexes:
                index.remove(key, old)
        if item is None:
            self.items.pop(key, None)
            self.sizes.pop(key, None)
            return
        self.items[key] = item
        self.sizes[key] = size
        for index in self.all_indexes:
            index.add(key, item)

    def page_key(self, index: Index, item: dict[str, Any]) -> dict[str, Any]:
        """LastEvaluatedKey: the table's key attributes and the index's."""
        return {name: item[name] for name in dict.fromkeys([*self.key_names, *index.key_names])}
