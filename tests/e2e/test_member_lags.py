"""GroupMember.report_lags: a consumer-protocol member's lags reach the coordinator with its
heartbeats and show in describe-group-activity; the classic protocol keeps them client-side."""

from __future__ import annotations

import pytest

from groupcoord.client import GroupMember, TopicPartition
from tests.e2e.helpers import CONSUMER_SESSION_MS, CONVERGE_S, create_topic, unique, wait_until
from tests.support.api import Api


def _lags(coordinator: str, group_id: str) -> dict[int, int | None]:
    body = {"groupIds": [group_id], "includeMembers": True}
    (group,) = Api(coordinator).ok("describe-group-activity", body)["groups"]
    return {p["partitionIndex"]: p.get("lagMs") for p in group["partitions"]}


def test_reported_lags_show_on_the_coordinator(coordinator: str) -> None:
    topic, group_id = unique("lag"), unique("lag-g")
    create_topic(coordinator, topic, 2)
    member = GroupMember(
        coordinator, group_id, topics=[topic], session_timeout_ms=CONSUMER_SESSION_MS
    )
    try:
        wait_until(lambda: len(member.poll(0.1)) == 2, CONVERGE_S, "both partitions")
        with pytest.raises(ValueError, match="lags"):
            member.report_lags({TopicPartition(topic, 0): -5})
        member.report_lags({TopicPartition(topic, 0): 42_000, TopicPartition(topic, 1): 0})
        wait_until(lambda: _lags(coordinator, group_id) == {0: 42_000, 1: 0}, CONVERGE_S, "lags")
        member.report_lags({TopicPartition(topic, 1): 700_000})  # into the 10 min band
        wait_until(
            lambda: _lags(coordinator, group_id) == {0: 42_000, 1: 700_000}, CONVERGE_S, "a band"
        )
    finally:
        member.close()
