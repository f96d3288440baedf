"""Build the DynamoDB writes a commit carries (`GroupMember.commit(offsets, writes=...)`):
applied in one transaction with the offsets and fenced like them (docs/exactly-once.md).

    from groupcoord.client import sink
    member.commit(
        {tp: next_offset},
        writes=[sink.update("counts", {"key": "blue"}, "ADD #n :k", names={"#n": "n"},
                            values={":k": 3})],
    )

Values are plain Python, typed as boto3's TypeSerializer types them (str S, bool BOOL, int,
float and Decimal N, bytes B, None NULL, list L, dict M, sets of str / numbers / bytes SS /
NS / BS), written here on the standard library because the client depends on nothing else.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence, Set
from decimal import Decimal
from typing import Any

Write = dict[str, Any]


def attribute_value(value: Any) -> dict[str, Any]:
    """`value` in DynamoDB's typed JSON form."""
    if isinstance(value, bool):  # before int: bool is an int
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, int | float | Decimal):
        return {"N": _number(value)}
    if isinstance(value, bytes | bytearray):
        return {"B": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {"M": item(value)}
    if isinstance(value, Set):
        return _set(value)
    if isinstance(value, Sequence):
        return {"L": [attribute_value(v) for v in value]}
    raise TypeError(f"no DynamoDB type for {type(value).__name__}")


def _number(value: int | float | Decimal) -> str:
    if isinstance(value, float) and value != value:  # NaN
        raise TypeError("DynamoDB numbers cannot be NaN")
    return str(Decimal(str(value)) if isinstance(value, float) else value)


def _set(values: Set[Any]) -> dict[str, Any]:
    if not values:
        raise TypeError("DynamoDB sets cannot be empty")
    if all(isinstance(v, str) for v in values):
        return {"SS": sorted(values)}
    if all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in values):
        return {"NS": sorted(_number(v) for v in values)}
    if all(isinstance(v, bytes | bytearray) for v in values):
        return {"BS": sorted(base64.b64encode(bytes(v)).decode("ascii") for v in values)}
    raise TypeError("a DynamoDB set holds strings, numbers or bytes, all of one kind")


def item(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """An item (or a key) in DynamoDB's typed JSON form."""
    return {name: attribute_value(v) for name, v in attributes.items()}


def _expression_parts(
    condition: str | None, names: Mapping[str, str] | None, values: Mapping[str, Any] | None
) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    if condition is not None:
        parts["ConditionExpression"] = condition
    if names:
        parts["ExpressionAttributeNames"] = dict(names)
    if values:
        parts["ExpressionAttributeValues"] = item(values)
    return parts


def put(
    table: str,
    attributes: Mapping[str, Any],
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Write:
    """A Put of `attributes` into `table`, if `condition` holds."""
    return {
        "Put": {
            "TableName": table,
            "Item": item(attributes),
            **_expression_parts(condition, names, values),
        }
    }


def update(
    table: str,
    key: Mapping[str, Any],
    expression: str,
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Write:
    """An Update of the item at `key` (e.g. "ADD #n :k"), if `condition` holds."""
    return {
        "Update": {
            "TableName": table,
            "Key": item(key),
            "UpdateExpression": expression,
            **_expression_parts(condition, names, values),
        }
    }


def delete(
    table: str,
    key: Mapping[str, Any],
    condition: str | None = None,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Write:
    """A Delete of the item at `key`, if `condition` holds."""
    return {
        "Delete": {
            "TableName": table,
            "Key": item(key),
            **_expression_parts(condition, names, values),
        }
    }


def condition_check(
    table: str,
    key: Mapping[str, Any],
    condition: str,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Write:
    """No write: the transaction (and the commit) happens only if `condition` holds on the
    item at `key`."""
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": item(key),
            **_expression_parts(condition, names, values),
        }
    }
