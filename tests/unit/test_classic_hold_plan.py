"""How held joins and syncs pace their reads of the group item (service/classic/common.py
hold_plan): all the members of a group held at once stay within a per-key read budget
(no hot key), re-sends included."""

from __future__ import annotations

import pytest

from groupcoord.service.classic.common import (
    HELD_READ_BUDGET_RCU_S,
    POLL_RCU,
    REQUEST_RCU,
    hold_plan,
)


def group_key_reads_per_s(members: int, hold_ms: int) -> float:
    """Every member waiting: a consistent read per (re-)sent request, a poll per interval of
    the hold, then the pause before the re-send."""
    plan = hold_plan(members, hold_ms)
    polls = round(plan.hold_ms / 1000 / plan.poll_interval_s) if plan.hold_ms else 0
    cycle_s = (plan.hold_ms + plan.retry_after_ms) / 1000
    return members * (REQUEST_RCU + POLL_RCU * polls) / cycle_s


def test_a_small_group_is_held_2_s_polling_every_100_ms_and_re_sent_after_500_ms() -> None:
    for members in (1, 10, 100, 200):
        plan = hold_plan(members, 2000)
        assert (plan.hold_ms, plan.poll_interval_s, plan.retry_after_ms) == (2000, 0.1, 500)


@pytest.mark.parametrize("members", [1, 10, 200, 201, 1000, 1001, 2000, 4000, 5000, 20_000])
@pytest.mark.parametrize("hold_ms", [0, 500, 2000, 10_000])
def test_all_members_waiting_at_once_stay_within_the_group_key_read_budget(
    members: int, hold_ms: int
) -> None:
    plan = hold_plan(members, hold_ms)
    assert plan.hold_ms <= hold_ms
    assert group_key_reads_per_s(members, hold_ms) <= HELD_READ_BUDGET_RCU_S * 1.001


def test_a_thousand_members_poll_every_half_second_and_are_re_sent_after_a_second() -> None:
    plan = hold_plan(1000, 2000)
    assert (plan.hold_ms, plan.poll_interval_s, plan.retry_after_ms) == (2000, 0.5, 1000)


def test_five_thousand_members_are_not_held_but_re_sent_after_5_s() -> None:
    """A poll every 2.5 s does not fit in a 2 s hold: holding would only bill Lambda time."""
    plan = hold_plan(5000, 2000)
    assert (plan.hold_ms, plan.retry_after_ms) == (0, 5000)
    assert group_key_reads_per_s(5000, 2000) == pytest.approx(1000)


def test_intervals_grow_with_the_group() -> None:
    sizes = [10, 100, 500, 1000, 2000, 4000, 5000, 10_000]
    plans = [hold_plan(n, 2000) for n in sizes]
    assert [p.poll_interval_s for p in plans] == sorted(p.poll_interval_s for p in plans)
    assert [p.retry_after_ms for p in plans] == sorted(p.retry_after_ms for p in plans)
