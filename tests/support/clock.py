"""A clock the test controls (groupcoord/clock.py's port): wall time and monotonic time move
together, only when the test advances them or when code sleeps on the clock, so a timer test
asserts exact deadlines and never waits."""

from __future__ import annotations

import threading


class FakeClock:
    def __init__(self, start_ms: int = 1_000_000_000) -> None:
        self._ms = start_ms
        self._lock = threading.Lock()
        self.slept_s = 0.0  # everything code slept on this clock, for the tests that care

    def now_ms(self) -> int:
        with self._lock:
            return self._ms

    def monotonic_s(self) -> float:
        return self.now_ms() / 1000

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.slept_s += seconds
        self.advance(max(0, round(seconds * 1000)))

    def advance(self, ms: int) -> None:
        with self._lock:
            self._ms += ms
