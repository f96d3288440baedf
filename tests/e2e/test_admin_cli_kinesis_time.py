"""`groupcoord offsets reset --to-datetime` on a Kinesis-backed topic, against a live `serve`
on kinesis-local: the group's next read of each shard starts at its first record at or after
the time (Kinesis' AT_TIMESTAMP), shown as such until the group reads past it; refused for a
topic that is not Kinesis-backed (a member's own commit of a time: test_kinesis_positions)."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.admin_cli import cli_fixture
from tests.support.api import Api
from tests.support.kinesis import (
    FAST_LOOP_SETTINGS,
    Streams,
    commit_position,
    kinesis_topic,
    streams_fixture,
)
from tests.support.kinesis_loop import Running, group_name, put
from tests.support.servers import running_serve

streams = streams_fixture()
# Between the records before the time and those after: kinesis-local's arrival times and its
# AT_TIMESTAMP are exact to the millisecond, but CI's busy cores may delay a put's arrival.
APART_S = 1.5


@pytest.fixture(scope="module")
def served(kinesis_endpoint: str) -> Iterator[str]:
    with running_serve(settings=FAST_LOOP_SETTINGS) as url:
        yield url


cli = cli_fixture("served")


def test_to_datetime_resumes_each_shard_at_its_first_record_at_or_after_the_time(
    cli: Any, served: str, streams: Streams, kinesis_endpoint: str
) -> None:
    api = Api(served)
    arn = streams.create(2)
    topic, group = f"kt-{uuid.uuid4().hex[:8]}", group_name()
    assert kinesis_topic(api, topic, arn)["errorCode"] == 0
    low, high = (s["HashKeyRange"]["StartingHashKey"] for s in streams.shards(arn))
    put(streams, arn, "old-0", hash_key=low)
    put(streams, arn, "old-1", hash_key=high)
    time.sleep(APART_S)
    at = datetime.datetime.now(datetime.UTC).replace(microsecond=0) + datetime.timedelta(seconds=1)
    time.sleep(APART_S + 1)
    put(streams, arn, "new-0", hash_key=low)
    put(streams, arn, "new-1", hash_key=high)
    put(streams, arn, "new-2", hash_key=low)

    when = at.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    args = ["offsets", "reset", group, "--topic", topic, "--to-datetime", when]
    planned = cli(*args, "--dry-run", "--json").json()["plan"]
    at_ms = int(at.timestamp() * 1000)
    assert [s["newKinesisPosition"] for s in planned] == [{"atTimestampMs": at_ms}] * 2
    shown_at = f"AT_TIMESTAMP:{at.strftime('%Y-%m-%dT%H:%M:%S')}.000Z"
    assert shown_at in cli(*args, "--dry-run").out
    assert cli(*args).code == 0
    shards = cli("offsets", "show", group, "--json").json()["offsets"]
    assert [o["kinesis"]["checkpoint"] for o in shards] == [shown_at] * 2

    running = Running(api, group, topic, kinesis_endpoint)
    try:
        running.until(lambda: len(running.data()) >= 3, "the records after the time")
        time.sleep(2)  # a record before the time would come with them or right after
        assert sorted(running.data()) == ["new-0", "new-1", "new-2"]
    finally:
        running.close()
    after = cli("offsets", "show", group, "--json").json()["offsets"]
    assert all(o["kinesis"]["checkpoint"] != shown_at for o in after)


def test_to_datetime_is_refused_where_the_coordinator_cannot_find_a_time(
    cli: Any, served: str, streams: Streams
) -> None:
    api = Api(served)
    plain = f"plain-{uuid.uuid4().hex[:8]}"
    api.ok("create-topics", {"topics": [{"name": plain, "numPartitions": 1}]})
    group = group_name()
    reset = ["offsets", "reset", group, "--to-datetime"]
    cli(*reset, "2026-01-01T00:00:00Z", "--topic", plain).refused(
        plain, "not Kinesis-backed", "--to-offset"
    )
    cli(*reset, "yesterday", "--topic", plain).refused("not a date and time")
    cli(*reset, "2026-01-01T00:00:00Z", "--to-earliest", "--topic", plain).refused("give one of")
    # A time is an admin's reset (from outside the group), and stands alone.
    topic = f"kt-{uuid.uuid4().hex[:8]}"
    assert kinesis_topic(api, topic, streams.create(1))["errorCode"] == 0
    assert commit_position(api, None, topic, 0, {"atTimestampMs": 1}, group) == 0
    mixed = {"atTimestampMs": 1, "sequenceNumber": "5"}
    body = {"groupId": group, "topics": [{"name": topic, "partitions": [
        {"partitionIndex": 0, "committedOffset": 0, "kinesisPosition": mixed}]}]}  # fmt: skip
    assert api.call("offset-commit", body).status == 400
