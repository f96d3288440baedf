"""DynamoDB's values as the in-memory adapter keeps them (the Python values `dynamo.deserialize`
makes): their type, DynamoDB's typed equality and order, and document paths into items."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

# An absent attribute (None is DynamoDB's NULL).
MISSING: Any = object()


def dynamo_type(value: Any) -> str:
    """The DynamoDB type of a stored (Python) value."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, int | float | Decimal):
        return "N"
    if isinstance(value, str):
        return "S"
    if isinstance(value, bytes | bytearray):
        return "B"
    if isinstance(value, list):
        return "L"
    if isinstance(value, dict):
        return "M"
    if isinstance(value, set | frozenset):
        return {"N": "NS", "B": "BS"}.get(dynamo_type(next(iter(value))) if value else "S", "SS")
    raise TypeError(f"not a DynamoDB value: {value!r}")


def same(a: Any, b: Any) -> bool:
    """DynamoDB's equality: typed (True is not 1), element by element in lists and maps."""
    kind = dynamo_type(a)
    if kind != dynamo_type(b):
        return False
    if kind == "L":
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if kind == "M":
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def compare(op: str, a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return op == "<>"
    if op == "=":
        return same(a, b)
    if op == "<>":
        return not same(a, b)
    kind = dynamo_type(a)
    if kind != dynamo_type(b) or kind not in ("N", "S", "B"):
        return False
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def lookup(item: Any, path: tuple) -> Any:
    """The value at a document path (`a.b`, `a[0]`) of an item, or MISSING."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(item, list) or step >= len(item):
                return MISSING
        elif not isinstance(item, dict) or step not in item:
            return MISSING
        item = item[step]
    return item
