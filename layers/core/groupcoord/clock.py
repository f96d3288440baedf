"""The server's one clock: milliseconds since the epoch. Requests take their `now` from it when
they arrive (ApiContext.now_ms) and long-running ones (a held barrier, an install, a staged
conversion's lease) read it again; the pure core never reads it (the caller passes `now`).

`use` swaps the source in this process (a test's controlled clock); `serve` and Lambda always
run on the system clock."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def system_ms() -> int:
    return time.time_ns() // 1_000_000


_source: Callable[[], int] = system_ms


def now_ms() -> int:
    return _source()


@contextmanager
def use(source: Callable[[], int]) -> Iterator[None]:
    """Read the time from `source` until the block ends."""
    global _source
    saved, _source = _source, source
    try:
        yield
    finally:
        _source = saved
