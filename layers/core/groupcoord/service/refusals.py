"""How the group APIs answer what the authorizer refuses, as Kafka's KafkaApis does (the checks
are listed in core/acls.py's API_AUTHORIZATION).

A refused request or item carries the error code alone, no message: Kafka's answers do not say
more (what a caller may not see is not named). With authorization off every check passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from ..core.acls import AclOperation, ResourceType
from ..errors import Errors
from ..models.base import UNKNOWN_AUTHORIZED_OPERATIONS, KafkaResponse
from .context import ApiContext

R = TypeVar("R", bound=KafkaResponse)


def group_refusal(
    ctx: ApiContext, operation: AclOperation, group_id: str, response: type[R]
) -> R | None:
    """The whole request's answer when the caller may not do `operation` on the group: the
    response with only errorCode 30 GROUP_AUTHORIZATION_FAILED (Kafka's getErrorResponse, the
    other fields at their defaults); None when it may. Asked before anything is read."""
    if ctx.caller.may_on_group(operation, group_id):
        return None
    return response(error_code=Errors.GROUP_AUTHORIZATION_FAILED)


def may_describe_topics(ctx: ApiContext, names: Iterable[str]) -> bool:
    """Whether the caller may DESCRIBE every one of these topics."""
    if not ctx.caller.checked:
        return True  # authorization off: no loop over the names
    return all(ctx.caller.may_on_topic(AclOperation.DESCRIBE, name) for name in set(names))


def group_operations(ctx: ApiContext, group_id: str, asked: bool) -> int:
    """A described group's authorizedOperations: the caller's operations on it when the request
    asked for them, else Kafka's "not asked" value."""
    if not asked:
        return UNKNOWN_AUTHORIZED_OPERATIONS
    return ctx.caller.operations(ResourceType.GROUP, group_id)
