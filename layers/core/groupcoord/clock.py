"""The server's one clock: milliseconds since the epoch. Requests take their `now` from it when
they arrive (ApiContext.now_ms) and long-running ones (a held barrier, an install, a staged
conversion's lease) read it again; the pure core never reads it (the caller passes `now`).

`use` swaps the source in this process (a test's controlled clock); `serve` and Lambda run on
the system clock, shifted (`shifted`, around each request and sweep) by a deployment's
`groupcoord.fault.clock.offset.ms`: a fault test's clock that disagrees with the others'."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def system_ms() -> int:
    return time.time_ns() // 1_000_000


_source: Callable[[], int] = system_ms
_offset: contextvars.ContextVar[int] = contextvars.ContextVar("clock_offset_ms", default=0)


def now_ms() -> int:
    return _source() + _offset.get()


@contextmanager
def shifted(offset_ms: int) -> Iterator[None]:
    """In this block (this thread, this context), the clock reads `offset_ms` more."""
    token = _offset.set(offset_ms)
    try:
        yield
    finally:
        _offset.reset(token)


@contextmanager
def use(source: Callable[[], int]) -> Iterator[None]:
    """Read the time from `source` until the block ends."""
    global _source
    saved, _source = _source, source
    try:
        yield
    finally:
        _source = saved
