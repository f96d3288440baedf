"""What a request does when it loses a race: the store refused its write because someone changed
the group (or member, topic, offsets' fence) since it was read (store.errors.Conflict, or one of
its kinds). It reads again and decides again, after a short random pause, at most
RACE_ATTEMPTS times; then the group is busy (GroupBusy), which each API answers with its
retriable error. One policy for every API: `retry_on_race`."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TypeVar

from ..clock import Clock
from ..retries import TryAgain, retry
from ..store.errors import Conflict

RACE_ATTEMPTS = 12
# The pause grows with the attempt (full jitter): requests that collided on one version would
# otherwise collide again. Capped so that twelve attempts stay well under a second on average.
_FIRST_PAUSE_S = 0.005
_MAX_PAUSE_S = 0.1

T = TypeVar("T")


class GroupBusy(Exception):
    """The group kept changing under a request for RACE_ATTEMPTS attempts."""


class DecideAgain(TryAgain):
    """An attempt decided on a read it must confirm (an eventually consistent one): try again
    at once, on consistent reads; not a lost race, so no pause."""


def back_off(clock: Clock, attempt: int) -> None:
    """Pause (on the request's clock) before attempt `attempt + 1`."""
    clock.sleep(random.uniform(0, min(_MAX_PAUSE_S, _FIRST_PAUSE_S * 2**attempt)))


def retry_on_race(
    clock: Clock,
    attempt: Callable[[int], T],
    *,
    lost: tuple[type[Exception], ...] = (Conflict,),
    busy: Callable[[], T] | None = None,
    attempts: int = RACE_ATTEMPTS,
    pause: bool = True,
) -> T:
    """`attempt(n)` (read, decide, write; n counts from 0) until it does not lose a race: a
    lost race (one of `lost`) pauses (unless not `pause`: a best-effort write that re-reads
    at once) and tries again, DecideAgain tries again at once. After `attempts` lost in a
    row, `busy()`'s answer, or GroupBusy."""

    def exhausted() -> T:
        if busy is None:
            raise GroupBusy()
        return busy()

    return retry(
        attempt,
        lost=lost,
        attempts=attempts,
        exhausted=exhausted,
        pause=(lambda n: back_off(clock, n)) if pause else None,
    )
