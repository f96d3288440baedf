"""A commit that lands between the retention check's read and its delete is kept (issue 17,
point 4): the check's deletes are conditioned on what it read. In-process, on the test
endpoint, with the commit injected right after the check has read the offsets."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest

from groupcoord import runtime
from groupcoord.http.handler import make_api_handler
from groupcoord.http.routing import API_FUNCTION
from groupcoord.local.events import LambdaContext, http_api_event
from groupcoord.service import offset_retention
from groupcoord.store import schema
from groupcoord.store.offsets import OffsetStore
from groupcoord.store.store import Store

# Long enough that reads on the real clock see nothing expired; the checks run far past it.
RETENTION_MS = 60_000


def call(api: str, body: dict[str, Any]) -> dict[str, Any]:
    function = API_FUNCTION[api]
    event = http_api_event(
        "POST", f"/v1/{api}", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    answer = make_api_handler(function)(event, LambdaContext(function))
    assert answer["statusCode"] == 200, answer
    return json.loads(answer["body"])


def commit(group: str, offset: int) -> None:
    body = {
        "groupId": group,
        "topics": [{"name": "t", "partitions": [{"partitionIndex": 0, "committedOffset": offset}]}],
    }
    assert call("offset-commit", body)["topics"][0]["partitions"][0]["errorCode"] == 0


def committed(group: str) -> int:
    body = {"groups": [{"groupId": group, "topics": [{"name": "t", "partitionIndexes": [0]}]}]}
    return call("offset-fetch", body)["groups"][0]["topics"][0]["partitions"][0]["committedOffset"]


@pytest.fixture
def short_retention(configured: Store) -> Store:
    settings = replace(configured.settings, offsets_retention_ms=RETENTION_MS)
    store = Store(configured.dynamo, settings)
    runtime.configure(settings, store)  # `configured` restores the runtime afterwards
    return store


def test_a_commit_racing_the_expiry_is_kept(
    short_retention: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    call("create-topics", {"topics": [{"name": "t", "numPartitions": 1}]})
    commit("g", 1)
    check = short_retention.dynamo.get(schema.retention_key("g"))
    assert check is not None
    read_all = OffsetStore.fetch_all
    raced: list[int] = []

    def read_then_a_commit_lands(self: OffsetStore, group_id: str):
        found = read_all(self, group_id)
        if not raced:  # once: right after the check's first read, before any delete
            time.sleep(0.005)  # a later commit timestamp than the one read
            commit("g", 2)
            raced.append(2)
        return found

    monkeypatch.setattr(OffsetStore, "fetch_all", read_then_a_commit_lands)
    # Far past the retention: what the check read has expired.
    offset_retention.check_retention(short_retention, check, runtime.now_ms() + 10 * RETENTION_MS)
    monkeypatch.undo()
    assert committed("g") == 2


def test_an_expired_offset_nobody_touched_is_still_deleted(short_retention: Store) -> None:
    call("create-topics", {"topics": [{"name": "t", "numPartitions": 1}]})
    commit("h", 1)
    check = short_retention.dynamo.get(schema.retention_key("h"))
    assert check is not None
    offset_retention.check_retention(short_retention, check, runtime.now_ms() + 10 * RETENTION_MS)
    assert OffsetStore(short_retention.dynamo).fetch_all("h") == []
