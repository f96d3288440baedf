"""What the in-memory adapter refuses, as DynamoDB does (the client raises it as botocore's
ClientError)."""

from __future__ import annotations

from typing import Any


class Refused(Exception):
    """A request DynamoDB refuses; the API wrapper turns it into botocore's ClientError."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra


def invalid(message: str) -> Refused:
    return Refused("ValidationException", message)
