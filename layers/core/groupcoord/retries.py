"""The one loop of every read-decide-write that may lose a race to a concurrent writer
(service/races.py's policy for requests, the store's own conditional writes): try, and on a
lost race (one of `lost`) pause and try again, a bounded number of times."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class TryAgain(Exception):
    """An attempt decided on a read it must confirm: try again at once, without a pause."""


def retry(
    attempt: Callable[[int], T],
    *,
    lost: tuple[type[Exception], ...],
    attempts: int,
    exhausted: Callable[[], T],
    pause: Callable[[int], None] | None = None,
) -> T:
    """`attempt(n)` (n counts from 0) until it returns; a lost race (`lost`) pauses
    (`pause(n)`, if given) and tries again, TryAgain tries again at once. After `attempts`,
    `exhausted()`'s answer (or what it raises)."""
    for n in range(attempts):
        try:
            return attempt(n)
        except TryAgain:
            continue
        except lost:
            if pause is not None:
                pause(n)
    return exhausted()
