"""Kinesis checkpoints over offset-commit and offset-fetch, on DynamoDB Local with kinesis-local:
a position (up to 129 digits and a sub-sequence) is committed and fetched, never moved back
(the admin's reset from outside an empty group aside), a shard's end accepted only for a
closed shard or with its children named (which syncs the registry), refused retriably on a
shard the group is done with (its end again aside), and fenced by the member's epoch like any
commit."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.cli import main
from groupcoord.service.kinesis.sync import Synced
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.consumer import Member, settle, unique
from tests.support.kinesis import (
    Streams,
    deployment_fixture,
    new_topic,
    streams_fixture,
    synced,
)
from tests.support.kinesis import commit_position as commit
from tests.support.kinesis import fetched_position as fetched

SETTINGS = {"groupcoord.kinesis.shard.sync.interval.ms": "60000"}
deployed = deployment_fixture(SETTINGS)
streams = streams_fixture()


def position(sequence: str | None, sub: int = 0, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"subSequenceNumber": sub, **extra}
    if sequence is not None:
        found["sequenceNumber"] = sequence
    return found


def joined(api: Api, topic: str) -> tuple[Member, str]:
    group = unique("g")
    member = Member(api, group, topics=[topic])
    assert member.join()["errorCode"] == 0
    settle([member])
    return member, group


def test_positions_are_committed_fetched_and_never_moved_back(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    member, group = joined(api, topic)
    long = "4" + "9" * 128  # 129 digits: past any int64 or DynamoDB number
    assert commit(api, member, topic, 0, position(long, 7)) == 0
    assert fetched(api, group, topic, 0) == {
        "sequenceNumber": long,
        "subSequenceNumber": 7,
        "shardEnd": False,
        "childShardIds": [],
        "atTimestampMs": None,
    }
    assert commit(api, member, topic, 0, position(long, 7)) == 0  # a retry
    assert commit(api, member, topic, 0, position(long, 6)) == 1  # back: refused
    assert commit(api, member, topic, 0, position("5" + "0" * 127)) == 1  # fewer digits
    assert fetched(api, group, topic, 0)["subSequenceNumber"] == 7
    assert commit(api, member, topic, 0, position("5" + "0" * 128)) == 0
    # An epoch older than the one the member holds the shard since: fenced (KIP-1251).
    assert commit(api, member, topic, 0, position("6" + "0" * 128), epoch=0) == 113
    assert fetched(api, group, topic, 0)["sequenceNumber"] == "5" + "0" * 128
    # No position on a Kinesis topic, or one on another topic: 42.
    assert commit(api, member, topic, 0, None) == 42
    plain = unique("t")
    api.ok("create-topics", {"topics": [{"name": plain, "numPartitions": 1}]})
    assert commit(api, None, plain, 0, position("1"), group=unique("g")) == 42
    # The admin's reset: from outside, once the group is empty, back is allowed.
    assert commit(api, None, topic, 0, position("1"), group=group) != 0  # not while it has members
    assert member.leave()["errorCode"] == 0
    assert commit(api, None, topic, 0, position("1"), group=group) == 0
    assert fetched(api, group, topic, 0)["sequenceNumber"] == "1"


def test_a_zombie_is_answered_as_fenced_whatever_its_position(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    """A member no longer in the group (it left, as one whose session ran out is removed)
    commits the batch it was on after another member took the shard over and checkpointed
    further: the member is judged first (25), not its position, which is behind the group's
    (1). A zombie must learn it is fenced, so that it gives its shards up and rejoins."""
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    zombie, group = joined(api, topic)
    assert commit(api, zombie, topic, 0, position("100")) == 0
    heir = Member(api, group, topics=[topic])
    assert heir.join()["errorCode"] == 0
    assert zombie.leave()["errorCode"] == 0
    settle([heir])
    assert commit(api, heir, topic, 0, position("300")) == 0
    assert commit(api, zombie, topic, 0, position("200")) == 25  # behind the heir's
    assert commit(api, zombie, topic, 0, position("400")) == 25  # ahead of it
    assert fetched(api, group, topic, 0)["sequenceNumber"] == "300"


def test_a_shard_end_needs_a_closed_shard_or_its_children(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(2)
    topic = new_topic(api, arn)
    member, group = joined(api, topic)
    end = position(None, shardEnd=True)
    assert commit(api, member, topic, 0, end) == 42  # open, as far as it knows
    first = streams.shards(arn)[0]["ShardId"]
    streams.split(arn, first)
    children = [s["ShardId"] for s in streams.shards(arn) if s.get("ParentShardId") == first]
    # Named children: accepted, and the registry synced from the report.
    named = position("10", shardEnd=True, childShardIds=children)
    assert commit(api, member, topic, 0, named) == 0
    partitions = api.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]["partitions"]
    assert [p["kinesisShard"]["shardId"] for p in partitions][2:] == children
    assert fetched(api, group, topic, 0)["shardEnd"] is True
    # The end is past every record, and the shard is done: not assignable any more (27).
    assert commit(api, member, topic, 0, position("99999")) == 27
    # A shard the registry knows closed takes its end without children.
    other = streams.shards(arn)[1]["ShardId"]
    streams.split(arn, other)
    assert synced(store, topic) is Synced.CHANGED
    settle([member])  # the sync told the group: its epoch moved
    assert commit(api, member, topic, 1, end) == 0


def test_a_done_shard_takes_its_end_again_and_nothing_else(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    api, store = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    member, group = joined(api, topic)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    assert synced(store, topic) is Synced.CHANGED
    settle([member])  # the sync told the group: its epoch moved
    end = position(None, shardEnd=True)
    assert commit(api, member, topic, 0, position("10")) == 0
    assert commit(api, member, topic, 0, end) == 0
    # A client whose answer was lost sends the same end again: accepted.
    assert commit(api, member, topic, 0, end) == 0
    # Anything else on the finished shard: refused, retriably (27), and nothing moves.
    assert commit(api, member, topic, 0, position("20")) == 27
    assert fetched(api, group, topic, 0)["shardEnd"] is True
    # The admin's reset of an empty group still may (reading the shard again).
    assert member.leave()["errorCode"] == 0
    assert commit(api, None, topic, 0, position("1"), group=group) == 0
    assert fetched(api, group, topic, 0)["sequenceNumber"] == "1"


def test_groupcoord_offsets_reset_sets_a_position_of_an_empty_group(
    deployed: tuple[Api, Store], streams: Streams, capsys: pytest.CaptureFixture[str]
) -> None:
    api, _ = deployed
    arn = streams.create(1)
    topic = new_topic(api, arn)
    member, group = joined(api, topic)
    assert commit(api, member, topic, 0, position("900", 2)) == 0
    reset = ["offsets", "reset", group, "--topic", topic, "--url", api.base_url]
    assert main([*reset, "--to-sequence", "5:1"]) == 1  # not while it has members
    assert member.leave()["errorCode"] == 0
    assert main([*reset, "--to-sequence", "5:1", "--dry-run"]) == 0
    assert "5:1" in capsys.readouterr().out
    assert fetched(api, group, topic, 0)["sequenceNumber"] == "900"
    assert main([*reset, "--to-sequence", "5:1"]) == 0
    assert fetched(api, group, topic, 0) == {
        "sequenceNumber": "5",
        "subSequenceNumber": 1,
        "shardEnd": False,
        "childShardIds": [],
        "atTimestampMs": None,
    }
    assert main([*reset, "--to-sequence", "05"]) == 1  # not a sequence number
    assert main([*reset, "--to-sequence", "5", "--to-earliest"]) == 1
