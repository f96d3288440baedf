"""The server's one clock (docs/architecture.md, "Time"): wall-clock milliseconds since the epoch
for deadlines, a monotonic clock for waits, and sleep. Requests take their `now` from it when
they arrive (ApiContext.now_ms); long-running ones (a held barrier, an install, a staged
conversion's lease, a pause after a lost race) read it again or sleep on it through their
context (ApiContext.clock, Store.clock); the pure core never reads it (the caller passes `now`).

`Clock` is the port. `SYSTEM` is the system's, shifted (`shifted`, around each request and
sweep) by a deployment's `groupcoord.fault.clock.offset.ms`: a fault test's clock that disagrees
with the others'. A test hands the store a clock of its own (tests/support/clock.py's
FakeClock: time moves when the test says so, or when code sleeps on it), or swaps the source
of SYSTEM's wall clock in this process with `use`."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock ms since the epoch: what deadlines are written and judged in."""
        ...

    def monotonic_s(self) -> float:
        """Seconds that only grow: for how long a wait has lasted."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let `seconds` pass."""
        ...


def system_ms() -> int:
    return time.time_ns() // 1_000_000


_source: Callable[[], int] = system_ms
_offset: contextvars.ContextVar[int] = contextvars.ContextVar("clock_offset_ms", default=0)


def now_ms() -> int:
    """SYSTEM's wall clock: the source (`use`) plus this context's offset (`shifted`)."""
    return _source() + _offset.get()


class SystemClock:
    """The machine's time."""

    def now_ms(self) -> int:
        return now_ms()

    def monotonic_s(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM: Clock = SystemClock()


@contextmanager
def shifted(offset_ms: int) -> Iterator[None]:
    """In this block (this thread, this context), SYSTEM's wall clock reads `offset_ms` more."""
    token = _offset.set(offset_ms)
    try:
        yield
    finally:
        _offset.reset(token)


@contextmanager
def use(source: Callable[[], int]) -> Iterator[None]:
    """Read SYSTEM's wall-clock time from `source` until the block ends."""
    global _source
    saved, _source = _source, source
    try:
        yield
    finally:
        _source = saved
