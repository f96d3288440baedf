"""A decided Kafka error answer: the code and the message the response carries."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import Errors


@dataclass(frozen=True)
class Refusal:
    error: Errors
    message: str
