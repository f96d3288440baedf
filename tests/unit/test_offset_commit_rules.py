"""offset-commit's pure decisions (core/offset_commit.py): per-partition codes, the next step,
the answer."""

from __future__ import annotations

from groupcoord.core.offset_commit import (
    Next,
    ResolvedTopic,
    commit_answer,
    next_step,
    plan_partitions,
    refused_answer,
)
from groupcoord.core.topics import TopicRecord
from groupcoord.errors import Errors
from groupcoord.models.offsets import OffsetCommitRequest

ORDERS = TopicRecord("orders", "AAAAAAAAAAAAAAAAAAAAAQ", 2)


def request(*topics: dict) -> OffsetCommitRequest:
    return OffsetCommitRequest.model_validate({"groupId": "g", "topics": list(topics)})


def partitions(*indexes: int, metadata: str = "") -> list[dict]:
    return [
        {"partitionIndex": i, "committedOffset": 10, "committedMetadata": metadata} for i in indexes
    ]


def test_the_partitions_of_a_commit() -> None:
    asked = request(
        {"name": "orders", "partitions": partitions(0, 1, 7)},
        {"name": "secret", "partitions": partitions(0)},
    )
    plan = plan_partitions(
        asked,
        [
            ResolvedTopic(ORDERS, Errors.NONE),
            ResolvedTopic(None, Errors.TOPIC_AUTHORIZATION_FAILED),
        ],
        now_ms=5,
        metadata_max_bytes=4,
    )
    assert plan.codes == [
        [Errors.NONE, Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION],
        [Errors.TOPIC_AUTHORIZATION_FAILED],
    ]
    assert [(o.topic, o.partition, o.commit_timestamp_ms) for o in plan.offsets] == [
        ("orders", 0, 5),
        ("orders", 1, 5),
    ]
    assert plan.denied == {1}
    assert next_step(asked, plan, with_writes=False) is Next.WRITE
    assert next_step(asked, plan, with_writes=True) == Errors.INVALID_TXN_STATE  # all or nothing


def test_metadata_over_the_bound_is_12_for_that_partition_only() -> None:
    asked = request({"name": "orders", "partitions": partitions(0, metadata="toolong")})
    plan = plan_partitions(
        asked, [ResolvedTopic(ORDERS, Errors.NONE)], now_ms=0, metadata_max_bytes=4
    )
    assert plan.codes == [[Errors.OFFSET_METADATA_TOO_LARGE]] and plan.offsets == []
    assert next_step(asked, plan, with_writes=False) is Next.CHECK


def test_a_whole_commit_refusal_is_every_committable_partitions_code_and_the_top_one() -> None:
    asked = request({"name": "orders", "partitions": partitions(0, 7)})
    plan = plan_partitions(
        asked, [ResolvedTopic(ORDERS, Errors.NONE)], now_ms=0, metadata_max_bytes=4096
    )
    answer = commit_answer(asked, plan, Errors.STALE_MEMBER_EPOCH)
    assert answer.error_code == Errors.STALE_MEMBER_EPOCH
    codes = [p.error_code for p in answer.topics[0].partitions]
    assert codes == [Errors.STALE_MEMBER_EPOCH, Errors.UNKNOWN_TOPIC_OR_PARTITION]
    refused = refused_answer(asked, Errors.GROUP_AUTHORIZATION_FAILED)
    assert refused.error_code == 30
    assert [p.error_code for p in refused.topics[0].partitions] == [30, 30]
    assert next_step(request(), plan, with_writes=False) is Next.WRITE
    empty_group = OffsetCommitRequest.model_validate({"groupId": "", "topics": []})
    assert next_step(empty_group, plan, with_writes=False) == Errors.INVALID_GROUP_ID
