"""The API functions' handlers called in this process, on the runtime a test configured (the
`configured` fixture): for tests that reach inside a request (monkeypatched store or clock)."""

from __future__ import annotations

import json
from typing import Any

from groupcoord.http.apis import API_FUNCTION
from groupcoord.http.handler import make_api_handler
from groupcoord.local.events import LambdaContext, http_api_event


def call(api: str, body: dict[str, Any]) -> dict[str, Any]:
    """One request through its function's handler; insists on a 200 and returns its body."""
    function = API_FUNCTION[api]
    event = http_api_event(
        "POST", f"/v1/{api}", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    answer = make_api_handler(function)(event, LambdaContext(function))
    assert answer["statusCode"] == 200, answer
    return json.loads(answer["body"])


def commit(group: str, topic: str, partition: int, offset: int) -> None:
    """A commit from outside the group (generation -1) that must be accepted."""
    partitions = [{"partitionIndex": partition, "committedOffset": offset}]
    body = {"groupId": group, "topics": [{"name": topic, "partitions": partitions}]}
    assert call("offset-commit", body)["topics"][0]["partitions"][0]["errorCode"] == 0


def committed(group: str, topic: str, partition: int) -> int:
    """The group's committed offset of one partition (-1: none)."""
    topics = [{"name": topic, "partitionIndexes": [partition]}]
    body = {"groups": [{"groupId": group, "topics": topics}]}
    fetched = call("offset-fetch", body)["groups"][0]["topics"][0]["partitions"][0]
    return fetched["committedOffset"]
