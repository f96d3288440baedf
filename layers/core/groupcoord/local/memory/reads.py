"""Query and Scan's reads of a table: a Query's key condition, the slice of a partition it
selects, and a page of items (at most Limit and 1 MB, with LastEvaluatedKey)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from ...store import capacity
from ...store.dynamo import serialize
from .errors import invalid
from .evaluation import Evaluation
from .expressions import Parsed
from .tables import Index, Table, sort_value, too_long
from .values import MISSING, dynamo_type

PAGE_LIMIT = 1024 * 1024  # Query and Scan


def key_condition(
    table: Table, index: Index, tree: tuple, evaluation: Evaluation
) -> tuple[Any, tuple | None]:
    """The partition key value, and the sort key condition: (op, value...) or None."""
    terms = [tree[1], tree[2]] if tree[0] == "and" else [tree]
    partition: Any = MISSING
    sort: tuple | None = None
    for term in terms:
        if term[0] not in ("cmp", "between", "begins"):
            raise invalid("Invalid KeyConditionExpression: unsupported key condition")
        subject = term[2] if term[0] == "cmp" else term[1]
        given = term[3:] if term[0] == "cmp" else term[2:]
        if subject[0] != "path" or any(o[0] != "value" for o in given):
            raise invalid("Invalid KeyConditionExpression: unsupported key condition")
        attribute = evaluation.path(subject[1])
        operands = [evaluation.values[o[1]] for o in given]
        if term[0] == "cmp" and term[1] == "=" and attribute == (index.hash_key,):
            partition = operands[0]
        elif index.range_key is not None and attribute == (index.range_key,):
            if term[0] == "cmp" and term[1] == "<>":
                raise invalid("Invalid KeyConditionExpression: unsupported operator <>")
            sort = (term[1] if term[0] == "cmp" else term[0], *operands)
        else:
            raise invalid(f"Query condition missed key schema element: {index.hash_key}")
        for value in operands:
            if attribute[0] == index.range_key and too_long(value, sort_key=True):
                raise invalid(
                    "One or more parameter values were invalid: Aggregated size of all "
                    "range keys has exceeded the size limit of 1024 bytes"
                )
            if dynamo_type(value) != table.types[attribute[0]]:
                raise invalid(
                    "One or more parameter values were invalid: Condition parameter type "
                    "does not match schema type"
                )
            if attribute[0] == index.hash_key and value in ("", b""):
                raise invalid(
                    "One or more parameter values are not valid. The AttributeValue for a "
                    f"key attribute cannot contain an empty string value. Key: {index.hash_key}"
                )
    if partition is MISSING:
        raise invalid(f"Query condition missed key schema element: {index.hash_key}")
    if sort is not None and sort[0] == "between" and sort[1] > sort[2]:
        raise invalid(
            "Invalid KeyConditionExpression: The BETWEEN operator requires upper bound to "
            "be greater than or equal to lower bound"
        )
    if sort is not None and sort[0] == "begins" and dynamo_type(sort[1]) == "N":
        raise invalid(
            "Invalid KeyConditionExpression: Incorrect operand type for operator or "
            "function; operator or function: begins_with, operand type: N"
        )
    return partition, sort


def sort_range(entries: list[tuple[Any, tuple]], sort: tuple | None) -> tuple[int, int]:
    """The slice of a partition's entries that the sort key condition selects."""
    if sort is None:
        return 0, len(entries)
    op, value = sort[0], sort[1]
    left = bisect.bisect_left(entries, value, key=sort_value)
    if op == "begins":
        high = left
        while high < len(entries) and entries[high][0].startswith(value):
            high += 1
        return left, high
    right = bisect.bisect_right(entries, value, key=sort_value)
    bounds = {"=": (left, right), "<": (0, left), "<=": (0, right),
              ">": (right, len(entries)), ">=": (left, len(entries))}  # fmt: skip
    if op == "between":
        return left, bisect.bisect_right(entries, sort[2], key=sort_value)
    return bounds[op]


def page(table: Table, index: Index, keys: Iterable[tuple], limit: int | None) -> dict[str, Any]:
    """Items in order up to Limit or 1 MB; LastEvaluatedKey when the page stopped there."""
    if limit is not None and limit < 1:
        raise invalid("Limit must be greater than or equal to 1")
    items: list[dict[str, Any]] = []
    read = 0
    last: dict[str, Any] | None = None
    for key in keys:
        item = table.items[key]
        projected = index.project(item)
        items.append(serialize(projected))
        read += table.sizes[key] if projected is item else capacity.item_size(projected)
        if (limit is not None and len(items) >= limit) or read >= PAGE_LIMIT:
            last = table.page_key(index, item)
            break
    response: dict[str, Any] = {"Items": items, "Count": len(items), "ScannedCount": len(items)}
    if last is not None:
        response["LastEvaluatedKey"] = serialize(last)
    return response


def projection(
    expression: str | None, names: dict[str, str] | None
) -> tuple[frozenset[str] | None, Parsed | None]:
    """A ProjectionExpression's attributes (None: every one), and the expression as the
    placeholder check sees it (the names it uses). Top-level attributes only: a document path
    is not implemented."""
    if expression is None:
        return None, None
    used: set[str] = set()
    attributes: set[str] = set()
    for token in (t.strip() for t in expression.split(",")):
        if not token or "." in token or "[" in token:
            raise NotImplementedError(
                f"MemoryDynamoClient projects top-level names only: {token!r}"
            )
        if token.startswith("#"):
            used.add(token)
            attributes.add((names or {}).get(token, token))
        else:
            attributes.add(token)
    return frozenset(attributes), Parsed(None, frozenset(used), frozenset())
