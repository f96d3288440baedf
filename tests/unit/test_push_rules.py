"""core/push.py: when the push channel tells members to heartbeat."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.core.classic.model import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
)
from groupcoord.core.consumer.member import ConsumerGroupMember
from groupcoord.core.consumer.model import ConsumerGroup
from groupcoord.core.consumer.reconciliation import MemberAssignment
from groupcoord.core.push import (
    DEFERRED_NOTICE_MIN_MS,
    classic_notice_due,
    deferred_install_wait_ms,
    grace_notice_after_ms,
    grace_watchers,
    release_notice_members,
    topic_change_notice_due,
)


def classic(state: str, generation: int) -> ClassicGroup:
    return ClassicGroup(group_id="g", state=state, generation=generation)


@pytest.mark.parametrize(
    ("before", "after", "due"),
    [
        (classic(STABLE, 3), classic(PREPARING_REBALANCE, 3), True),  # a rebalance starts
        (classic(EMPTY, 0), classic(PREPARING_REBALANCE, 0), True),
        (classic(COMPLETING_REBALANCE, 4), classic(STABLE, 4), True),  # the sync completed
        (classic(COMPLETING_REBALANCE, 4), classic(PREPARING_REBALANCE, 4), True),
        (classic(PREPARING_REBALANCE, 3), classic(PREPARING_REBALANCE, 3), False),  # a join
        (classic(PREPARING_REBALANCE, 3), classic(COMPLETING_REBALANCE, 4), False),
        (classic(STABLE, 4), classic(STABLE, 4), False),  # an expiry-free settle
        (classic(STABLE, 4), classic(EMPTY, 5), False),  # the last member left
    ],
)
def test_classic_notices(before: ClassicGroup, after: ClassicGroup, due: bool) -> None:
    assert classic_notice_due(before, after) is due


NOW = 1_000_000
INTERVAL = 1_000
BEHIND = ConsumerGroup(group_id="g", group_epoch=6, target_epoch=5, assigned_at=NOW - 300)


def test_a_deferred_install_is_announced_for_when_the_batch_interval_ends() -> None:
    assert deferred_install_wait_ms(BEHIND, NOW, INTERVAL, first_change=True) == 700
    assert deferred_install_wait_ms(BEHIND, NOW, INTERVAL, first_change=False) == 700


def test_no_notice_once_installed_and_a_second_look_after_a_running_install() -> None:
    installed = replace(BEHIND, target_epoch=6)
    assert deferred_install_wait_ms(installed, NOW, INTERVAL, first_change=False) is None
    # A running install may have started before this bump: look again after the interval.
    running = replace(BEHIND, install_id="i", install_until=NOW + 1)
    assert deferred_install_wait_ms(running, NOW, INTERVAL, first_change=True) == INTERVAL
    lapsed = replace(BEHIND, install_id="i", install_until=NOW)  # a dead installer's lease
    assert deferred_install_wait_ms(lapsed, NOW, INTERVAL, first_change=False) == 700


def test_only_the_first_change_since_the_install_tells_every_member() -> None:
    further = replace(BEHIND, group_epoch=7)
    assert deferred_install_wait_ms(further, NOW, INTERVAL, first_change=True) is None
    # A member's own request still hears when to come back.
    assert deferred_install_wait_ms(further, NOW, INTERVAL, first_change=False) == 700


def test_a_past_interval_never_asks_for_a_tight_loop() -> None:
    late = replace(BEHIND, assigned_at=NOW - 5 * INTERVAL)
    wait = deferred_install_wait_ms(late, NOW, INTERVAL, first_change=False)
    assert wait == DEFERRED_NOTICE_MIN_MS


@pytest.mark.parametrize(
    ("group_type", "state", "members", "due"),
    [
        ("consumer", "Stable", 3, True),  # the next heartbeat bumps the epoch and installs
        ("consumer", "Reconciling", 1, True),
        ("consumer", "Empty", 0, False),  # nobody to tell
        ("streams", "Stable", 2, True),
        ("streams", "NotReady", 1, True),  # a missing source topic created: it may start
        ("streams", "Empty", 0, False),
        ("classic", STABLE, 2, True),  # the next request starts a rebalance
        ("classic", COMPLETING_REBALANCE, 2, True),
        ("classic", PREPARING_REBALANCE, 2, False),  # rejoining anyway, the topics read afresh
        ("classic", EMPTY, 0, False),
    ],
)
def test_topic_change_notices(group_type: str, state: str, members: int, due: bool) -> None:
    assert topic_change_notice_due(group_type, state, members) is due


def test_a_grace_notice_asks_for_what_is_left_of_the_grace() -> None:
    # The grace ends at NOW + 1000; the `$disconnect`'s writes took 180 ms of it.
    assert grace_notice_after_ms(NOW + 1_000, NOW + 180) == 820
    assert grace_notice_after_ms(NOW + 1_000, NOW + 1_000) == 0
    assert grace_notice_after_ms(NOW + 1_000, NOW + 1_400) == 0  # over already: at once


def test_a_grace_is_told_to_the_next_two_members_after_the_crashed_one() -> None:
    """Not to every member: all of them heartbeating into the group as the grace ended
    queued the expiry and the install behind each other."""
    connected = ["m1", "m2", "m3", "m4", "m5", "m6"]
    assert grace_watchers(connected, "m3") == ["m4", "m5"]
    assert grace_watchers(connected, "m5") == ["m6", "m1"]  # round the end
    assert grace_watchers(connected, "m6") == ["m1", "m2"]
    assert grace_watchers(["m6", "m2", "m4"], "m3") == ["m4", "m6"]  # in the order of ids
    assert grace_watchers(["m1", "m3"], "m2", count=1) == ["m3"]


def test_a_grace_is_told_to_whoever_else_is_connected_when_few_are() -> None:
    assert grace_watchers(["m1", "m2"], "m2") == ["m1"]  # its own connection is left out
    assert grace_watchers(["m2"], "m2") == []
    assert grace_watchers([], "m2") == []
    assert grace_watchers(["m1", "m1", "m3"], "m2") == ["m3", "m1"]


@settings(max_examples=300, deadline=None)
@given(
    members=st.lists(st.integers(0, 40), min_size=2, max_size=16, unique=True),
    data=st.data(),
)
def test_members_crashed_together_always_tell_a_live_member_by_the_last_grace(
    members: list[int], data: st.DataObject
) -> None:
    """Members that crash together, their `$disconnect`s in any order (each forgets its
    connection before it tells anyone): for each, a live member is told of its grace or of a
    grace that ends no sooner (whose heartbeat then expires it as well)."""
    ids = [f"m{i:02d}" for i in members]
    crashed = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=len(ids) - 1,
                                 unique=True))  # fmt: skip
    live = set(ids) - set(crashed)
    connected = set(ids)
    told_live: list[bool] = []  # by the order of the graces' ends
    for member in crashed:
        connected.discard(member)
        told_live.append(bool(live & set(grace_watchers(connected, member))))
    for i in range(len(crashed)):
        assert any(told_live[i:]), (crashed, told_live)


def member_of(member_id: str, holds: set[int], target: set[int]) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        member_id,
        assignment=MemberAssignment(assigned={"t": frozenset(holds)}),
        target={"t": frozenset(target)},
    )


def test_a_release_tells_only_the_members_waiting_on_its_partitions() -> None:
    releaser = member_of("releaser", {0}, {0})  # released 1 and 2
    joiner = member_of("joiner", set(), {1, 3})  # waits on 1
    taken = member_of("taken", {2}, {2})  # took 2 already
    bystander = member_of("bystander", {4, 5}, {4, 5})
    released = {"t": frozenset({1, 2})}
    members = [releaser, joiner, taken, bystander]
    assert release_notice_members(released, members, "releaser") == ["joiner"]
    assert release_notice_members({"t": frozenset({7})}, members, "releaser") == []
