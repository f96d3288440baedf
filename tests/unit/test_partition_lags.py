"""Reported lags (core/lag.py): what a member item keeps, when a report is worth a write of its
own, and how the uniform assignor weighs lags when balance forces a move."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from groupcoord.core.consumer.assignment import pairs
from groupcoord.core.consumer.assignors import AssignorMember, assign_range, assign_uniform
from groupcoord.core.lag import BANDS_MS, band, changed_meaningfully, group_lags, kept
from groupcoord.models import limits
from groupcoord.models.consumer import ConsumerGroupHeartbeatRequest

HOLDS = {"t1": [0, 1, 2], "t2": [0]}


def test_bands_start_at_each_floor() -> None:
    assert [band(ms) for ms in (0, 999, 1000, 9_999, 10_000, 60_000, 600_000, 3_600_000)] == [
        0, 0, 1, 1, 2, 3, 4, 5,
    ]  # fmt: skip


def test_a_report_replaces_the_last_one_for_held_partitions_only() -> None:
    old = (("t1", 0, 500), ("t1", 5, 9), ("t3", 0, 7))  # t1-5 and t3-0 are no longer held
    assert kept(old, [("t1", 1, 20), ("t9", 0, 1), ("t2", 0, -4)], HOLDS) == (
        ("t1", 1, 20),
        ("t2", 0, 0),
    )
    assert kept(old, None, HOLDS) == (("t1", 0, 500),)  # not sent: the old, still held
    assert kept(old, None, None) == old  # holdings unknown (a classic member): as kept


def test_a_report_keeps_at_most_the_bound() -> None:
    many = [("t", p, 1) for p in range(limits.PARTITION_LAGS_MAX + 10)]
    assert len(kept((), many, None)) == limits.PARTITION_LAGS_MAX


def test_a_first_value_and_a_band_crossed_upwards_are_meaningful() -> None:
    old = (("t1", 0, 200),)
    assert not changed_meaningfully(old, (("t1", 0, 900),))
    assert changed_meaningfully(old, (("t1", 0, 1_000),))
    assert changed_meaningfully(old, (("t1", 0, 200), ("t1", 1, 0)))  # a first value
    assert not changed_meaningfully(old, ())  # a partition given up is left to the next write


def test_falling_back_a_band_takes_half_its_floor_so_a_lag_at_a_border_writes_once() -> None:
    old = (("t1", 0, 12_000),)  # band 2 (10 s .. 1 min)
    assert not changed_meaningfully(old, (("t1", 0, 9_000),))  # just under the floor
    assert not changed_meaningfully(old, (("t1", 0, 5_000),))  # half the floor
    assert changed_meaningfully(old, (("t1", 0, 4_999),))


@given(
    st.lists(st.tuples(st.sampled_from(["t1", "t2"]), st.integers(0, 3), st.integers(0, 10**7))),
    st.integers(0, 10**7),
)
def test_a_lag_moving_within_its_band_never_writes(entries: list, lag: int) -> None:
    old = kept((), entries, HOLDS)
    same_band = tuple((t, p, ms) for t, p, ms in old if band(ms) == band(lag))
    moved = tuple((t, p, lag) for t, p, _ in same_band)
    assert not changed_meaningfully(same_band, moved)
    assert all(floor > 0 for floor in BANDS_MS)


def test_the_group_view_takes_the_largest_value_of_a_partition() -> None:
    lags = group_lags([(("t1", 0, 5),), (("t1", 0, 9), ("t1", 1, 3))])
    assert lags == {("t1", 0): 9, ("t1", 1): 3}


def test_uniform_moves_what_a_member_is_least_behind_on() -> None:
    topics = {"t1": 6}
    holder = AssignorMember("a", frozenset(topics), {"t1": [0, 1, 2, 3, 4, 5]})
    joiner = AssignorMember("b", frozenset(topics))
    lags = {("t1", 4): 120_000, ("t1", 5): 90_000, ("t1", 0): 30_000}
    result = assign_uniform([holder, joiner], topics, lags=lags)
    assert sorted(pairs(result["a"])) == [("t1", 0), ("t1", 4), ("t1", 5)]
    assert sorted(pairs(result["b"])) == [("t1", 1), ("t1", 2), ("t1", 3)]
    # Without lags: the lowest partitions stay, as before.
    plain = assign_uniform([holder, joiner], topics)
    assert sorted(pairs(plain["a"])) == [("t1", 0), ("t1", 1), ("t1", 2)]


def test_uniform_weighs_lags_when_subscriptions_differ_too() -> None:
    topics = {"t1": 4, "t2": 2}
    heavy = AssignorMember("a", frozenset(topics), {"t1": [0, 1, 2, 3], "t2": [0, 1]})
    light = AssignorMember("b", frozenset({"t1"}))
    result = assign_uniform([heavy, light], topics, lags={("t1", 3): 50_000})
    assert ("t1", 3) in pairs(result["a"])  # the lagging partition stays
    assert len(pairs(result["a"])) - len(pairs(result["b"])) <= 2


def test_range_ignores_lags() -> None:
    topics = {"t1": 4}
    members = [AssignorMember("a", frozenset(topics)), AssignorMember("b", frozenset(topics))]
    assert assign_range(members, topics, lags={("t1", 0): 10**6}) == assign_range(members, topics)


def _request(lags: list) -> dict:
    return {"groupId": "g", "memberId": "m", "memberEpoch": 1, "partitionLags": lags}


def test_a_heartbeat_reports_at_most_the_bound_of_lags() -> None:
    per_topic = limits.PARTITION_LAGS_MAX // 2 + 1
    too_many = [
        {"topicId": f"AAAAAAAAAAAAAAAAAAAAA{i}", "partitions": [
            {"partition": p, "lagMs": 1} for p in range(per_topic)
        ]} for i in range(2)
    ]  # fmt: skip
    with pytest.raises(ValidationError, match="partitionLags"):
        ConsumerGroupHeartbeatRequest.model_validate(_request(too_many))
    one = {"topicId": "AAAAAAAAAAAAAAAAAAAAAA", "partitions": [{"partition": 3, "lagMs": 7}]}
    negative = {**one, "partitions": [{"partition": 0, "lagMs": -1}]}
    with pytest.raises(ValidationError):
        ConsumerGroupHeartbeatRequest.model_validate(_request([negative]))
    fine = ConsumerGroupHeartbeatRequest.model_validate(_request([one]))
    assert fine.reported_lags() == [("AAAAAAAAAAAAAAAAAAAAAA", 3, 7)]
