"""The one retry loop (groupcoord/retries.py) and the requests' policy over it
(service/races.retry_on_race): lost races pause and try again, a decision to confirm tries
again at once, and a run of lost races ends in the caller's answer."""

from __future__ import annotations

import pytest

from groupcoord.retries import TryAgain, retry
from groupcoord.service.races import DecideAgain, GroupBusy, retry_on_race
from groupcoord.store.errors import Conflict


class Paused:
    def __init__(self) -> None:
        self.pauses: list[float] = []

    def now_ms(self) -> int:
        return 0

    def monotonic_s(self) -> float:
        return 0.0

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)


def test_a_lost_race_pauses_and_a_decision_to_confirm_does_not() -> None:
    seen: list[int] = []

    def attempt(n: int) -> str:
        seen.append(n)
        if n == 0:
            raise DecideAgain()
        if n == 1:
            raise Conflict("g")
        return "done"

    clock = Paused()
    assert retry_on_race(clock, attempt) == "done"
    assert seen == [0, 1, 2]
    assert len(clock.pauses) == 1


def test_without_pauses_a_bounded_run_ends_in_the_callers_answer() -> None:
    def attempt(_: int) -> str:
        raise Conflict("g")

    clock = Paused()
    assert retry_on_race(clock, attempt, attempts=3, pause=False, busy=lambda: "busy") == "busy"
    assert clock.pauses == []
    with pytest.raises(GroupBusy):
        retry_on_race(clock, attempt, attempts=2, pause=False)


def test_the_store_loop_retries_what_it_is_told_to_and_passes_anything_else() -> None:
    calls: list[int] = []

    def attempt(n: int) -> int:
        calls.append(n)
        if n < 2:
            raise TryAgain()
        return n

    assert retry(attempt, lost=(), attempts=3, exhausted=lambda: -1) == 2
    assert retry(lambda n: (_ for _ in ()).throw(TryAgain()), lost=(), attempts=2,
                 exhausted=lambda: -1) == -1  # fmt: skip
    with pytest.raises(ValueError):
        retry(lambda n: int("x"), lost=(Conflict,), attempts=3, exhausted=lambda: -1)
