"""Conventions shared by every message: Kafka's JSON field names, strict types, byte fields.

Messages are the JSON form of Kafka's request/response schemas at their latest version, with
the camelCase names Kafka's generated JSON converters write. Validation is strict: a string
where a number belongs, a bool for an int, or a value outside the field's Kafka type range is
rejected (400 naming the field) instead of being coerced.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel

from . import limits

Int8 = Annotated[int, Field(ge=-(2**7), le=2**7 - 1)]
Int16 = Annotated[int, Field(ge=-(2**15), le=2**15 - 1)]
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
# Narrower bounds are their own types: a `Field(ge=0)` on an Int32 field is overridden by the
# type's own bounds and lets -1 through.
NonNegativeInt32 = Annotated[int, Field(ge=0, le=2**31 - 1)]
NonNegativeInt64 = Annotated[int, Field(ge=0, le=2**63 - 1)]
Port = Annotated[int, Field(ge=0, le=65535)]

_TOPIC_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")


def _decode_base64(value: Any) -> bytes:
    if isinstance(value, bytes):  # built in code, not parsed from JSON
        return value
    if not isinstance(value, str):
        raise ValueError("must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("is not valid base64") from None


def _encode_base64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


# Kafka `bytes` fields (classic protocol metadata and assignments) travel as base64 strings.
# In responses they are unbounded (they echo what requests stored); request fields use
# `base64_bytes(max_bytes)`.
Base64Bytes = Annotated[
    bytes,
    PlainValidator(_decode_base64),
    PlainSerializer(_encode_base64, return_type=str),
    WithJsonSchema({"type": "string", "format": "byte", "contentEncoding": "base64"}),
]


def base64_bytes(max_bytes: int) -> Any:
    """A request's base64 byte field of at most `max_bytes` decoded bytes."""

    def decode(value: Any) -> bytes:
        decoded = _decode_base64(value)
        if len(decoded) > max_bytes:
            raise ValueError(f"is {len(decoded)} bytes; the limit is {max_bytes}")
        return decoded

    schema = {
        "type": "string",
        "format": "byte",
        "contentEncoding": "base64",
        "maxLength": 4 * ((max_bytes + 2) // 3),
    }
    return Annotated[
        bytes,
        PlainValidator(decode),
        PlainSerializer(_encode_base64, return_type=str),
        WithJsonSchema(schema),
    ]


def bounded(max_chars: int) -> Any:
    """A request string of at most `max_chars` characters (limits.py)."""
    return Annotated[str, Field(max_length=max_chars)]


# Request strings (models/limits.py says why each bound is what it is).
GroupId = bounded(limits.GROUP_ID_MAX_CHARS)
MemberId = bounded(limits.MEMBER_ID_MAX_CHARS)
InstanceId = bounded(limits.INSTANCE_ID_MAX_CHARS)
TopicName = bounded(limits.TOPIC_NAME_MAX_CHARS)
RackId = bounded(limits.RACK_ID_MAX_CHARS)
ProtocolName = bounded(limits.PROTOCOL_NAME_MAX_CHARS)
Reason = bounded(limits.REASON_MAX_CHARS)
TopicRegex = bounded(limits.REGEX_MAX_CHARS)


def _check_topic_id(value: Any) -> str:
    if not isinstance(value, str) or not _TOPIC_ID.match(value):
        raise ValueError("must be a Kafka topic id: 22 characters of URL-safe base64")
    return value


# Kafka's Uuid in its string form (URL-safe base64 without padding).
TopicId = Annotated[
    str,
    PlainValidator(_check_topic_id),
    WithJsonSchema({"type": "string", "pattern": _TOPIC_ID.pattern}),
]


# Kafka's authorizedOperations when they were not asked for. Here, not in topics.py, so that
# the messages of groups and of the consumer protocol need not import the topic messages (a
# function imports only what its APIs need: docs/performance.md, "Cold start").
UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)


class KafkaMessage(BaseModel):
    """Base of every request and response body."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        strict=True,
        extra="ignore",
        # Validators and serializers are built at a model's first use, not at class creation:
        # a function imports many models it never validates (docs/performance.md, "Cold
        # start"), and builds those it does use with its first request of each API.
        defer_build=True,
    )

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, mode="json")


class KafkaResponse(KafkaMessage):
    throttle_time_ms: Int32 = 0


# What the heartbeat of a member-based family (consumer-group-heartbeat,
# streams-group-heartbeat) answers first; each family's response adds its assignment.
class MemberHeartbeatResponse(KafkaResponse):
    error_code: Int16 = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: Int32 = 0
    heartbeat_interval_ms: Int32 = 0
