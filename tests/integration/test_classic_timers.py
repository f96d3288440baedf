"""Failure detection in classic groups: session expiry, the rebalance timeout at the join and
sync barriers, the heartbeat extensions of join-group, and the sweeper for idle groups.

The tests with members on threads of their own (real heartbeats) poll with deadlines and leave
seconds of slack for a busy CI machine; lower bounds ("not before") are counted from the
member's last request, which the server can only have seen later. The others jump the
coordinator's clock past the timer they check (tests/support/clock.py JumpClock): exact, and
no waiting.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.api import Api
from tests.support.classic_client import (
    FAST_SETTINGS,
    REBALANCE_IN_PROGRESS,
    ClassicClient,
    Consumer,
    Ownership,
    converged,
    describe,
    settle,
    unique,
    wait_until,
)
from tests.support.clock import JumpClock

SLACK_S = 3.0
REBALANCE_TIMEOUT_MS = 1500


# In process, on a clock the tests jump past the timers they check (the tests with members
# heartbeating on threads of their own run in real time on it: it is never jumped under them).
pytestmark = pytest.mark.coordinator(FAST_SETTINGS, jumps=True)


def lone_stable_member(url: str, group_id: str, **kwargs) -> ClassicClient:
    kwargs.setdefault("rebalance_timeout_ms", 10000)
    client = ClassicClient(url, group_id, **kwargs)
    assert client.join()["errorCode"] == 0
    assert client.sync({client.member_id: b"x"})["errorCode"] == 0
    return client


def listed_state(api: Api, group_id: str) -> str | None:
    """The state list-groups shows: it reads the listing index only and settles nothing."""
    for group in api.ok("list-groups", {})["groups"]:
        if group["groupId"] == group_id:
            return group["groupState"]
    return None


def start_consumers(
    consumers: list[Consumer], url: str, group_id: str, count: int, **kwargs
) -> list[Consumer]:
    ownership = Ownership()
    new = [
        Consumer(url, group_id, [], name=f"c{len(consumers) + i}", ownership=ownership, **kwargs)
        for i in range(count)
    ]
    consumers.extend(new)
    for consumer in new:
        consumer.start()
    return new


def test_session_expiry_removes_a_silent_member(api: Api, url: str, consumers) -> None:
    group_id = unique("session")
    # The member that will die has a 400 ms session (heartbeats every 100 ms). The survivor
    # has a long session, so that a slow machine cannot expire it too, and heartbeats every
    # 200 ms.
    (first,) = start_consumers(
        consumers,
        url,
        group_id,
        1,
        rebalance_timeout_ms=10000,
        heartbeat_frequency=30,
        failed_heartbeat_threshold=30,
    )
    (second,) = start_consumers(
        consumers,
        url,
        group_id,
        1,
        session_timeout_ms=400,
        heartbeat_frequency=4,
        failed_heartbeat_threshold=4,
    )
    wait_until(lambda: converged(api, group_id, [first, second]), 20, "two members")
    second.crash()
    last_contact = second.log[-1][0]
    # Gone within its session plus the survivor's heartbeat interval, plus slack for the
    # rebalance round trips on a busy machine.
    group = settle(api, group_id, [first], 0.4 + 0.2 + SLACK_S, "the expiry")
    assert [m["memberId"] for m in group["members"]] == [first.member_id]
    # Not before its session ran out, counted from its last request.
    assert time.monotonic() - last_contact >= 0.4
    assert REBALANCE_IN_PROGRESS in [code for _, code in first.heartbeats]
    # The dead member learns it at its next request.
    assert second.heartbeat() == 25


def test_join_barrier_closes_at_the_rebalance_timeout_without_a_silent_member(
    api: Api, url: str, consumers
) -> None:
    group_id = unique("join-timeout")
    # `second` is alone in the group, with a 1.5 s rebalance timeout (and a 3 s session, so
    # that only the rebalance timeout can remove it). The timeout is also the time the leader
    # has to sync after the join barrier closes: at 500 ms a busy machine's leader missed it.
    (second,) = start_consumers(
        consumers,
        url,
        group_id,
        1,
        session_timeout_ms=3000,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        heartbeat_frequency=30,
        failed_heartbeat_threshold=30,
    )
    wait_until(lambda: converged(api, group_id, [second]), 20, "the first member")
    # From now on it keeps heartbeating (its session stays alive) but never rejoins.
    second.stop()
    answers: list[tuple[float, int]] = []
    stop = threading.Event()

    def keep_beating() -> None:
        while not stop.is_set():
            answers.append((time.monotonic(), second.heartbeat()))
            stop.wait(0.1)

    beater = threading.Thread(target=keep_beating, daemon=True)
    beater.start()
    try:
        # A newcomer (long session, the same rebalance timeout) starts a rebalance. Its join is
        # held at the barrier until the rebalance timeout closes it without `second`.
        (third,) = start_consumers(
            consumers,
            url,
            group_id,
            1,
            session_timeout_ms=6000,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            heartbeat_frequency=30,
            failed_heartbeat_threshold=30,
        )
        group = settle(
            api, group_id, [third], REBALANCE_TIMEOUT_MS / 1000 + SLACK_S, "the barrier to close"
        )
        wait_until(lambda: any(code == 25 for _, code in answers), SLACK_S, "second to be gone")
    finally:
        stop.set()
        beater.join()
    assert [m["memberId"] for m in group["members"]] == [third.member_id]
    codes = [code for _, code in answers]
    # 27 while the barrier waited for it, then 25 once it closed without it.
    assert 27 in codes
    assert codes.index(25) > codes.index(27)
    # The rebalance started after the last answer that did not see it (the first 27 may come
    # late on a busy machine): the barrier waited the rebalance timeout from then on.
    before = [at for at, code in answers[: codes.index(27)] if code == 0]
    started = before[-1] if before else answers[codes.index(27)][0]
    waited = answers[codes.index(25)][0] - started
    assert waited >= 0.5 * 0.75
    assert third.rounds[0].generation == second.generation + 1


def test_a_follower_that_synced_before_the_leader_expires_on_its_own_session(
    url: str, jump_clock: JumpClock
) -> None:
    """While a follower waits for the leader's sync its session timer does not run; when the
    leader's sync makes the group Stable, it runs again and must be watched from then on."""
    group_id = unique("follower")
    leader = lone_stable_member(url, group_id, session_timeout_ms=60_000)
    follower = ClassicClient(url, group_id, session_timeout_ms=5000, rebalance_timeout_ms=60_000)
    with ThreadPoolExecutor(1) as pool:
        joining = pool.submit(follower.join)
        wait_until(lambda: leader.heartbeat() == 27, 10, "the rebalance")
        assert leader.join()["errorCode"] == 0
        assert joining.result()["generationId"] == leader.generation
        syncing = pool.submit(follower.sync)  # held: it waits for the leader
        wait_until(lambda: follower.accepted > 0, 10, "the follower to wait at the barrier")
        # The leader takes its time (8 s, past the follower's 5 s session) to assign, so that
        # the group's timers are re-read while the follower waits: it does not expire, its
        # sync re-sent after each 202 as clients do.
        for _ in range(4):
            polls = follower.accepted
            jump_clock.jump(2000)
            assert leader.heartbeat() == 0
            wait_until(lambda n=polls: follower.accepted > n, 10, "the follower's next poll")
        assert leader.sync({leader.member_id: b"L", follower.member_id: b"F"})["errorCode"] == 0
        assert syncing.result()["errorCode"] == 0
    # Stable: the follower's timer runs from its sync on. Within its session it stays...
    jump_clock.jump(4000)
    assert leader.heartbeat() == 0
    # ... and past it, silent, it is gone (not at the leader's 60 s deadline).
    jump_clock.jump(2000)
    assert leader.heartbeat() == REBALANCE_IN_PROGRESS
    assert follower.heartbeat() == 25


def test_a_member_that_does_not_sync_within_the_rebalance_timeout_is_removed(
    url: str, jump_clock: JumpClock
) -> None:
    group_id = unique("sync-timeout")
    # A long session (it keeps heartbeating) but a 10 s rebalance timeout for the sync.
    client = ClassicClient(url, group_id, session_timeout_ms=60_000, rebalance_timeout_ms=10_000)
    assert client.join()["errorCode"] == 0
    assert client.heartbeat() == 0  # CompletingRebalance: waiting for its sync
    jump_clock.jump(10_000)
    assert client.heartbeat() == 25
    assert describe(Api(url), group_id)["groupState"] == "Empty"


def test_the_sweeper_removes_the_last_member_of_an_idle_group(
    api: Api, url: str, jump_clock: JumpClock
) -> None:
    group_id = unique("idle")
    client = lone_stable_member(url, group_id, session_timeout_ms=6000)
    assert listed_state(api, group_id) == "Stable"
    jump_clock.jump(6000)
    # No request touches the group from now on: only the serve sweeper's timer (every 500 ms
    # here) can find its overdue member through the deadline index.
    wait_until(lambda: listed_state(api, group_id) == "Empty", 0.5 + SLACK_S, "the sweeper")
    group = describe(api, group_id)
    assert (group["groupState"], group["members"]) == ("Empty", [])
    assert client.heartbeat() == 25


def test_heartbeat_interval_is_session_timeout_over_heartbeat_frequency(url: str) -> None:
    for frequency, expected in ((None, 333), (3, 333), (7, 142), (1, 1000)):
        client = ClassicClient(
            url, unique("hb"), session_timeout_ms=1000, heartbeat_frequency=frequency
        )
        assert client.join()["heartbeatIntervalMs"] == expected


def test_failed_heartbeat_threshold_below_frequency_kills_before_the_session_timeout(
    api: Api, url: str, jump_clock: JumpClock
) -> None:
    group_id = unique("threshold")
    # Dead after 1 * 60000 / 20 = 3 s of silence, long before the 60 s session timeout.
    client = lone_stable_member(
        url,
        group_id,
        session_timeout_ms=60_000,
        heartbeat_frequency=20,
        failed_heartbeat_threshold=1,
    )
    assert client.heartbeat_interval_ms == 3000
    assert describe(api, group_id)["groupState"] == "Stable"
    jump_clock.jump(3000)
    assert describe(api, group_id)["groupState"] == "Empty"
    assert client.heartbeat() == 25


def test_failed_heartbeat_threshold_above_frequency_outlives_the_session_timeout(
    api: Api, url: str, jump_clock: JumpClock
) -> None:
    group_id = unique("threshold")
    # Dead after 100 * 200 / 1 = 20 s of silence, a hundred times the 200 ms session timeout.
    client = lone_stable_member(
        url, group_id, session_timeout_ms=200, heartbeat_frequency=1, failed_heartbeat_threshold=100
    )
    jump_clock.jump(600)  # three session timeouts: describe would expire it if the session counted
    assert describe(api, group_id)["groupState"] == "Stable"
    jump_clock.jump(20_000)
    assert describe(api, group_id)["groupState"] == "Empty"
    assert client.heartbeat() == 25
