"""When a heartbeat renews a session (core/session_renewal.py): never later than needed to
keep a member alive one session past its last heartbeat, never more often than the skips
allow, and with a slack of at most a third of the session."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from groupcoord.core.session_renewal import (
    connected_beat_margin_ms,
    effective_skips,
    last_renewed_ms,
    member_renewal_slack_ms,
    renewal_slack_ms,
    renewed_deadline,
)
from groupcoord.settings import Settings, SettingsError


def test_the_slack_is_skips_and_a_half_intervals_and_none_without_skips() -> None:
    assert renewal_slack_ms(5000, 1, 45000) == 7500
    assert renewal_slack_ms(5000, 2, 45000) == 12500
    assert renewal_slack_ms(5000, 0, 45000) == 0
    assert renewal_slack_ms(0, 1, 45000) == 0  # a member without a known interval: exact


def test_the_slack_is_at_most_a_third_of_the_session() -> None:
    # 5 s heartbeats: a 45 s session skips 2 (12.5 s of slack), 30 s 1 (7.5 s), 15 s none.
    assert [effective_skips(5000, 2, s) for s in (45000, 30000, 15000)] == [2, 1, 0]
    assert [renewal_slack_ms(5000, 2, s) for s in (45000, 30000, 15000)] == [12500, 7500, 0]
    assert renewal_slack_ms(5000, 4, 45000) == 12500
    assert effective_skips(5000, 1, 60000) == 1  # never more than the setting
    # A member beating 3 times a session (the classic default): no skip fits a third.
    assert renewal_slack_ms(15000, 2, 45000) == 0


@given(
    interval=st.integers(1, 60_000),
    session=st.integers(1, 600_000),
    skips=st.integers(0, 4),
)
def test_the_effective_skips_are_the_most_whose_slack_fits_a_third(
    interval: int, session: int, skips: int
) -> None:
    effective = effective_skips(interval, skips, session)
    assert 0 <= effective <= skips
    slack = renewal_slack_ms(interval, skips, session)
    assert 3 * slack <= session
    assert slack == (0 if effective == 0 else (2 * effective + 1) * interval // 2)
    if effective < skips:  # one more would not fit
        assert 3 * (2 * effective + 3) * interval > 2 * session


@given(
    interval=st.integers(1, 60_000),
    session=st.integers(1, 600_000),
    skips=st.integers(0, 4),
    gaps=st.lists(st.integers(0, 120_000), min_size=1, max_size=30),
)
def test_a_beating_member_always_has_a_session_from_its_last_beat_and_never_more_than_slack(
    interval: int, session: int, skips: int, gaps: list[int]
) -> None:
    slack = renewal_slack_ms(interval, skips, session)
    now, deadline = 0, session  # a join: exactly one session
    for gap in gaps:
        now += gap
        if deadline <= now:
            return  # expired: a heartbeat now would be refused
        written = renewed_deadline(deadline, now, session, slack)
        if written is not None:
            deadline = written
        assert now + session <= deadline <= now + session + slack
        if written is not None:
            assert last_renewed_ms(deadline, session, slack) == now


def test_beats_an_interval_apart_write_once_per_skips_plus_one() -> None:
    interval, session = 5000, 45000
    for skips in range(3):  # 2 is the most a 45 s session allows at 5 s heartbeats
        slack = renewal_slack_ms(interval, skips, session)
        deadline, writes = session, 0
        for beat in range(1, 61):
            now = beat * (interval + 20)  # a little over an interval apart, as clients do
            written = renewed_deadline(deadline, now, session, slack)
            if written is not None:
                deadline, writes = written, writes + 1
        assert writes == pytest.approx(60 / (skips + 1), abs=1), skips


# --- a member with a live push connection ---


def _writes(slack: int, interval: int, session: int, beats: int) -> list[int]:
    """Which of `beats` heartbeats a little over `interval` apart write, on a clock the test
    holds, from a renewal at 0; each beat's deadline checked against the bounds."""
    deadline, written = session + slack, []
    for beat in range(1, beats + 1):
        now = beat * (interval + 20)
        new = renewed_deadline(deadline, now, session, slack)
        written.append(0 if new is None else 1)
        deadline = deadline if new is None else new
        assert now + session <= deadline <= now + session + slack
    return written


def test_a_connected_member_at_15_s_and_45_s_renews_on_every_third_heartbeat() -> None:
    # The coordinator's interval 5 s: a connected client beats every 15 s.
    connected = member_renewal_slack_ms(5000, 2, 45000, connected=True)
    assert connected == 37500  # 2.5 intervals of 15 s
    assert _writes(connected, 15000, 45000, 9) == [0, 0, 1] * 3


def test_a_member_without_a_connection_renews_as_before() -> None:
    alone = member_renewal_slack_ms(5000, 2, 45000, connected=False)
    assert alone == renewal_slack_ms(5000, 2, 45000) == 12500
    assert _writes(alone, 5000, 45000, 9) == [0, 0, 1] * 3
    # At 15 s it skips nothing: the slack a third of the session allows buys no skip.
    assert _writes(alone, 15000, 45000, 4) == [1, 1, 1, 1]


def test_a_connected_member_with_no_skips_renews_exactly() -> None:
    assert member_renewal_slack_ms(5000, 0, 45000, connected=True) == 0


def test_a_connected_member_lost_with_its_host_is_expired_by_session_plus_slack() -> None:
    """The last heartbeat renewed at 0 and the host is lost: the deadline it wrote is
    session + 2.5 connected intervals after it, 82.5 s (45 s when every beat renewed)."""
    slack = member_renewal_slack_ms(5000, 2, 45000, connected=True)
    assert renewed_deadline(0, 0, 45000, slack) == 82500
    # Its last read-only beat came up to 2 intervals later: never earlier than a session
    # after it.
    assert 82500 - 2 * 15000 >= 45000


@given(
    interval=st.integers(1, 60_000),
    session=st.integers(1, 600_000),
    skips=st.integers(0, 4),
)
def test_a_connected_members_slack_is_at_most_a_session_and_never_less_than_unconnected(
    interval: int, session: int, skips: int
) -> None:
    alone = member_renewal_slack_ms(interval, skips, session, connected=False)
    connected = member_renewal_slack_ms(interval, skips, session, connected=True)
    assert alone == renewal_slack_ms(interval, skips, session)
    assert alone <= connected <= max(alone, session, connected_beat_margin_ms(interval, session))


@given(
    interval=st.integers(100, 60_000),
    session=st.integers(1, 600_000),
    skips=st.integers(0, 4),
)
def test_a_connected_member_beating_every_three_intervals_never_lapses(
    interval: int, session: int, skips: int
) -> None:
    """Its deadline at each beat reaches an interval past its next beat, 3 intervals on (a
    session longer than the interval, as the settings require)."""
    assume(session > interval)
    slack = member_renewal_slack_ms(interval, skips, session, connected=True)
    beat, deadline = 3 * interval, session + slack
    for now in range(beat, 12 * beat, beat):
        assert deadline >= now, (now, deadline)
        new = renewed_deadline(deadline, now, session, slack)
        deadline = deadline if new is None else new
        assert deadline >= now + beat + interval, (now, deadline)


def test_a_short_session_gives_a_connected_member_an_interval_past_its_beat() -> None:
    """2 s interval, 6 s session (bench.push's side by side): the client beats every 6 s, the
    whole session; without the margin the beat raced the deadline and a live member was
    expired (a partition owned by two members for up to 186 ms)."""
    for skips in (0, 2):
        assert member_renewal_slack_ms(2000, skips, 6000, connected=True) == 2000
    assert member_renewal_slack_ms(5000, 0, 45000, connected=True) == 0  # the defaults: none


@pytest.mark.parametrize("value", ["-1", "5"])
def test_the_setting_is_bounded(value: str) -> None:
    with pytest.raises(SettingsError, match=r"groupcoord\.session\.renewal\.skips"):
        Settings.from_mapping({"groupcoord.session.renewal.skips": value})
