"""The admin CLI on Kinesis-backed topics against a live `groupcoord serve` that reaches
kinesis-local: the server's reasons printed (not just a code's name), and `offsets reset`'s
dry run refusing what the real run would."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.admin_cli import cli_fixture
from tests.support.api import Api
from tests.support.consumer import Member, settle
from tests.support.kinesis import (
    FAST_LOOP_SETTINGS,
    Streams,
    commit_position,
    kinesis_topic,
    streams_fixture,
)
from tests.support.servers import running_serve

streams = streams_fixture()


@pytest.fixture(scope="module")
def served(kinesis_endpoint: str) -> Iterator[str]:
    """A serve process (in-memory store) whose Kinesis client reaches kinesis-local
    (AWS_ENDPOINT_URL_KINESIS, set by the kinesis_endpoint fixture, is inherited)."""
    with running_serve(settings=FAST_LOOP_SETTINGS) as url:
        yield url


cli = cli_fixture("served")


@pytest.fixture(scope="module")
def stream_topic(served: str, streams: Streams) -> str:
    name = f"ks-{uuid.uuid4().hex[:8]}"
    created = kinesis_topic(Api(served), name, streams.create(2))
    assert created["errorCode"] == 0, created
    return name


def test_topics_alter_on_a_kinesis_topic_prints_the_servers_reason(
    cli: Any, stream_topic: str
) -> None:
    line = cli("topics", "alter", stream_topic, "--partitions", "5").refused(
        "INVALID_REQUEST", "backed by a Kinesis stream", "shards"
    )
    assert "invalid request" not in line


@pytest.mark.parametrize("dry_run", [True, False])
def test_offsets_reset_to_an_offset_on_a_kinesis_topic_is_refused_naming_to_sequence(
    cli: Any, stream_topic: str, dry_run: bool
) -> None:
    group = f"g-{uuid.uuid4().hex[:8]}"
    args = ["offsets", "reset", group, "--topic", stream_topic, "--to-earliest"]
    cli(*args, *(["--dry-run"] if dry_run else [])).refused(
        stream_topic, "Kinesis", "--to-sequence"
    )
    # Nothing was committed either way.
    cli("offsets", "show", group).refused("no committed offsets")


def test_a_sequence_on_a_kinesis_topic_plans_and_resets(cli: Any, stream_topic: str) -> None:
    group = f"g-{uuid.uuid4().hex[:8]}"
    args = ["offsets", "reset", group, "--topic", f"{stream_topic}:0", "--to-sequence", "0"]
    planned = cli(*args, "--dry-run", "--json").json()
    assert planned["plan"][0]["newKinesisPosition"]["sequenceNumber"] == "0"
    assert cli(*args).code == 0


def test_the_servers_42_on_a_kinesis_partition_carries_its_reason(
    served: str, stream_topic: str
) -> None:
    body = Api(served).ok(
        "offset-commit",
        {
            "groupId": f"g-{uuid.uuid4().hex[:8]}",
            "generationIdOrMemberEpoch": -1,
            "memberId": "",
            "topics": [
                {"name": stream_topic, "partitions": [{"partitionIndex": 0, "committedOffset": 0}]}
            ],
        },
    )
    partition = body["topics"][0]["partitions"][0]
    assert partition["errorCode"] == 42
    assert "Kinesis shard shardId-" in partition["errorMessage"]
    assert "kinesisPosition" in partition["errorMessage"]


def test_topics_create_with_config_binds_a_topic_to_a_stream(
    cli: Any, served: str, streams: Streams
) -> None:
    arn, name = streams.create(3), f"kc-{uuid.uuid4().hex[:8]}"
    made = cli(
        "topics", "create", name, "--config", f"groupcoord.kinesis.stream.arn={arn}",
        "--config", "groupcoord.kinesis.initial.position=LATEST",
    )  # fmt: skip
    assert made.code == 0 and f"Created topic {name} (3 partitions" in made.out, made
    shown = cli("topics", "describe", name, "--json").json()["topics"][0]
    assert shown["kinesisStreamArn"] == arn and shown["partitions"] == 3
    found = Api(served).ok("metadata", {"topics": [{"name": name}]})["topics"][0]
    assert found["kinesisInitialPosition"]["type"] == "LATEST"  # the second --config too
    usage = cli("topics", "create", f"{name}-2", "--config", "without-equals")
    assert usage.code == 2 and "expected NAME=VALUE" in usage.err


def test_offsets_show_reads_like_a_lease_table(cli: Any, served: str, streams: Streams) -> None:
    """A split stream: the parent checkpointed, then finished (SHARD_END); its children
    blocked by it, then owned by a member that reports a lag."""
    api = Api(served)
    arn = streams.create(1)
    put = streams.client.put_record(StreamARN=arn, PartitionKey="k", Data=b"x")
    streams.split(arn, "shardId-000000000000")
    topic, group = f"kl-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    assert kinesis_topic(api, topic, arn)["errorCode"] == 0
    sequence = put["SequenceNumber"]
    assert commit_position(api, None, topic, 0, {"sequenceNumber": sequence}, group) == 0

    def shown() -> dict[int, dict[str, Any]]:
        offsets = cli("offsets", "show", group, "--json").json()["offsets"]
        return {o["partition"]: o for o in offsets}

    first = shown()
    assert first[0]["kinesis"]["state"] == "closed"
    assert first[0]["kinesis"]["checkpoint"] == f"{sequence}:0" and first[0]["offset"] is None
    children = {first[p]["kinesis"]["shardId"] for p in (1, 2)}
    assert all(first[p]["kinesis"]["parentShardIds"] == ["shardId-000000000000"] for p in (1, 2))
    assert {first[p]["kinesis"]["state"] for p in (1, 2)} == {"blocked"}

    end = {"shardEnd": True, "childShardIds": sorted(children)}
    assert commit_position(api, None, topic, 0, end, group) == 0
    member = Member(api, group, [topic])
    member.join()
    settle([member])
    topic_id = next(iter(member.owned))
    lags = [{"topicId": topic_id, "partitions": [{"partition": 1, "lagMs": 4321}]}]
    assert member.heartbeat(partitionLags=lags)["errorCode"] == 0
    try:
        after = shown()
        assert after[0]["kinesis"]["state"] == "done"
        assert after[0]["kinesis"]["checkpoint"] == "SHARD_END"
        assert after[0]["memberId"] is None  # finished: nobody's, and not waiting for anybody
        for p in (1, 2):
            assert after[p]["kinesis"]["state"] == "open"
            assert after[p]["memberId"] == member.member_id
        assert after[1]["kinesis"]["lagMs"] == 4321
        table = cli("offsets", "show", group).out.splitlines()
        assert table[0].split() == [
            "GROUP", "TOPIC", "PARTITION", "SHARD-ID", "PARENTS", "STATE", "CHECKPOINT",
            "CONSUMER-ID", "HOST", "CLIENT-ID", "LAG-MS",
        ]  # fmt: skip
        assert table[1].split()[3:7] == ["shardId-000000000000", "-", "done", "SHARD_END"]
        row = table[2].split()
        assert row[0] == group and row[4:6] == ["shardId-000000000000", "open"]
        assert row[7:] == [member.member_id, "127.0.0.1", "test-client", "4321"]
    finally:
        member.leave()
