"""The dashboard's group page draws a Kinesis-backed topic's shard lineage: every shard under
its parent, with its state (done, closed, blocked, open), checkpoint, owner and lag."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.api import Api
from tests.support.consumer import Member, settle
from tests.support.kinesis import Streams, commit_position, kinesis_topic, streams_fixture
from tests.support.servers import InProcessCoordinator

from .conftest import SETTINGS, screenshot

expect: Any
try:
    from playwright.sync_api import expect
except ImportError:  # the fixtures skip (or fail in CI) with the reason
    expect = None

pytestmark = pytest.mark.coordinator(SETTINGS, in_process=True)
streams = streams_fixture()
ROOT = "shardId-000000000000"


@pytest.fixture(scope="module")
def lineage(
    kinesis_endpoint: str, streams: Streams, coordinator: InProcessCoordinator
) -> Iterator[tuple[str, Member, dict[str, str]]]:
    """A stream split twice (the root into A and B, then A into A1 and A2), bound to a topic;
    the group finished the root, and a member owns A and B (A1, A2 wait for A), B 90 s
    behind."""
    api = Api(coordinator.url)
    arn = streams.create(1)
    streams.split(arn, ROOT)
    a, b = sorted(s["ShardId"] for s in streams.open_shards(arn))
    streams.split(arn, a)
    a1, a2 = sorted(s["ShardId"] for s in streams.open_shards(arn) if s["ShardId"] != b)
    topic, group = f"kd-{uuid.uuid4().hex[:8]}", f"kg-{uuid.uuid4().hex[:8]}"
    assert kinesis_topic(api, topic, arn)["errorCode"] == 0
    end = {"shardEnd": True, "childShardIds": [a, b]}
    assert commit_position(api, None, topic, 0, end, group) == 0
    member = Member(api, group, [topic])
    member.join()
    settle([member])
    (topic_id,) = member.owned
    partition_of = {
        p["kinesisShard"]["shardId"]: p["partitionIndex"]
        for p in api.ok("metadata", {"topics": [{"name": topic}]})["topics"][0]["partitions"]
    }
    lags = [{"topicId": topic_id, "partitions": [{"partition": partition_of[b], "lagMs": 90_000}]}]
    assert member.heartbeat(partitionLags=lags)["errorCode"] == 0
    try:
        yield group, member, {"root": ROOT, "a": a, "b": b, "a1": a1, "a2": a2}
    finally:
        member.leave()


def test_the_group_page_draws_the_shard_lineage(
    page: Any, coordinator: InProcessCoordinator, lineage: tuple[str, Member, dict[str, str]]
) -> None:
    group, _member, ids = lineage
    page.goto(f"{coordinator.url}/ui/groups/{group}")
    rows = page.locator("table.shards tbody tr")
    expect(rows).to_have_count(5)
    order = [ids["root"], ids["a"], ids["a1"], ids["a2"], ids["b"]]
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.shard)") == order
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.depth)") == ["0", "1", "2", "2", "1"]
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.state)") == [
        "done", "closed", "blocked", "blocked", "open",
    ]  # fmt: skip
    root = page.locator(f"tr[data-shard='{ids['root']}']")
    expect(root).to_contain_text("SHARD_END")
    b = page.locator(f"tr[data-shard='{ids['b']}']")
    expect(b).to_contain_text("M1")
    expect(b).to_contain_text("1 min 30 s behind")
    expect(page.locator(f"tr[data-shard='{ids['a1']}']")).to_contain_text(ids["a"])
    # The offsets table shows the checkpoint, not Kafka's meaningless offset 0.
    expect(page.locator("table.offsets tbody tr").first).to_contain_text("SHARD_END")
    screenshot(page, "kinesis-lineage")
