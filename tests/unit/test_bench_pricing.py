"""bench/pricing.py's arithmetic: list prices and measured units -> $ per member-month."""

from __future__ import annotations

import pytest

from bench.pricing import (
    CLASSIC,
    CONSUMER,
    FUNCTION_URL,
    MONTH_S,
    RRU,
    TARGET_USD,
    WRU,
    Check,
    GroupFit,
    LambdaSetting,
    Model,
    PushCall,
    PushCalls,
    SteadyTimes,
    blended,
    check_interval_s,
    check_month,
    kcl_lease_month,
    per_heartbeat,
    push_channel_month,
)

ARM_1GB = LambdaSetting("arm64", 1024)
BEATS = MONTH_S / 5.0  # 518,400 heartbeats a 30-day month at 5 s


def test_list_prices_per_unit() -> None:
    assert pytest.approx(0.625e-6) == WRU
    assert pytest.approx(0.125e-6) == RRU
    assert ARM_1GB.gb_s_price == pytest.approx(0.0000133334)
    assert LambdaSetting("x86_64", 512).memory_gb == 0.5


def test_one_heartbeat_by_line() -> None:
    # 2 RCU, 1 WCU, 100 ms at 1 GB arm64, behind the HTTP API ($1 per million).
    parts = per_heartbeat(2.0, 1.0, 100.0, ARM_1GB)
    assert parts == pytest.approx(
        {
            "front door": 1e-6,
            "Lambda requests": 0.2e-6,
            "Lambda duration": 0.1 * 0.0000133334,
            "DynamoDB writes": 0.625e-6,
            "DynamoDB reads": 0.25e-6,
        }
    )
    assert per_heartbeat(0, 0, 0, ARM_1GB, front_door=0.0)["front door"] == 0.0


def test_blended_weights_renewals_by_skips() -> None:
    # Skips 2: 2 of every 3 heartbeats only read (not due), 1 renews (due).
    not_due, due = {10: (1.5, 0.0), 100: (1.5, 0.0)}, {10: (1.5, 3.0)}
    assert blended(not_due, due, 2) == {10: pytest.approx((1.5, 1.0))}
    assert blended(not_due, due, 0) == {10: (1.5, 3.0)}


def test_check_interval_by_skips() -> None:
    # 45 s sessions, 5 s heartbeats: session - interval at skips 0, - interval/2 from 1 on.
    assert check_interval_s(CLASSIC, 0) == 40.0
    assert check_interval_s(CLASSIC, 2) == 42.5
    assert check_interval_s(CLASSIC, 1, session_s=15.0) == 12.5


def test_check_month_counts_checks_in_a_month() -> None:
    # One check every 43.2 s: 60,000 a month, each 10 RCU + 2 WCU + 50 ms at 1 GB.
    parts = check_month(Check(read=10, write=2, seconds=0.05), 43.2, ARM_1GB)
    assert parts == pytest.approx(
        {
            "Lambda duration": 60_000 * 0.05 * 0.0000133334,
            "DynamoDB writes": 60_000 * 2 * WRU,
            "DynamoDB reads": 60_000 * 10 * RRU,
        }
    )


def test_kcl_lease_is_a_write_every_third_of_ten_seconds() -> None:
    assert kcl_lease_month() == pytest.approx(MONTH_S / (10 / 3) * 0.625e-6)


def model(skips_write: float = 2.0) -> Model:
    """10 and 100-member consumer groups: 1 RCU a beat, `skips_write` WCU when it renews, a
    check of 1 RCU per member + 1 WCU, 10 ms a beat at 1 GB."""
    units = {10: (1.0, 0.0), 100: (1.0, 0.0)}
    due = {m: (1.0, skips_write) for m in units}
    checks = {m: Check(read=float(m), write=1.0, seconds=0.0) for m in units}
    times = SteadyTimes(quiet_ms=10.0, renewing_ms=10.0, cpu_ms=5.0)
    return Model({CONSUMER: (units, due)}, {CONSUMER: checks}, {CONSUMER: times}, ARM_1GB)


def test_member_month_is_steady_beats_plus_a_share_of_the_checks() -> None:
    m = model()
    # Skips 1: half the beats renew, 1 WCU on average.
    steady = BEATS * (1e-6 + 0.2e-6 + 0.01 * 0.0000133334 + 1 * WRU + 1 * RRU)
    checks = MONTH_S / check_interval_s(CONSUMER, 1) * (10 * RRU + WRU)
    assert m.sizes(CONSUMER) == [10, 100]
    assert sum(m.steady_month(CONSUMER, 10, 1).values()) == pytest.approx(steady)
    assert m.total(CONSUMER, 10, 1) == pytest.approx(steady + checks / 10)
    # A larger group's check reads more members, its write is shared by more.
    checks = MONTH_S / check_interval_s(CONSUMER, 1) * (100 * RRU + WRU)
    assert m.total(CONSUMER, 100, 1) == pytest.approx(steady + checks / 100)


def test_units_spread_a_check_over_the_beats_between_two_checks() -> None:
    m = model()
    between = 10 * check_interval_s(CONSUMER, 0) / 5.0  # 10 members, 8 beats each
    assert m.units(CONSUMER, 10, 0) == pytest.approx((1 + 10 / between, 2 + 1 / between))


def test_break_even_duration_prices_the_rest_at_the_target() -> None:
    m = model()
    reach_ms, rest = m.break_even_ms(CONSUMER, 10, 1)
    duration = m.steady_month(CONSUMER, 10, 1)["Lambda duration"]
    assert rest == pytest.approx(m.total(CONSUMER, 10, 1) - duration)
    per_ms = BEATS * ARM_1GB.memory_gb * ARM_1GB.gb_s_price / 1000
    assert rest + reach_ms * per_ms == pytest.approx(TARGET_USD)


def test_group_fit_finds_the_size_that_meets_the_target() -> None:
    # $2 a group-month fixed + $0.01 per member, members paying $0.49 each: from 4 members.
    fit = GroupFit.of({10: 2.10, 1000: 12.0}, steady=0.49)
    assert (fit.fixed, fit.slope) == (pytest.approx(2.0), pytest.approx(0.01))
    assert fit.target_from() == pytest.approx(4.0)
    assert GroupFit.of({10: 0.1, 20: 0.2}, steady=0.5).target_from() == 0.0  # no fixed part
    assert GroupFit.of({10: 0.0, 20: 10.0}, steady=0.5).target_from() is None


# The push channel: a keepalive about every 9 min (4,800 a month), a reconnect every 2 h (360);
# pings only after an uncertain handshake (none in a steady month).
KEEPALIVES, CONNECTIONS = MONTH_S / 540, MONTH_S / 7200
CALLS = PushCalls(
    connect=PushCall(read=3.0, write=3.0, ms=20.0),
    ping=PushCall(read=1.0, write=1.0, ms=10.0),
    disconnect=PushCall(read=0.0, write=2.0, ms=10.0),
    notice=PushCall(read=0.5, write=0.0, ms=30.0),
)


def test_the_push_channel_by_line() -> None:
    parts = push_channel_month(CALLS, ARM_1GB, notices=1000)
    seconds = (CONNECTIONS * 30 + 1000 * 30) / 1000
    assert parts == pytest.approx(
        {
            # $0.25 per million connection-minutes: a whole month connected.
            "WebSocket connection-minutes": MONTH_S / 60 * 0.25e-6,
            # Each keepalive in (API Gateway answers nothing), each notice out: $1.00 per million.
            "WebSocket messages": (KEEPALIVES + 1000) * 1e-6,
            # A keepalive reaches no function, a notice rides on its sender's request: the two
            # routes of a reconnect alone.
            "push: Lambda": 2 * CONNECTIONS * 0.2e-6 + seconds * 0.0000133334,
            "push: DynamoDB": CONNECTIONS * (3 * RRU + 5 * WRU) + 1000 * 0.5 * RRU,
        }
    )
    assert parts["WebSocket connection-minutes"] == pytest.approx(0.0108)
    assert parts["WebSocket messages"] - 1000 * 1e-6 == pytest.approx(0.0048)


def test_a_connected_member_beats_every_15_s_and_renews_every_third_beat() -> None:
    m = Model(**{**vars(model()), "push": CALLS})
    # 45 s session, 15 s heartbeat: a connected member's slack may reach the whole session.
    assert m.push_skips(CONSUMER) == 2
    costs = m.push_month(CONSUMER, 10, FUNCTION_URL, notices=0)
    beats = MONTH_S / 15
    per_beat = 0.2e-6 + 0.01 * 0.0000133334 + 2 / 3 * WRU + 1 * RRU
    steady = beats * per_beat
    checks = MONTH_S / (45 - 7.5) * (10 * RRU + WRU) / 10  # every session - interval / 2
    channel = sum(push_channel_month(CALLS, ARM_1GB, notices=0).values())
    assert sum(costs.values()) == pytest.approx(steady + checks + channel)
    # Each notice brings two heartbeats (at once, and a second look) and its own costs.
    more = m.push_month(CONSUMER, 10, FUNCTION_URL, notices=100)
    channel_more = sum(push_channel_month(CALLS, ARM_1GB, notices=100).values())
    assert sum(more.values()) - sum(costs.values()) == pytest.approx(
        200 * per_beat + channel_more - channel
    )
