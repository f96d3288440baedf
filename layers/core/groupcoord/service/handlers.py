"""The implemented APIs: name -> (request model, handler)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..models.base import KafkaMessage
from ..models.registry import API_MESSAGES
from . import coordinator, group_admin, groups, topics
from .classic.describe import describe_groups
from .classic.heartbeat import heartbeat
from .classic.join import join_group
from .classic.leave import leave_group
from .classic.sync import sync_group
from .consumer.describe import consumer_group_describe
from .consumer.heartbeat import consumer_group_heartbeat
from .context import ApiContext
from .handlers_types import Accepted
from .offsets import offset_commit, offset_delete, offset_fetch

# Registers the consumer groups' offset fencing with the offsets service.
from . import consumer_offsets  # noqa: F401  isort: skip

Handler = Callable[[Any, ApiContext], KafkaMessage | Accepted]

_HANDLERS: dict[str, Handler] = {
    "find-coordinator": coordinator.find_coordinator,
    "metadata": topics.metadata,
    "create-topics": topics.create_topics,
    "create-partitions": topics.create_partitions,
    "delete-topics": topics.delete_topics,
    "list-groups": groups.list_groups,
    "join-group": join_group,
    "sync-group": sync_group,
    "heartbeat": heartbeat,
    "leave-group": leave_group,
    "describe-groups": describe_groups,
    "delete-groups": group_admin.delete_groups,
    "consumer-group-heartbeat": consumer_group_heartbeat,
    "consumer-group-describe": consumer_group_describe,
    "offset-commit": offset_commit,
    "offset-fetch": offset_fetch,
    "offset-delete": offset_delete,
}


def handler_for(api: str) -> tuple[type[KafkaMessage], Handler] | None:
    """The request model and handler of an implemented API, else None."""
    handler = _HANDLERS.get(api)
    if handler is None:
        return None
    return API_MESSAGES[api].request, handler
