"""A clock the test controls (groupcoord/clock.py's port): wall time and monotonic time move
together, only when the test advances them or when code sleeps on the clock, so a timer test
asserts exact deadlines and never waits."""

from __future__ import annotations

import threading
import time


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


class JumpClock:
    """The system's time plus what the test jumps it by: for a coordinator that black-box
    tests drive over HTTP while its own waits (a held barrier, a pause) pass in real time. A
    test jumps past a timer instead of sleeping through it."""

    def __init__(self) -> None:
        self._offset_ms = 0
        self._lock = threading.Lock()

    def now_ms(self) -> int:
        with self._lock:
            return time.time_ns() // 1_000_000 + self._offset_ms

    def monotonic_s(self) -> float:
        with self._lock:
            return time.monotonic() + self._offset_ms / 1000

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def jump(self, ms: int) -> None:
        with self._lock:
            self._offset_ms += ms
