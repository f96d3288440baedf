"""The OpenAPI 3.1 document of the HTTP contract, built from the message models.

    python -m groupcoord.http.openapi > docs/openapi.json

tests/unit/test_openapi.py checks that the committed document equals what this builds.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from ..deadline import HEADER as TIMEOUT_HEADER
from ..deadline import MAX_TIMEOUT_MS, MIN_TIMEOUT_MS, WRITE_MARGIN_MS
from ..models.accepted import AcceptedResponse, ErrorBody
from ..models.limits import CLIENT_ID_MAX_CHARS
from .apis import API_BY_NAME, API_NAMES

REF_TEMPLATE = "#/components/schemas/{model}"

# The Kafka message and version each API carries (the latest of Kafka 4.x).

DESCRIPTION = """\
Kafka's consumer-group APIs as JSON over HTTP. Every API is `POST /v1/{api}`; bodies are the \
JSON form of Kafka's request and response messages at the version named in each operation's \
summary, with the camelCase field names of Kafka's JSON converters.

Choices made where Kafka's own JSON form leaves room:

- An absent field takes the default of Kafka's message schema: `null` for nullable fields, \
else the schema's default (`generationIdOrMemberEpoch` -1, `rebalanceTimeoutMs` -1, \
`committedLeaderEpoch` -1, `memberEpoch` -1 in offset-fetch, `authorizedOperations` \
-2147483648, `memberType` -1), else `""`, `0`, `false`, `[]` or empty bytes.
- Required: the fields a request cannot do without, and inside arrays the key of each entry \
(`partitionIndex`, a join protocol's `name`, a sync assignment's `memberId`, a heartbeat \
topic's `topicId`, an offset-fetch group's `groupId`) and a commit's `committedOffset`.
- Types are strict (no coercion: `"5"` is not a number, `true` is not an int) and ints are \
bounded by their Kafka type; unknown fields are ignored, as Kafka ignores unknown tagged fields.
- Byte fields are standard base64 with padding (Kafka's JSON converters use \
`java.util.Base64`); topic ids are Kafka's `Uuid` string (URL-safe base64, no padding).
- offset-commit, offset-fetch and offset-delete topics take `name`, `topicId` or both (one is \
required); response topics carry both, `""` and the zero id `AAAAAAAAAAAAAAAAAAAAAA` where \
one is unknown. OffsetDelete v0 has names only: `topicId` there is an extension.
- `committedMetadata` absent is `null`, stored as Kafka stores it (the same as `""`).
- Paging, an extension: an answer of `metadata` holds at most `responsePartitionLimit` \
partitions (default and most 2000; a topic that does not fit is cut), after Kafka's \
DescribeTopicPartitions (KIP-966), and one of `list-groups` at most `limit` groups (default \
and most 1000). Both answer `nextCursor`: send the same request again with `cursor` set to it \
until it is `null`. A `cursor` list-groups did not answer is a 400.
- Every request string, byte field and list is bounded (`maxLength`, `maxItems`; docs/limits.md \
says why each bound is what it is): over one, `400` with errorCode 42 naming the field, or \
Kafka's in-band error where Kafka answers it (17 for a topic name over 249 characters on \
create-topics, 12 for commit metadata over `offset.metadata.max.bytes`, 37 for a partition \
count over `groupcoord.topic.max.partitions`, 128 for a regex RE2 refuses). The \
`Kafka-Client-Id` header is at most 218 characters. An empty body is not JSON: 400.
- join-group's `heartbeatFrequency` and `failedHeartbeatThreshold` must be at least 1.
- Every field of a 200 body is present (`null` where nullable and unset).
- `Kafka-Correlation-Id` is opaque: echoed unchanged on every answer.
- `Groupcoord-Timeout-Ms`, an extension: the request starts no write later than this many ms \
after receipt (an integer, 1 to 900000, else 400); past it, `503` with errorCode 7 \
(REQUEST_TIMED_OUT) and `Retry-After: 0`.
"""


class _ContractSchema(GenerateJsonSchema):
    """Responses always carry every field, so in serialization mode every field is required.
    Property titles (pydantic's "Groupid") say nothing the camelCase name does not; dropped."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def field_is_required(self, field: Any, total: bool) -> bool:
        if self.mode == "serialization":
            return True
        return super().field_is_required(field, total)


def _json(ref: dict[str, Any], description: str, **headers: str) -> dict[str, Any]:
    """A JSON answer; every answer echoes Kafka-Correlation-Id, `headers` adds others."""
    names = {"Kafka-Correlation-Id": "KafkaCorrelationId", **headers}
    return {
        "description": description,
        "headers": {
            name: {"$ref": f"#/components/headers/{component}"} for name, component in names.items()
        },
        "content": {"application/json": {"schema": ref}},
    }


def _operation(api: str, refs: dict[Any, dict[str, Any]]) -> dict[str, Any]:
    messages = API_BY_NAME[api]
    responses = {
        "200": _json(
            refs[(messages.response, "serialization")],
            "Kafka's response; the outcome is in its errorCode fields.",
        ),
        "400": {"$ref": "#/components/responses/BadRequest"},
        "413": {"$ref": "#/components/responses/PayloadTooLarge"},
        "429": {"$ref": "#/components/responses/TooManyRequests"},
        "503": {"$ref": "#/components/responses/RequestTimedOut"},
    }
    if messages.may_answer_accepted:
        responses["202"] = {"$ref": "#/components/responses/Accepted"}
    return {
        "operationId": api,
        "summary": f"Kafka {API_BY_NAME[api].kafka}",
        "tags": [messages.request.__module__.rsplit(".", 1)[-1]],
        "parameters": [
            {"$ref": "#/components/parameters/KafkaClientId"},
            {"$ref": "#/components/parameters/KafkaCorrelationId"},
            {"$ref": "#/components/parameters/GroupcoordTimeoutMs"},
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": refs[(messages.request, "validation")]}},
        },
        "responses": responses,
    }


def _components(refs: dict[Any, dict[str, Any]], schemas: dict[str, Any]) -> dict[str, Any]:
    error = refs[(ErrorBody, "serialization")]
    return {
        "schemas": schemas,
        "parameters": {
            "KafkaClientId": {
                "name": "Kafka-Client-Id",
                "in": "header",
                "required": False,
                "description": "Kafka's client id (default empty); classic member ids are "
                "`<clientId>-<uuid>`.",
                "schema": {"type": "string", "default": "", "maxLength": CLIENT_ID_MAX_CHARS},
            },
            "GroupcoordTimeoutMs": {
                "name": TIMEOUT_HEADER,
                "in": "header",
                "required": False,
                "description": "The time (ms from receipt) after which the request starts no "
                "more writes; absent: none but the function's own. Send your timeout less the "
                f"longest a started write may take to land ({WRITE_MARGIN_MS} ms), so that no "
                "write of a request you gave up on lands after your next request.",
                "schema": {"type": "integer", "minimum": MIN_TIMEOUT_MS, "maximum": MAX_TIMEOUT_MS},
            },
            "KafkaCorrelationId": {
                "name": "Kafka-Correlation-Id",
                "in": "header",
                "required": False,
                "description": "Kafka's correlation id, echoed back as a response header.",
                "schema": {"type": "string"},
            },
        },
        "headers": {
            "KafkaCorrelationId": {
                "description": "The request's Kafka-Correlation-Id, when it had one.",
                "schema": {"type": "string"},
            },
            "RetryAfter": {
                "description": "Seconds to wait before retrying.",
                "schema": {"type": "integer", "minimum": 0},
            },
        },
        "responses": {
            "Accepted": _json(
                refs[(AcceptedResponse, "serialization")],
                "Registered, not complete: the barrier is still open. Re-send the same "
                "request with this memberId after retryAfterMs.",
            ),
            "BadRequest": _json(
                error,
                "The body is not JSON or breaks the schema (errorCode 42); nothing changed.",
            ),
            "PayloadTooLarge": _json(error, "The body is over 1 MiB; nothing changed."),
            "RequestTimedOut": _json(
                error,
                f"The deadline (`{TIMEOUT_HEADER}`, or the function's timeout) passed before a "
                "write: nothing was written after it (errorCode 7, REQUEST_TIMED_OUT). Retry "
                "at once (Retry-After 0).",
                **{"Retry-After": "RetryAfter"},
            ),
            "TooManyRequests": _json(
                error,
                "Throttled by the store; retry after Retry-After.",
                **{"Retry-After": "RetryAfter"},
            ),
        },
    }


def build_openapi() -> dict[str, Any]:
    models: list[tuple[Any, Any]] = []
    for api in API_NAMES:
        models += [(API_BY_NAME[api].request, "validation")]
        models += [(API_BY_NAME[api].response, "serialization")]
    models += [(AcceptedResponse, "serialization"), (ErrorBody, "serialization")]
    refs, defs = models_json_schema(
        models, by_alias=True, ref_template=REF_TEMPLATE, schema_generator=_ContractSchema
    )
    return {
        "openapi": "3.1.0",
        "info": {"title": "groupcoord", "version": "1", "description": DESCRIPTION},
        "servers": [{"url": "http://127.0.0.1:8080", "description": "groupcoord serve"}],
        "paths": {f"/v1/{api}": {"post": _operation(api, refs)} for api in API_NAMES},
        "components": _components(refs, defs.get("$defs", {})),
    }


def dump_openapi() -> str:
    return json.dumps(build_openapi(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(dump_openapi())
