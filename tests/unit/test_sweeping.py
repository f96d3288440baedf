"""The sweeper's rules for an item whose completion failed (core/sweeping.py): when it is tried
again, and when it is quarantined."""

from __future__ import annotations

import pytest

from groupcoord.core.sweeping import (
    FIRST_DELAY_MS,
    MAX_DELAY_MS,
    MAX_FAILURES,
    Attempt,
    delay_ms,
    next_attempt,
)

NOW = 1_700_000_000_000
MINUTE = 60_000


def test_the_delay_doubles_from_one_minute() -> None:
    assert FIRST_DELAY_MS == MINUTE
    assert [delay_ms(n) for n in range(1, 6)] == [
        MINUTE,
        2 * MINUTE,
        4 * MINUTE,
        8 * MINUTE,
        16 * MINUTE,
    ]


def test_the_delay_stops_growing_at_an_hour() -> None:
    assert MAX_DELAY_MS == 60 * MINUTE
    assert delay_ms(7) == 60 * MINUTE  # 64 minutes, capped
    assert delay_ms(1_000_000) == MAX_DELAY_MS  # however many, and at once


@pytest.mark.parametrize("failures", [0, -1])
def test_a_count_of_failures_starts_at_one(failures: int) -> None:
    with pytest.raises(ValueError):
        delay_ms(failures)
    with pytest.raises(ValueError):
        next_attempt(failures, NOW)


def test_an_item_is_tried_again_after_the_delay_until_its_last_failure() -> None:
    for failures in range(1, MAX_FAILURES):
        attempt = next_attempt(failures, NOW)
        assert attempt == Attempt(failures, NOW + delay_ms(failures))
        assert not attempt.quarantined


def test_the_fifth_failure_in_a_row_quarantines() -> None:
    assert MAX_FAILURES == 5
    attempt = next_attempt(MAX_FAILURES, NOW)
    assert attempt == Attempt(MAX_FAILURES, None)
    assert attempt.quarantined
    # A count past the limit (an item quarantined and put back, failing on) stays quarantined.
    assert next_attempt(MAX_FAILURES + 3, NOW).quarantined


def test_each_retry_comes_later_than_the_one_before() -> None:
    """An item failing at each try, tried at the time its last failure gave: every retry is
    further off, so the items due meanwhile go first."""
    now, gaps = NOW, []
    for failures in range(1, MAX_FAILURES):
        retry_at = next_attempt(failures, now).retry_at_ms
        assert retry_at is not None
        gaps.append(retry_at - now)
        now = retry_at
    assert gaps == sorted(gaps) and len(set(gaps)) == len(gaps)
    # Quarantined about a quarter of an hour after its first failure.
    assert now - NOW == 15 * MINUTE
