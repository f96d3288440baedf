"""A table written before names were escaped in keys is upgraded by store/rekey.py: the groups
whose ids hold `#` or `%` are found again, with their offsets and members; nothing else moves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from groupcoord import runtime
from groupcoord.store import rekey, schema
from groupcoord.store.store import Store
from tests.support import in_process
from tests.support.in_process import call

HOSTILE = "team#a%b"


@pytest.fixture
def store_now(configured: Store) -> Store:
    """The in-process runtime, with a first join that completes at once."""
    settings = replace(configured.settings, group_initial_rebalance_delay_ms=0)
    store = Store(configured.dynamo, settings)
    runtime.configure(settings, store)  # `configured` restores the runtime afterwards
    return store


def commit(group: str, offset: int) -> None:
    in_process.commit(group, "t", 1, offset)


def committed(group: str) -> int:
    return in_process.committed(group, "t", 1)


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
