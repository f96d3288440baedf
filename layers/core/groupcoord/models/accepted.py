"""Bodies that are not Kafka messages: the 202 of the barrier APIs and the error answers."""

from __future__ import annotations

from pydantic import Field

from .base import Int16, Int32, KafkaMessage


class AcceptedResponse(KafkaMessage):
    """202 from join-group / sync-group: registered, not complete (docs/classic-protocol.md)."""

    member_id: str = Field(description="The member id to re-send the same request with.")
    retry_after_ms: Int32 = Field(description="Re-send the same request after this many ms.")


class ErrorBody(KafkaMessage):
    """The body of a 400, 404, 405, 413, 429 or 501 answer."""

    error_code: Int16 = Field(description="Kafka's error code (42 INVALID_REQUEST for a 400).")
    error_message: str = Field(description="What is wrong, naming the field where there is one.")
