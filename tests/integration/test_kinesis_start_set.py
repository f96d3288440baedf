"""No record is skipped at any initial position, whenever the stream was resharded: before the
topic was bound, between the binding and the group's first member, or while the members run.
KinesisConsumer reads a one-shard stream through a split of shard 0, on kinesis-local and a
coordinator on DynamoDB Local; the records it must read are those put at or after the start
(every one for TRIM_HORIZON, from the timestamp for AT_TIMESTAMP, from the group's creation
for LATEST)."""

from __future__ import annotations

import time

import pytest

from groupcoord.client import GroupMember
from groupcoord.store.kinesis.streams import Streams as KinesisStreams
from groupcoord.store.kinesis.streams import StreamUnavailable
from groupcoord.store.store import Store
from tests.support.api import Api
from tests.support.consumer import Member, settle, unique
from tests.support.kinesis import (
    FAST_LOOP_SETTINGS,
    Streams,
    deployment_fixture,
    kinesis_topic,
    new_topic,
    owned,
    streams_fixture,
    topic_name,
)
from tests.support.kinesis_loop import Running, group_name, put

deployed = deployment_fixture(FAST_LOOP_SETTINGS)
streams = streams_fixture()

POSITION_CONFIG = "groupcoord.kinesis.initial.position"
RESHARDS = ("before_binding", "before_first_member", "while_members_run")
# A LATEST group's start is its creation, which KinesisConsumer reads from a second earlier
# (clocks): what a LATEST group must read is put that long after it started.
LATEST_MARGIN_S = 1.2


def _reshard(streams: Streams, arn: str) -> None:
    """Records into shard 0, a split of shard 0, a record into a child."""
    put(streams, arn, "a")
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    put(streams, arn, "b", hash_key="0")


def _member(api: Api, topic: str, endpoint: str) -> Running:
    """A group's first member, once it owns a shard (the group exists: LATEST started)."""
    running = Running(api, group_name(), topic, endpoint, fetch_interval_s=0.2)
    running.until(lambda: running.owned(), "a first assignment", timeout_s=30)
    return running


@pytest.mark.parametrize("reshard", RESHARDS)
@pytest.mark.parametrize("position", ["TRIM_HORIZON", "AT_TIMESTAMP", "LATEST"])
def test_no_record_at_or_after_the_start_is_skipped(
    deployed: tuple[Api, Store],
    streams: Streams,
    kinesis_endpoint: str,
    position: str,
    reshard: str,
) -> None:
    api, _ = deployed
    arn = streams.create(1)
    put(streams, arn, "old")
    time.sleep(0.3)
    start_ms = int(time.time() * 1000)
    time.sleep(0.3)
    config = f"AT_TIMESTAMP:{start_ms}" if position == "AT_TIMESTAMP" else position
    if reshard == "before_binding":
        _reshard(streams, arn)
    topic = new_topic(api, arn, configs={POSITION_CONFIG: config})
    if reshard == "before_first_member":
        _reshard(streams, arn)
    running = _member(api, topic, kinesis_endpoint)
    try:
        if position == "LATEST":
            time.sleep(LATEST_MARGIN_S)
        if reshard == "while_members_run":
            _reshard(streams, arn)
        put(streams, arn, "c", hash_key="0")
        must = {
            "TRIM_HORIZON": ["old", "a", "b", "c"],
            "AT_TIMESTAMP": ["a", "b", "c"],
            "LATEST": ["a", "b", "c"] if reshard == "while_members_run" else ["c"],
        }[position]
        running.until(
            lambda: set(must) <= set(running.data()), f"{must} (read {running.data()})", 30
        )
    finally:
        running.close()
    read = running.data()
    assert len(read) == len(set(read)), read  # one member, no handover: once each
    if position == "LATEST":
        assert set(must) <= set(read) <= {"old", "a", "b", "c"}, read
    else:
        # Exactly: "old" precedes "a" in shard 0, so it would have come by now.
        assert sorted(read) == sorted(must), read


def test_a_latest_group_created_before_the_binding_reads_what_closed_in_between(
    deployed: tuple[Api, Store], streams: Streams, kinesis_endpoint: str
) -> None:
    """LATEST starts at the group's creation: a group that existed before the topic was bound
    reads shard 0's records put since, though shard 0 split before the binding (the binding
    dated that close 0, before any group, and the records were never read)."""
    api, _ = deployed
    arn = streams.create(1)
    put(streams, arn, "old")
    time.sleep(LATEST_MARGIN_S)
    topic, group = topic_name(), group_name()
    early = GroupMember(api.base_url, group, topics=[topic])  # the group exists from now
    early.poll(0.5)
    early.close()
    time.sleep(LATEST_MARGIN_S)
    _reshard(streams, arn)
    assert kinesis_topic(api, topic, arn, configs={POSITION_CONFIG: "LATEST"})["errorCode"] == 0
    running = Running(api, group, topic, kinesis_endpoint, fetch_interval_s=0.2)
    try:
        running.until(lambda: {"a", "b"} <= set(running.data()), "a and b", 30)
    finally:
        running.close()
    assert sorted(running.data()) == ["a", "b"]


class WithoutShardFilter(KinesisStreams):
    """kinesis-local's answers, as a Kinesis that does not answer ListShards' ShardFilter."""

    def open_at(self, arn: str, at_ms: int, max_shards: int) -> frozenset[str]:
        raise StreamUnavailable("ListShards: InvalidArgumentException")


def test_an_at_timestamp_after_a_split_starts_at_the_children_and_never_skips_without_filter(
    deployed: tuple[Api, Store], streams: Streams
) -> None:
    """Shard 0 split before the timestamp: Kinesis lists its children open then, so the group
    starts at them (shard 0 is done). Without that answer the binding dates shard 0's close at
    the binding: the group reads shard 0 from the timestamp (nothing, then its end) first."""
    api, store = deployed
    arn = streams.create(1)
    streams.split(arn, streams.shards(arn)[0]["ShardId"])
    # Over a second: kinesis-local reads ShardFilter's Timestamp to the whole second (AWS to the
    # millisecond), so a timestamp less than a second after the split could fall before it.
    time.sleep(1.2)
    config = {POSITION_CONFIG: f"AT_TIMESTAMP:{int(time.time() * 1000)}"}
    time.sleep(0.3)
    exact = new_topic(api, arn, configs=config)
    asked_kinesis, store.kinesis = store.kinesis, WithoutShardFilter()
    try:
        fallback = new_topic(api, arn, configs=config)
    finally:
        store.kinesis = asked_kinesis
    for topic, first in ((exact, {1, 2}), (fallback, {0})):
        member = Member(api, unique("g"), topics=[topic])
        member.join()
        settle([member])
        assert owned(member) == first, topic
