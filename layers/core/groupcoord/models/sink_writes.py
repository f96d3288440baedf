"""The DynamoDB writes an offset-commit may carry (`writes`, docs/exactly-once.md).

Each entry is one element of DynamoDB's TransactWriteItems in DynamoDB's own JSON form (the
low-level API's: `Put`, `Update`, `Delete` or `ConditionCheck`, PascalCase parameters, typed
attribute values such as `{"N": "1"}`), on a sink table the deployment lists. Only the
parameters that shape the write are accepted (the coordinator sets the rest), unknown ones are
refused, and every part is bounded: DynamoDB's own limits where it has them (expressions 4 KB,
32 levels of nesting, 38 digits of number precision), the request body (1 MiB) for the rest.
"""

from __future__ import annotations

import base64
import binascii
import re
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, model_validator

from . import limits

_TABLE_NAME = re.compile(r"^[a-zA-Z0-9_.-]{3,255}$")
_NAME_PLACEHOLDER = re.compile(r"^#[A-Za-z0-9_]{1,255}$")
_VALUE_PLACEHOLDER = re.compile(r"^:[A-Za-z0-9_]{1,255}$")
_NUMBER = re.compile(r"^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_SCALARS = {"S", "N", "B", "BOOL", "NULL"}
_SETS = {"SS", "NS", "BS"}
_TYPES = _SCALARS | _SETS | {"L", "M"}


def _check_number(text: Any) -> None:
    if not isinstance(text, str) or not _NUMBER.match(text.strip()):
        raise ValueError(f"{text!r} is not a DynamoDB number")
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a DynamoDB number") from None
    digits = number.normalize().as_tuple().digits if number else (0,)
    if len(digits) > limits.SINK_NUMBER_MAX_DIGITS:
        raise ValueError(f"{text!r} has more than {limits.SINK_NUMBER_MAX_DIGITS} digits")


def _check_binary(text: Any) -> None:
    if not isinstance(text, str):
        raise ValueError("a binary value must be a base64 string")
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a binary value is not valid base64") from None


def check_attribute_value(value: Any, depth: int = 1) -> None:
    """Raise ValueError unless `value` is one typed DynamoDB attribute value."""
    if depth > limits.SINK_VALUE_MAX_DEPTH:
        raise ValueError(f"nested deeper than {limits.SINK_VALUE_MAX_DEPTH} levels")
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError('an attribute value is an object with one type key, e.g. {"S": "x"}')
    ((kind, inner),) = value.items()
    if kind not in _TYPES:
        raise ValueError(f"unknown attribute value type {kind!r}")
    if kind == "S" and not isinstance(inner, str):
        raise ValueError("S must be a string")
    if kind == "N":
        _check_number(inner)
    if kind == "B":
        _check_binary(inner)
    if kind in ("BOOL", "NULL") and not isinstance(inner, bool):
        raise ValueError(f"{kind} must be true or false")
    if kind == "NULL" and inner is not True:
        raise ValueError("NULL must be true")
    if kind in _SETS:
        if not isinstance(inner, list) or not inner:
            raise ValueError(f"{kind} must be a non-empty list")
        if len(set(map(str, inner))) != len(inner):
            raise ValueError(f"{kind} holds a value twice")
        for element in inner:
            if kind == "SS" and not isinstance(element, str):
                raise ValueError("SS holds strings only")
            if kind == "NS":
                _check_number(element)
            if kind == "BS":
                _check_binary(element)
    if kind == "L":
        if not isinstance(inner, list):
            raise ValueError("L must be a list")
        for element in inner:
            check_attribute_value(element, depth + 1)
    if kind == "M":
        check_attribute_map(inner, depth + 1)


def check_attribute_map(value: Any, depth: int = 1) -> None:
    if not isinstance(value, dict):
        raise ValueError("must be an object of attribute name -> typed value")
    for name, inner in value.items():
        if not isinstance(name, str) or not name:
            raise ValueError("attribute names are non-empty strings")
        if len(name.encode()) > limits.SINK_ATTRIBUTE_NAME_MAX_BYTES:
            raise ValueError(f"attribute name {name[:40]!r}... is over 64 KB")
        try:
            check_attribute_value(inner, depth)
        except ValueError as error:
            raise ValueError(f"{name}: {error}") from None


def _attribute_map(value: Any) -> dict[str, Any]:
    check_attribute_map(value)
    return value


def _names(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ValueError("must be an object of #placeholder -> attribute name")
    for placeholder, name in value.items():
        if not _NAME_PLACEHOLDER.match(placeholder):
            raise ValueError(f"{placeholder!r} is not a #name placeholder")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{placeholder}: attribute names are non-empty strings")
    return value


def _values(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("must be an object of :placeholder -> typed value")
    for placeholder, inner in value.items():
        if not _VALUE_PLACEHOLDER.match(placeholder):
            raise ValueError(f"{placeholder!r} is not a :value placeholder")
        try:
            check_attribute_value(inner)
        except ValueError as error:
            raise ValueError(f"{placeholder}: {error}") from None
    return value


_ATTRIBUTE_VALUE_SCHEMA = {
    "type": "object",
    "description": 'A DynamoDB attribute value in its typed JSON form: {"S": "text"}, '
    '{"N": "12"}, {"B": "<base64>"}, {"BOOL": true}, {"NULL": true}, {"L": [...]}, '
    '{"M": {...}}, {"SS": [...]}, {"NS": [...]}, {"BS": [...]}.',
    "minProperties": 1,
    "maxProperties": 1,
}
AttributeMap = Annotated[
    dict[str, Any],
    PlainValidator(_attribute_map),
    WithJsonSchema({"type": "object", "additionalProperties": _ATTRIBUTE_VALUE_SCHEMA}),
]
ExpressionNames = Annotated[
    dict[str, str],
    PlainValidator(_names),
    WithJsonSchema({"type": "object", "additionalProperties": {"type": "string"}}),
]
ExpressionValues = Annotated[
    dict[str, Any],
    PlainValidator(_values),
    WithJsonSchema({"type": "object", "additionalProperties": _ATTRIBUTE_VALUE_SCHEMA}),
]
Expression = Annotated[str, Field(min_length=1, max_length=limits.SINK_EXPRESSION_MAX_CHARS)]
TableName = Annotated[
    str,
    Field(
        pattern=_TABLE_NAME.pattern,
        description="A sink table's name (not an ARN): one the deployment lists in "
        "groupcoord.sink.tables.",
    ),
]


class _Operation(BaseModel):
    """DynamoDB's parameters, by their own names; anything else is refused."""

    model_config = ConfigDict(strict=True, extra="forbid")

    TableName: TableName
    ConditionExpression: Expression | None = None
    ExpressionAttributeNames: ExpressionNames | None = None
    ExpressionAttributeValues: ExpressionValues | None = None


class SinkPut(_Operation):
    Item: AttributeMap


class SinkUpdate(_Operation):
    Key: AttributeMap
    UpdateExpression: Expression


class SinkDelete(_Operation):
    Key: AttributeMap


class SinkConditionCheck(_Operation):
    Key: AttributeMap
    ConditionExpression: Expression


class SinkWrite(BaseModel):
    """One element of TransactWriteItems: exactly one of Put, Update, Delete, ConditionCheck."""

    model_config = ConfigDict(strict=True, extra="forbid")

    Put: SinkPut | None = None
    Update: SinkUpdate | None = None
    Delete: SinkDelete | None = None
    ConditionCheck: SinkConditionCheck | None = None

    @model_validator(mode="after")
    def _one(self) -> Self:
        given = [k for k in ("Put", "Update", "Delete", "ConditionCheck") if getattr(self, k)]
        if len(given) != 1:
            raise ValueError("each write is exactly one of Put, Update, Delete, ConditionCheck")
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("Put", "Update", "Delete", "ConditionCheck") if getattr(self, k))

    @property
    def operation(self) -> _Operation:
        return getattr(self, self.kind)

    @property
    def table(self) -> str:
        return self.operation.TableName


IdempotencyKey = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z0-9_.:-]{1,128}$",
        description="Required with `writes`: a commit with writes is applied at most once per "
        "key (a retry after a timeout answers as the first attempt did, writing nothing). A "
        "fresh random key (a UUID) per commit, the same on its retries.",
    ),
]
