"""Results a handler may return besides a Kafka response."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Accepted:
    """A barrier's 202: the member's join or sync is registered; re-send after retry_after_ms."""

    member_id: str
    retry_after_ms: int
