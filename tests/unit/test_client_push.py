"""The client's push schedule as pure functions (client/push.py, client/member_push.py): the
reconnect back-off, the steady heartbeat interval with and without a socket, and the beats a
notice asks for, on times the test gives."""

from __future__ import annotations

import math

import pytest
from websockets.datastructures import Headers
from websockets.exceptions import InvalidMessage, InvalidStatus
from websockets.http11 import Response

from groupcoord.client.member_push import SECOND_LOOK_S, MemberPush, steady_interval_s
from groupcoord.client.push import (
    BACKOFF_CAP_S,
    BACKOFF_FIRST_S,
    PING_INTERVAL_S,
    handshake_may_linger,
    ping_pause_s,
    reconnect_pause_s,
)

# API Gateway closes a WebSocket connection idle this long.
IDLE_LIMIT_S = 600.0


@pytest.mark.parametrize(
    ("failures", "jitter", "pause"),
    [
        (0, 0.9, BACKOFF_FIRST_S),  # a socket that ended in order: the first pause, no jitter
        (1, 1.0, 0.4),  # a dropped socket counts one failure: up to twice the first pause
        (1, 0.5, 0.2),
        (1, 0.0, 0.0),
        (3, 1.0, 1.6),
        (3, 0.25, 0.4),
        (7, 1.0, 25.6),
        (8, 1.0, BACKOFF_CAP_S),  # 51.2 s, capped
        (8, 0.5, BACKOFF_CAP_S / 2),
        (10_000, 1.0, BACKOFF_CAP_S),  # no overflow after a long outage
        (2, 7.0, 0.8),  # a draw out of range is clamped
        (2, -1.0, 0.0),
    ],
)
def test_reconnect_pauses_back_off_exponentially_with_full_jitter(
    failures: int, jitter: float, pause: float
) -> None:
    assert reconnect_pause_s(failures, jitter) == pytest.approx(pause)


def test_reconnect_pauses_never_exceed_the_cap() -> None:
    assert max(reconnect_pause_s(f, 1.0) for f in range(64)) == BACKOFF_CAP_S


def test_pings_come_about_every_9_minutes_with_jitter_and_well_before_the_idle_limit() -> None:
    pauses = [ping_pause_s(PING_INTERVAL_S, draw / 100) for draw in range(101)]
    assert min(pauses) == pytest.approx(518.4) and max(pauses) == pytest.approx(561.6)
    assert sum(pauses) / len(pauses) == pytest.approx(540.0)  # half the messages of every 5 min
    assert IDLE_LIMIT_S - max(pauses) > 30  # a late keepalive still keeps the socket open
    assert ping_pause_s(PING_INTERVAL_S, 7.0) == max(pauses)  # a draw out of range is clamped


def refused(status: int) -> InvalidStatus:
    return InvalidStatus(Response(status, "", Headers()))


@pytest.mark.parametrize(
    ("error", "may_linger"),
    [
        (refused(403), False),  # the function refused it: nothing recorded
        (refused(404), False),
        (refused(429), False),  # throttled before any function ran
        (refused(500), True),  # the function outlived API Gateway's 29 s: it may write still
        (refused(504), True),
        (TimeoutError("timed out during opening handshake"), True),
        (InvalidMessage("did not receive a valid HTTP response"), True),  # lost mid-way
        (ConnectionResetError(), True),
    ],
)
def test_a_handshake_may_linger_unless_refused(error: Exception, may_linger: bool) -> None:
    assert handshake_may_linger(error) is may_linger


@pytest.mark.parametrize(
    ("coordinator_s", "push_s", "connected", "interval"),
    [
        (5.0, 15.0, True, 15.0),  # a third as often while the socket is open
        (5.0, 15.0, False, 5.0),  # the coordinator's interval without one
        (2.0, 15.0, True, 6.0),  # at most 3 of the coordinator's intervals (its session)
        (15.0, 10.0, True, 15.0),  # never more often than the coordinator asks
    ],
)
def test_the_steady_interval_is_longer_only_while_connected(
    coordinator_s: float, push_s: float, connected: bool, interval: float
) -> None:
    assert steady_interval_s(coordinator_s, push_s, connected) == interval


def test_a_notice_asks_for_a_beat_at_once_and_a_second_look() -> None:
    push = MemberPush("g", lambda: "")
    push.notice(0.0, now=100.0)
    push.notice(1.5, now=100.0)  # a grace's afterMs
    assert push.next_beat() == 100.0
    assert push.due_beat(99.9) == math.inf
    assert push.due_beat(100.2) == 100.0
    assert push.due_beat(100.2) == math.inf  # consumed
    assert push.due_beat(100.0 + SECOND_LOOK_S) == 100.0 + SECOND_LOOK_S
    assert push.next_beat() == 101.5
    assert push.due_beat(200.0) == 101.5  # those due together are one beat
    assert push.next_beat() == math.inf
