"""The implemented APIs: name -> (request model, handler)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..models.base import KafkaMessage
from ..models.registry import API_MESSAGES
from . import coordinator, groups, topics
from .context import ApiContext


@dataclass(frozen=True)
class Accepted:
    """API.md's 202: the member's join or sync is registered; re-send after retry_after_ms."""

    member_id: str
    retry_after_ms: int


Handler = Callable[[Any, ApiContext], KafkaMessage | Accepted]

_HANDLERS: dict[str, Handler] = {
    "find-coordinator": coordinator.find_coordinator,
    "metadata": topics.metadata,
    "create-topics": topics.create_topics,
    "create-partitions": topics.create_partitions,
    "delete-topics": topics.delete_topics,
    "list-groups": groups.list_groups,
}


def handler_for(api: str) -> tuple[type[KafkaMessage], Handler] | None:
    """The request model and handler of an implemented API, else None."""
    handler = _HANDLERS.get(api)
    if handler is None:
        return None
    return API_MESSAGES[api].request, handler
