"""Exceptions the client raises: one class per thing a caller can do something about."""

from __future__ import annotations

from ..errors import Errors


class GroupcoordError(Exception):
    """A call failed. `error` is Kafka's error code when the coordinator answered one,
    `status` the HTTP status when the failure was an HTTP one."""

    def __init__(self, message: str, error: Errors | None = None, status: int | None = None):
        super().__init__(message)
        self.error = error
        self.status = status


class CoordinatorUnavailable(GroupcoordError):
    """The coordinator could not be reached (or kept failing) within the call's deadline."""


class InvalidRequest(GroupcoordError):
    """The coordinator refused the request as malformed (HTTP 400): a bug or bad input."""


class CommitFailed(GroupcoordError):
    """An offset commit was rejected because this member no longer owns what it committed
    (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, STALE_MEMBER_EPOCH, ...): the
    partitions moved to another member. Do not retry; the next poll() rejoins."""


class WriteConditionFailed(GroupcoordError):
    """A commit's writes were refused by one of their own conditions (`index` in `writes`,
    DynamoDB's `reason`): nothing was written, neither the writes nor the offsets."""

    def __init__(self, message: str, index: int, reason: str):
        super().__init__(message, Errors.INVALID_TXN_STATE)
        self.index = index
        self.reason = reason


class FencedInstance(GroupcoordError):
    """Another process took this static member's groupInstanceId: this one must stop."""


FENCING_ERRORS = frozenset(
    {
        Errors.ILLEGAL_GENERATION,
        Errors.UNKNOWN_MEMBER_ID,
        Errors.FENCED_INSTANCE_ID,
        Errors.STALE_MEMBER_EPOCH,
        Errors.FENCED_MEMBER_EPOCH,
        Errors.REBALANCE_IN_PROGRESS,
        Errors.GROUP_ID_NOT_FOUND,
    }
)
"""Commit errors that mean "this member's view of the group is stale": CommitFailed."""

REDISCOVER_ERRORS = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE})
"""The group's coordinator moved or is down: find it again (find-coordinator), then retry."""

RETRIABLE_ERRORS = REDISCOVER_ERRORS | {Errors.COORDINATOR_LOAD_IN_PROGRESS}
"""Answers that a later attempt of the same request can succeed past."""


def error_of(body: dict) -> Errors:
    """The Kafka error code of a response body (an unknown code reads as -1)."""
    try:
        return Errors(body.get("errorCode", 0))
    except ValueError:
        return Errors.UNKNOWN_SERVER_ERROR
