"""Lags a member reports (consumer-group-heartbeat's partitionLags, core/lag.py): they cost no
write of their own within a band, force one when a band is crossed, are shown by
describe-group-activity, and steer which partitions the uniform assignor moves.

Driven on a clock the test controls through the service functions, on the service tests'
store (in memory, or DynamoDB Local when CI gives it), as test_session_renewal.py.
"""

from __future__ import annotations

from typing import Any

from groupcoord.core.topics import TopicRecord
from groupcoord.models.activity import DescribeGroupActivityRequest
from groupcoord.service.classic_group import load
from groupcoord.service.group_activity import describe_group_activity
from groupcoord.store.store import Store
from groupcoord.topic_ids import new_topic_id
from tests.integration.test_session_renewal import (
    INTERVAL_MS,
    NOW,
    _classic_beat,
    _classic_group,
    _consumer_group,
    _ConsumerMember,
    _ctx,
    _unique,
)


def _beat(member: _ConsumerMember, now_ms: int, lags: dict[int, int]) -> int:
    """A heartbeat reporting `lags` (partition -> ms) on the member's only topic; how many
    items it wrote."""
    (owned,) = member.owned
    member_lags = [{"topicId": owned["topicId"], "partitions": [
        {"partition": p, "lagMs": ms} for p, ms in sorted(lags.items())
    ]}]  # fmt: skip
    answer, usage = member.beat(now_ms, partitionLags=member_lags)
    assert answer["errorCode"] == 0, answer
    return usage.by_operation.get("put_item", 0)


def _shown(store: Store, group_id: str, now_ms: int) -> dict[int, Any]:
    request = DescribeGroupActivityRequest(group_ids=[group_id], include_members=True)
    (group,) = describe_group_activity(request, _ctx(store, now_ms)).to_json_dict()["groups"]
    return {p["partitionIndex"]: p.get("lagMs") for p in group["partitions"]}


def test_lags_within_a_band_ride_on_the_renewals_and_a_band_crossed_writes_at_once(
    service_store: Store,
) -> None:
    interval = service_store.settings.group_consumer_heartbeat_interval_ms
    (member,) = _consumer_group(service_store, NOW, 1)
    at = [NOW + i * (interval + 50) for i in range(1, 9)]
    assert _beat(member, at[0], {0: 300, 1: 0}) == 1  # first values: written at once
    assert _shown(service_store, member.group_id, at[0])[0] == 300
    # Caught up (under 1 s) all along: the steady pattern, one write in three beats.
    writes = [_beat(member, t, {0: 200 + 100 * i, 1: 0}) for i, t in enumerate(at[1:4])]
    assert writes == [0, 0, 1]
    assert _shown(service_store, member.group_id, at[3])[0] == 400  # carried by the renewal
    assert _beat(member, at[4], {0: 15_000}) == 1  # into the 10 s band: at once
    shown = _shown(service_store, member.group_id, at[4])
    assert (shown[0], shown[1]) == (15_000, None)  # a report replaces the last one
    assert _beat(member, at[5], {0: 7_000}) == 0  # back under 10 s, not under half of it
    assert _beat(member, at[6], {0: 4_000}) == 1  # under 5 s: written
    assert _shown(service_store, member.group_id, at[6])[0] == 4_000


def test_a_lag_on_a_partition_the_member_does_not_hold_is_dropped(service_store: Store) -> None:
    first, second = _consumer_group(service_store, NOW, 2)
    (mine,) = first.owned
    theirs = next(iter(second.owned))["partitions"][0]
    assert _beat(first, NOW + 100, {mine["partitions"][0]: 70_000, theirs: 90_000}) == 1
    shown = _shown(service_store, first.group_id, NOW + 100)
    assert shown[mine["partitions"][0]] == 70_000
    assert shown[theirs] is None


def test_the_uniform_assignor_moves_the_partitions_least_behind(service_store: Store) -> None:
    topic = _unique("t")
    service_store.topics.create(TopicRecord(topic, new_topic_id(), 6), now_ms=0)
    group_id = _unique("lagging")
    holder = _ConsumerMember(service_store, group_id, topic, NOW)
    for _ in range(2):
        holder.beat(NOW)
    assert sorted(holder.owned[0]["partitions"]) == [0, 1, 2, 3, 4, 5]
    _beat(holder, NOW + 100, {1: 120_000, 3: 3_600_000, 5: 45_000})
    joiner = _ConsumerMember(service_store, group_id, topic, NOW + 200)
    for t in range(300, 1300, 100):  # revoke, release, acknowledge
        holder.beat(NOW + t)
        joiner.beat(NOW + t)
    assert sorted(holder.owned[0]["partitions"]) == [1, 3, 5]
    assert sorted(joiner.owned[0]["partitions"]) == [0, 2, 4]


def _classic_lags(store: Store, group_id: str, member_id: str) -> tuple:
    group = load(store, group_id)
    assert group is not None
    member = store.classic.member(group, member_id)
    assert member is not None
    return member.lags


def test_a_classic_heartbeat_keeps_lags_the_same_way(service_store: Store) -> None:
    group_id = _classic_group(service_store, 1)
    topic_id = new_topic_id()

    def beat(i: int, lag_ms: int) -> int:
        lags = [{"topicId": topic_id, "partitions": [{"partition": 0, "lagMs": lag_ms}]}]
        usage = _classic_beat(
            service_store, group_id, "m-0", NOW + i * (INTERVAL_MS + 50), partitionLags=lags
        )
        return usage.by_operation.get("update_item", 0)

    assert beat(1, 100) == 1  # a first value: at once
    assert _classic_lags(service_store, group_id, "m-0") == ((topic_id, 0, 100),)
    assert [beat(i, 200 + i) for i in (2, 3, 4)] == [0, 0, 1]  # rides on the renewal
    assert _classic_lags(service_store, group_id, "m-0") == ((topic_id, 0, 204),)
    assert beat(5, 75_000) == 1  # into the 1 min band: at once
    assert _classic_lags(service_store, group_id, "m-0") == ((topic_id, 0, 75_000),)
