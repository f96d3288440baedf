"""An offset-commit's sink writes as transaction items (docs/exactly-once.md).

A commit with writes is ONE TransactWriteItems: [the commit's fence, the idempotency marker,
the client's writes, the offset puts]. The fence is the commit's own (store/offsets.py), so a
zombie's writes are refused with its commit. The marker is a put of
`sink_marker_key(group, idempotencyKey)` on condition that it does not exist, holding a
fingerprint of the request: a retry of a commit that landed fails on it, and reading the
fingerprint in the cancellation (ALL_OLD) tells "already applied" (same request) from "key
reused" (another one). The marker expires with DynamoDB's TTL after
groupcoord.sink.idempotency.ms.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..models.sink_writes import SinkWrite
from . import schema
from .dynamo import Foreign, Put
from .errors import StoreError

FINGERPRINT = "fingerprint"


def transaction_element(write: SinkWrite) -> dict[str, Any]:
    """A client's write (checked by its model) as a TransactWriteItems element: DynamoDB's
    JSON, its parts by their own names, unset parts left out."""
    return {write.kind: write.operation.model_dump(exclude_none=True)}


@dataclass(frozen=True)
class SinkBatch:
    """The writes of one commit and what makes them idempotent."""

    writes: Sequence[dict[str, Any]]  # TransactWriteItems elements, DynamoDB's JSON form
    idempotency_key: str
    fingerprint: str
    expires_at_s: int  # the marker's TTL (epoch seconds)


class AlreadyApplied(StoreError):
    """The commit's idempotency marker is there with this request's fingerprint: an earlier
    attempt of this very commit landed, writes and offsets; nothing was written now."""


class KeyReused(StoreError):
    """The idempotency key was used by a different commit (another fingerprint)."""


class SinkWriteFailed(StoreError):
    """One of the client's writes cancelled the transaction (`index` in its `writes`)."""

    def __init__(self, index: int, reason: str, message: str) -> None:
        super().__init__(f"writes[{index}]: {reason} {message}".strip())
        self.index = index
        self.reason = reason
        self.message = message


def fingerprint(request: dict[str, Any]) -> str:
    """A digest of what a commit asks (its JSON, canonical): equal for a retry of it."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _binaries_decoded(value: Any) -> Any:
    """Typed attribute values with B and BS as bytes, as the low-level client takes them."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "B" and isinstance(v, str):
                out[k] = base64.b64decode(v)
            elif k == "BS" and isinstance(v, list):
                out[k] = [base64.b64decode(x) for x in v]
            else:
                out[k] = _binaries_decoded(v)
        return out
    if isinstance(value, list):
        return [_binaries_decoded(v) for v in value]
    return value


def transaction_items(group_id: str, batch: SinkBatch) -> list[Put | Foreign]:
    """The marker and the client's writes, in that order."""
    marker = Put(
        {
            **schema.sink_marker_key(group_id, batch.idempotency_key),
            "kind": schema.KIND_SINK_MARKER,
            "groupId": group_id,
            FINGERPRINT: batch.fingerprint,
            schema.TTL_ATTRIBUTE: batch.expires_at_s,
        },
        condition="attribute_not_exists(pk)",
    )
    writes: list[Put | Foreign] = [marker]
    for write in batch.writes:
        ((kind, request),) = write.items()
        # The coordinator decides what a cancellation returns: no old sink item goes back.
        entry = {
            kind: {**_binaries_decoded(request), "ReturnValuesOnConditionCheckFailure": "NONE"}
        }
        writes.append(Foreign(entry))
    return writes


def judge_cancellation(
    batch: SinkBatch,
    first_write: int,
    reasons: Sequence[str],
    messages: Sequence[str],
    old_marker: dict[str, Any] | None,
    fenced: bool,
) -> None:
    """Raise what a cancelled commit-with-writes means: the marker first (a commit that landed
    is answered as landed, whatever else fails on its retry), then the fence (`fenced`: raised
    by the caller, so a zombie learns it is one, not that its condition failed), then the
    client's writes. Returns when the fence is the cause."""

    def reason(i: int) -> str:
        return reasons[i] if i < len(reasons) else "None"

    marker = first_write - 1
    if reason(marker) == "ConditionalCheckFailed":
        if old_marker is not None and old_marker.get(FINGERPRINT) == batch.fingerprint:
            raise AlreadyApplied("this commit landed before")
        raise KeyReused("the idempotency key was used by a different commit")
    if fenced:
        return
    for i in range(len(batch.writes)):
        code = reason(first_write + i)
        if code not in ("None", ""):
            message = messages[first_write + i] if first_write + i < len(messages) else ""
            raise SinkWriteFailed(i, code, message or "")
