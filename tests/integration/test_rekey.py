"""A table written before names were escaped in keys is upgraded by store/rekey.py: the groups
whose ids hold `#` or `%` are found again, with their offsets and members; nothing else moves."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from groupcoord import runtime
from groupcoord.http.handler import make_api_handler
from groupcoord.http.routing import API_FUNCTION
from groupcoord.local.events import LambdaContext, http_api_event
from groupcoord.store import rekey, schema
from groupcoord.store.store import Store

HOSTILE = "team#a%b"


@pytest.fixture
def store_now(configured: Store) -> Store:
    """The in-process runtime, with a first join that completes at once."""
    settings = replace(configured.settings, group_initial_rebalance_delay_ms=0)
    store = Store(configured.dynamo, settings)
    runtime.configure(settings, store)  # `configured` restores the runtime afterwards
    return store


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
        "topics": [{"name": "t", "partitions": [{"partitionIndex": 1, "committedOffset": offset}]}],
    }
    assert call("offset-commit", body)["topics"][0]["partitions"][0]["errorCode"] == 0


def committed(group: str) -> int:
    body = {"groups": [{"groupId": group, "topics": [{"name": "t", "partitionIndexes": [1]}]}]}
    return call("offset-fetch", body)["groups"][0]["topics"][0]["partitions"][0]["committedOffset"]


def static_join(group: str) -> dict[str, Any]:
    return call(
        "join-group",
        {
            "groupId": group,
            "groupInstanceId": "instance-1",
            "sessionTimeoutMs": 30000,
            "protocolType": "consumer",
            "protocols": [{"name": "range", "metadata": ""}],
        },
    )


def test_rekey_moves_the_old_layouts_items_to_their_escaped_keys(
    store_now: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    call("create-topics", {"topics": [{"name": "t", "numPartitions": 2}]})
    with monkeypatch.context() as old_layout:
        old_layout.setattr(schema, "escaped", lambda name: name)
        commit(HOSTILE, 7)
        commit("plain", 3)
        joined = static_join(HOSTILE)
        assert committed(HOSTILE) == 7
    # Escaped again: the old items are out of reach.
    assert committed(HOSTILE) == -1

    dry = rekey.rekey(store_now.dynamo, dry_run=True)
    assert dry.groups == {HOSTILE} and dry.moved
    assert committed(HOSTILE) == -1  # a dry run changes nothing

    report = rekey.rekey(store_now.dynamo)
    assert report.groups == {HOSTILE}
    assert all(new.startswith(("G#team%23a%25b", "O#team%23a%25b#")) for _, new, _ in report.moved)
    assert committed(HOSTILE) == 7
    assert committed("plain") == 3
    described = call("describe-groups", {"groups": [HOSTILE]})["groups"][0]
    assert [m["memberId"] for m in described["members"]] == [joined["memberId"]]
    # The static instance claim moved too: the instance rejoining replaces its member (Kafka
    # gives it a new member id) instead of adding a second one.
    rejoined = static_join(HOSTILE)
    described = call("describe-groups", {"groups": [HOSTILE]})["groups"][0]
    assert [m["memberId"] for m in described["members"]] == [rejoined["memberId"]]
    assert [m["groupInstanceId"] for m in described["members"]] == ["instance-1"]
    # Idempotent: a second run finds nothing left to move.
    assert rekey.rekey(store_now.dynamo).moved == []


def test_new_partition_key_only_claims_the_groups_own_keys() -> None:
    assert rekey.new_partition_key("G#a#b#M3", "a#b") == "G#a%23b#M3"
    assert rekey.new_partition_key("O#a#b#12", "a#b") == "O#a%23b#12"
    assert rekey.new_partition_key("G#a#b", "a#b") == "G#a%23b"
    assert rekey.new_partition_key("G#a#bc#M3", "a#b") is None
    assert rekey.new_partition_key("TSUB#a#b", "a#b") is None
