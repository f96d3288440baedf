"""GroupMember.report_lags: a member's lags reach the coordinator with its heartbeats and show
in describe-group-activity, in a consumer group, a classic group, and for a classic-protocol
member of a consumer group."""

from __future__ import annotations

import pytest

from groupcoord.client import GroupMember, TopicPartition
from tests.e2e.helpers import (
    CLASSIC_HEARTBEAT_MS,
    CLASSIC_SESSION_MS,
    CONSUMER_SESSION_MS,
    CONVERGE_S,
    create_topic,
    unique,
    wait_until,
)
from tests.support.api import Api


def _lags(coordinator: str, group_id: str) -> dict[int, int | None]:
    body = {"groupIds": [group_id], "includeMembers": True}
    (group,) = Api(coordinator).ok("describe-group-activity", body)["groups"]
    return {p["partitionIndex"]: p.get("lagMs") for p in group["partitions"]}


def _member(coordinator: str, group_id: str, topic: str, protocol: str) -> GroupMember:
    classic = protocol == "classic"
    return GroupMember(
        coordinator,
        group_id,
        topics=[topic],
        protocol=protocol,
        session_timeout_ms=CLASSIC_SESSION_MS if classic else CONSUMER_SESSION_MS,
        heartbeat_interval_ms=CLASSIC_HEARTBEAT_MS if classic else None,
    )


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_reported_lags_show_on_the_coordinator(coordinator: str, protocol: str) -> None:
    topic, group_id = unique("lag"), unique(f"lag-{protocol}")
    create_topic(coordinator, topic, 2)
    member = _member(coordinator, group_id, topic, protocol)
    try:
        wait_until(lambda: len(member.poll(0.1)) == 2, CONVERGE_S, "both partitions")
        with pytest.raises(ValueError, match="lags"):
            member.report_lags({TopicPartition(topic, 0): -5})
        member.report_lags({TopicPartition(topic, 0): 42_000, TopicPartition(topic, 1): 0})
        wait_until(lambda: _lags(coordinator, group_id) == {0: 42_000, 1: 0}, CONVERGE_S, "lags")
        member.report_lags({TopicPartition(topic, 1): 700_000})  # into the 10 min band
        wanted = {0: 42_000, 1: 700_000}
        wait_until(lambda: _lags(coordinator, group_id) == wanted, CONVERGE_S, "a band")
    finally:
        member.close()


def test_a_classic_member_of_a_consumer_group_reports_them_too(coordinator: str) -> None:
    topic, group_id = unique("lag"), unique("lag-mixed")
    create_topic(coordinator, topic, 2)
    members = [_member(coordinator, group_id, topic, "consumer")]
    try:
        wait_until(lambda: len(members[0].poll(0.1)) == 2, CONVERGE_S, "the first member")
        members.append(_member(coordinator, group_id, topic, "classic"))

        def one_each() -> bool:
            owned = [m.poll(0.1) for m in members]  # every member polled, each time
            return all(len(o) == 1 for o in owned)

        wait_until(one_each, CONVERGE_S, "a partition each")
        for lag_ms, m in zip((3_000, 90_000), members, strict=True):
            m.report_lags({tp: lag_ms for tp in m.assignment()})
        expected = {
            tp.partition: lag_ms
            for lag_ms, m in zip((3_000, 90_000), members, strict=True)
            for tp in m.assignment()
        }

        def shown() -> bool:
            for m in members:
                m.poll(0.05)
            return _lags(coordinator, group_id) == expected

        wait_until(shown, CONVERGE_S, "both members' lags")
    finally:
        for m in members:
            m.close()
