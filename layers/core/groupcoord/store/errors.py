"""What the store raises: the port's exceptions, free of any DynamoDB client type, so that the
service and the HTTP layer can catch them without importing the adapter."""

from __future__ import annotations

from typing import Any

Item = dict[str, Any]


class Conflict(Exception):
    """Someone else changed the group (or the member) since it was read, or holds it: nothing
    was written; re-read and decide again. The one "lost a race" of the store."""


class StoreError(Exception):
    """A DynamoDB failure that is not the client's fault."""


class StoreThrottled(StoreError):
    def __init__(self, message: str, retry_after_s: int = 1) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ConditionFailed(StoreError):
    """A conditional write lost: `old` is the item as it was, when DynamoDB returned it."""

    def __init__(self, old: Item | None = None) -> None:
        super().__init__("conditional check failed")
        self.old = old


class TransactionCanceled(StoreError):
    """A transaction was cancelled; `reasons[i]` is the code for item i ('None' = fine)."""

    def __init__(
        self,
        reasons: list[str],
        old_items: list[Item | None],
        messages: list[str] | None = None,
    ) -> None:
        super().__init__("transaction cancelled: " + ", ".join(reasons))
        self.reasons = reasons
        self.old_items = old_items
        self.messages = messages or [""] * len(reasons)

    def failed_conditions(self) -> list[int]:
        return [i for i, r in enumerate(self.reasons) if r == "ConditionalCheckFailed"]


class DeadlinePassed(StoreError):
    """A write was due to start after the request's deadline (groupcoord/deadline.py): it was
    not sent. The client has given up on the request, or is about to; a write landing now could
    land after its next request and undo it. `writes_sent` is how many write calls the request
    had sent before (0: it was still reading)."""

    def __init__(self, operation: str, writes_sent: int) -> None:
        super().__init__(f"DynamoDB {operation} not sent: the request's deadline has passed")
        self.operation = operation
        self.writes_sent = writes_sent

    def doing(self) -> str:
        """What the request was doing when its deadline passed, for its answer."""
        if self.writes_sent == 0:
            return "while it was reading, before it wrote anything: nothing was written"
        return (
            f"after {self.writes_sent} of its writes: the next was not sent, and the next "
            "request completes or rolls back what this one began"
        )


class SinkWritesRefused(StoreError):
    """DynamoDB refused a transaction because of the writes a client asked for (an expression
    it cannot parse, a key that does not fit the sink table's schema, a missing table, one
    item named twice): nothing was written; the client's mistake, answered 400."""


class ConversionInProgress(Exception):
    """Another request is applying a conversion of this group and did not finish in time
    (store/conversion.py). Here, with the other errors an API answers, so that the resolver
    names it without importing the conversion and the DynamoDB layer at a function's init."""

    def __init__(self, group_id: str, retry_after_s: int = 1) -> None:
        super().__init__(f"group {group_id} is being converted between protocols; retry")
        self.retry_after_s = retry_after_s
