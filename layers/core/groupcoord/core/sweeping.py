"""What the sweeper does with an item whose completion failed: when it tries again, and when it
gives up and quarantines the item.

A failed item goes back in the deadline index later, behind the items due before its new
deadline, so that an item that fails every time cannot hold the others up; the delay doubles
with each failure in a row. After MAX_FAILURES failures in a row the item is quarantined: it
keeps its data and leaves the sweeper's due range until an operator puts it back.
"""

from __future__ import annotations

from dataclasses import dataclass

# Five failures in a row take about a quarter of an hour of sweeps (1 + 2 + 4 + 8 minutes of
# delays): long enough to outlast a throttled table or a deployment, short enough to page
# while the cause is fresh.
MAX_FAILURES = 5
FIRST_DELAY_MS = 60_000  # the sweeper runs every minute: the first retry is a run or two later
MAX_DELAY_MS = 3_600_000


@dataclass(frozen=True)
class Attempt:
    """What follows the `failures`-th failure in a row of an item: its next try at
    `retry_at_ms`, or quarantine (`retry_at_ms` None)."""

    failures: int
    retry_at_ms: int | None

    @property
    def quarantined(self) -> bool:
        return self.retry_at_ms is None


def delay_ms(failures: int) -> int:
    """The wait after the `failures`-th failure in a row: 1, 2, 4, ... minutes, at most an
    hour."""
    if failures < 1:
        raise ValueError(f"failures must be at least 1, not {failures}")
    # The exponent is capped so that a large count never builds a huge integer.
    return min(FIRST_DELAY_MS << min(failures - 1, 32), MAX_DELAY_MS)


def next_attempt(failures: int, now_ms: int) -> Attempt:
    """After the `failures`-th failure in a row (this one included) at `now_ms`."""
    if failures >= MAX_FAILURES:
        return Attempt(failures, None)
    return Attempt(failures, now_ms + delay_ms(failures))
