"""Whole answers of the paged APIs, metadata and list-groups (groupcoord's paging extension:
an answer holds a bounded page and `nextCursor` says where the next one starts).

Each helper sends the request, then again with `cursor` set to the previous `nextCursor` until
it is null, and returns one body as a server without paging would answer it. `call(api, body)`
is whatever sends a request and returns the answer's body (Transport.call(...).body, say). A
coordinator that does not page never sends a `nextCursor`: one call, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .errors import GroupcoordError

Call = Callable[[str, dict[str, Any]], dict[str, Any]]


def metadata_all_pages(call: Call, topics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """metadata of `topics` (None: every topic) over all its pages: the last page's body with
    the topics of every page, a topic cut between two pages joined into one entry."""
    request: dict[str, Any] = {"topics": topics}
    answer = call("metadata", request)
    merged: list[dict[str, Any]] = []
    while True:
        for topic in answer.get("topics") or []:
            _join_or_append(merged, topic)
        cursor = answer.get("nextCursor")
        if cursor is None:
            return {**answer, "topics": merged}
        answer = _next_page(call, "metadata", request, cursor)


def list_groups_all_pages(
    call: Call, states: Iterable[str] = (), types: Iterable[str] = ()
) -> dict[str, Any]:
    """list-groups with Kafka's statesFilter/typesFilter over all its pages: the last page's
    body with the groups of every page (a page's error answer as it is)."""
    request: dict[str, Any] = {"statesFilter": list(states), "typesFilter": list(types)}
    answer = call("list-groups", request)
    groups: list[dict[str, Any]] = []
    while True:
        if answer.get("errorCode", 0) != 0:
            return answer
        groups += answer.get("groups") or []
        cursor = answer.get("nextCursor")
        if cursor is None:
            return {**answer, "groups": groups}
        answer = _next_page(call, "list-groups", request, cursor)


def _next_page(call: Call, api: str, request: dict[str, Any], cursor: Any) -> dict[str, Any]:
    answer = call(api, {**request, "cursor": cursor})
    if answer.get("nextCursor") is not None and answer.get("nextCursor") == cursor:
        raise GroupcoordError(f"{api}: the coordinator answered the same page again")
    return answer


def _join_or_append(merged: list[dict[str, Any]], topic: dict[str, Any]) -> None:
    """A page starts with the rest of a topic the previous one cut: same name, same id."""
    last = merged[-1] if merged else None
    if (
        last is not None
        and last.get("errorCode", 0) == 0
        and topic.get("errorCode", 0) == 0
        and (last.get("name"), last.get("topicId")) == (topic.get("name"), topic.get("topicId"))
    ):
        merged[-1] = {**last, "partitions": [*last["partitions"], *topic["partitions"]]}
    else:
        merged.append(topic)
