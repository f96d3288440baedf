"""Streams group timers over HTTP on a clock the test jumps (tests/support/clock.py): the
initial rebalance delay (status 5, one target for the members that start together), session
expiry lazily and by the sweeper, and the rebalance timeout of a member that never revokes."""

from __future__ import annotations

import pytest

from tests.support.api import Api
from tests.support.clock import JumpClock
from tests.support.consumer import create_topic, unique, until
from tests.support.streams import StreamsMember, describe, settle, word_count

# Long against the real time a busy CI takes between two requests: the tests jump past them.
SESSION_MS = 60_000
DELAY_MS = 20_000
REBALANCE_MS = 20_000
MARGIN_MS = 5_000
SETTINGS = {
    "group.streams.min.session.timeout.ms": "100",
    "group.streams.session.timeout.ms": str(SESSION_MS),
    "group.streams.min.heartbeat.interval.ms": "50",
    "group.streams.heartbeat.interval.ms": "1000",
    "group.streams.initial.rebalance.delay.ms": str(DELAY_MS),
    "group.streams.assignment.interval.ms": "0",
    # Every heartbeat renews the session exactly (no slack): the jumps below are exact.
    "groupcoord.session.renewal.skips": "0",
    "groupcoord.sweep.interval.ms": "100",
}
pytestmark = pytest.mark.coordinator(SETTINGS, jumps=True)


def pairs(tasks: dict[str, set[int]]) -> set[tuple[str, int]]:
    return {(s, p) for s, ps in tasks.items() for p in ps}


def two_members(api: Api, clock: JumpClock) -> tuple[StreamsMember, StreamsMember]:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, unique("app")))
    b = StreamsMember(api, group, a.topology)
    a.join(rebalanceTimeoutMs=REBALANCE_MS)
    b.join(rebalanceTimeoutMs=REBALANCE_MS)
    clock.jump(DELAY_MS + 1)
    settle([a, b])
    return a, b


def test_the_first_members_wait_out_the_initial_delay_then_share_one_target(
    api: Api, jump_clock: JumpClock
) -> None:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, unique("app")))
    b = StreamsMember(api, group, a.topology)
    for member in (a, b):
        answer = member.join()
        assert (answer["errorCode"], answer["memberEpoch"]) == (0, 1)
        assert member.statuses() == [5] and not member.active
    jump_clock.jump(DELAY_MS - MARGIN_MS)
    assert a.heartbeat()["status"][0]["statusCode"] == 5
    jump_clock.jump(MARGIN_MS + 1)
    settle([a, b])
    assert a.statuses() == [] and a.epoch == b.epoch
    # One target for both: the group epoch of their two joins, installed once.
    assert describe(api, group)["assignmentEpoch"] == describe(api, group)["groupEpoch"]
    assert pairs(a.active) | pairs(b.active) == {(s, p) for s in "01" for p in range(2)}
    assert a.active and b.active


def test_a_silent_member_expires_at_its_session_timeout(api: Api, jump_clock: JumpClock) -> None:
    a, b = two_members(api, jump_clock)
    jump_clock.jump(SESSION_MS * 6 // 10)
    a.heartbeat()
    jump_clock.jump(SESSION_MS * 6 // 10)  # b silent for 1.2 sessions, a for 0.6
    settle([a])
    assert pairs(a.active) == {(s, p) for s in "01" for p in range(2)}
    assert [m["memberId"] for m in describe(api, a.group)["members"]] == [a.member_id]
    assert b.heartbeat()["errorCode"] == 25


def test_an_idle_group_is_emptied_by_the_sweeper_alone(api: Api, jump_clock: JumpClock) -> None:
    a, _ = two_members(api, jump_clock)
    jump_clock.jump(SESSION_MS + 1)
    until(lambda: describe(api, a.group)["groupState"] == "Empty", timeout_s=15)


def test_a_member_that_never_revokes_is_fenced_at_its_rebalance_timeout(
    api: Api, jump_clock: JumpClock
) -> None:
    words = unique("words")
    create_topic(api, words, 2)
    group = unique("g")
    a = StreamsMember(api, group, word_count(words, unique("app")))
    a.join(rebalanceTimeoutMs=REBALANCE_MS)
    jump_clock.jump(DELAY_MS + 1)
    settle([a])
    assert pairs(a.active) == {(s, p) for s in "01" for p in range(2)}
    b = StreamsMember(api, group, a.topology)
    b.join(rebalanceTimeoutMs=REBALANCE_MS)
    # a heartbeats without reporting its tasks: it never acknowledges the revocation.
    assert a.call()["errorCode"] == 0
    jump_clock.jump(REBALANCE_MS - MARGIN_MS)
    assert a.call()["errorCode"] == 0
    b.heartbeat()
    assert not b.active
    jump_clock.jump(MARGIN_MS + 1)
    settle([b])
    assert pairs(b.active) == {(s, p) for s in "01" for p in range(2)}
    assert a.call()["errorCode"] == 25
